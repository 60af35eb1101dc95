import Foundation

/// Fast conversions between `UUID` and its canonical 36-character string.
///
/// Foundation's `uuidString` costs several hundred nanoseconds on Linux,
/// which is a large share of encoding a small record; these do the same work
/// with one allocation.
enum UUIDFormatting {
    private static let hexDigits: StaticString = "0123456789ABCDEF"

    /// The upper-case string form, `E621E1F8-C36C-495A-93FC-0C247A3E6E5F`.
    static func string(_ uuid: UUID) -> String {
        let u = uuid.uuid
        return withUnsafeBytes(of: u) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                let hex = hexDigits.utf8Start
                var o = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[o] = UInt8(ascii: "-")
                        o += 1
                    }
                    let byte = raw[i]
                    out[o] = hex[Int(byte >> 4)]
                    out[o + 1] = hex[Int(byte & 0x0F)]
                    o += 2
                }
                return 36
            }
        }
    }

    /// Parses the canonical form in either case; `nil` for anything else.
    static func parse(_ string: String) -> UUID? {
        var string = string
        return string.withUTF8 { utf8 -> UUID? in
            guard utf8.count == 36 else { return nil }
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let ok = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var i = 0
                for b in 0..<16 {
                    if i == 8 || i == 13 || i == 18 || i == 23 {
                        guard utf8[i] == UInt8(ascii: "-") else { return false }
                        i += 1
                    }
                    guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return false }
                    out[b] = hi << 4 | lo
                    i += 2
                }
                return true
            }
            return ok ? UUID(uuid: bytes) : nil
        }
    }

    @inline(__always)
    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c &- UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c &- UInt8(ascii: "A") &+ 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c &- UInt8(ascii: "a") &+ 10
        default: nil
        }
    }
}
