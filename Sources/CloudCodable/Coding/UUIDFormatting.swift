import Foundation

/// Fast conversions between `UUID` and its canonical 36-character string.
///
/// Foundation's `uuidString` costs several hundred nanoseconds on Linux,
/// which is a large share of encoding a small record; these do the same work
/// with one allocation.
enum UUIDFormatting {
    /// The two upper-case hex digits of every byte value, in order.
    private static let hexPairs: StaticString = """
        000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F\
        202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F\
        404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F\
        606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F\
        808182838485868788898A8B8C8D8E8F909192939495969798999A9B9C9D9E9F\
        A0A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBF\
        C0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDF\
        E0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF
        """

    /// The length of the string form.
    static var length: Int { 36 }

    /// The upper-case string form, `E621E1F8-C36C-495A-93FC-0C247A3E6E5F`.
    static func string(_ uuid: UUID) -> String {
        String(unsafeUninitializedCapacity: length) { out in
            write(uuid, to: out.baseAddress!)
            return length
        }
    }

    /// The upper-case string form, reusing `candidate` when it already is
    /// exactly that text (a model's `id` is usually also its record name),
    /// which saves allocating a second copy.
    @inline(__always)
    static func string(_ uuid: UUID, reusing candidate: String?) -> String {
        guard let candidate, candidate.utf8.count == length else { return string(uuid) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { buffer in
            let text = buffer.baseAddress!
            write(uuid, to: text)
            let same = candidate.utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, text, length) == 0 }
            if same == true { return candidate }
            return String(unsafeUninitializedCapacity: length) { out in
                out.baseAddress!.initialize(from: text, count: length)
                return length
            }
        }
    }

    /// Writes the 36 characters of the upper-case form at `out`.
    @inline(__always)
    static func write(_ uuid: UUID, to out: UnsafeMutablePointer<UInt8>) {
        withUnsafeBytes(of: uuid.uuid) { raw in
            let pairs = UnsafeRawPointer(hexPairs.utf8Start)
            var o = 0
            for i in 0..<16 {
                if i == 4 || i == 6 || i == 8 || i == 10 {
                    out[o] = UInt8(ascii: "-")
                    o &+= 1
                }
                let pair = pairs.loadUnaligned(fromByteOffset: Int(raw[i]) &* 2, as: UInt16.self)
                UnsafeMutableRawPointer(out + o).storeBytes(of: pair, as: UInt16.self)
                o &+= 2
            }
        }
    }

    /// Parses the canonical form in either case; `nil` for anything else.
    static func parse(_ string: String) -> UUID? {
        var string = string
        return string.withUTF8(parse)
    }

    /// Parses the canonical form in either case from UTF-8; `nil` for anything else.
    static func parse(_ utf8: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard utf8.count == 36, let text = utf8.baseAddress,
            text[8] == UInt8(ascii: "-"), text[13] == UInt8(ascii: "-"), text[18] == UInt8(ascii: "-"),
            text[23] == UInt8(ascii: "-")
        else { return nil }
        var bad: UInt8 = 0
        // Sixteen digits into each half, skipping the dashes.
        @inline(__always)
        func digits(_ ranges: (Int, Int, Int, Int, Int, Int)) -> UInt64 {
            var value: UInt64 = 0
            var i = ranges.0
            while i < ranges.1 {
                let n = nibble(text[i])
                bad |= n
                value = value << 4 | UInt64(n & 0x0F)
                i &+= 1
            }
            i = ranges.2
            while i < ranges.3 {
                let n = nibble(text[i])
                bad |= n
                value = value << 4 | UInt64(n & 0x0F)
                i &+= 1
            }
            i = ranges.4
            while i < ranges.5 {
                let n = nibble(text[i])
                bad |= n
                value = value << 4 | UInt64(n & 0x0F)
                i &+= 1
            }
            return value
        }
        let high = digits((0, 8, 9, 13, 14, 18)).bigEndian
        let low = digits((19, 23, 24, 36, 36, 36)).bigEndian
        guard bad & 0xF0 == 0 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { out in
            out.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            out.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
        }
        return UUID(uuid: bytes)
    }

    /// The value of a hex digit in either case, or a value above 15.
    @inline(__always)
    private static func nibble(_ c: UInt8) -> UInt8 {
        let digit = c &- UInt8(ascii: "0")
        if digit < 10 { return digit }
        let letter = (c | 0x20) &- UInt8(ascii: "a")
        return letter < 6 ? letter &+ 10 : 0xFF
    }
}
