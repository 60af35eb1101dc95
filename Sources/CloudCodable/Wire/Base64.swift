import Foundation

/// Standard base64 (RFC 4648 §4, alphabet `A–Z a–z 0–9 + /`), the encoding of
/// `BYTES` values on the wire. Table-driven, no Foundation on the hot path.
enum Base64 {
    /// The 64 characters of the alphabet, indexed by 6-bit value. A static
    /// string so that reading it needs no lazy initialisation.
    private static let alphabet: StaticString =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// The 6-bit value of each byte, or `0xFF` for bytes outside the alphabet.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        alphabet.withUTF8Buffer { letters in
            for (value, letter) in letters.enumerated() { table[Int(letter)] = UInt8(value) }
        }
        return table
    }()

    private static let padding = UInt8(ascii: "=")

    /// The number of characters that encoding `n` bytes takes, padding included.
    @inline(__always)
    static func encodedCount(_ n: Int) -> Int {
        (n + 2) / 3 * 4
    }

    /// The base64 text of `data`, padded.
    static func encodeToString(_ data: Data) -> String {
        let count = encodedCount(data.count)
        guard count > 0 else { return "" }
        return String(
            unsafeUninitializedCapacity: count,
            initializingUTF8With: { buffer in
                data.withUnsafeBytes { encode($0, to: buffer.baseAddress!) }
                return count
            })
    }

    /// Writes exactly `encodedCount(input.count)` characters at `output`.
    static func encode(_ input: UnsafeRawBufferPointer, to output: UnsafeMutablePointer<UInt8>) {
        guard let source = input.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        let letters = alphabet.utf8Start
        let n = input.count
        var i = 0
        var o = 0
        while i &+ 3 <= n {
            let word = UInt32(source[i]) << 16 | UInt32(source[i &+ 1]) << 8 | UInt32(source[i &+ 2])
            // The four characters, stored at once.
            let a = UInt32(letters[Int(word >> 18)])
            let b = UInt32(letters[Int(word >> 12 & 0x3F)])
            let c = UInt32(letters[Int(word >> 6 & 0x3F)])
            let d = UInt32(letters[Int(word & 0x3F)])
            UnsafeMutableRawPointer(output + o).storeBytes(
                of: (a | b << 8 | c << 16 | d << 24).littleEndian, as: UInt32.self)
            i &+= 3
            o &+= 4
        }
        switch n - i {
        case 1:
            let word = UInt32(source[i]) << 16
            output[o] = letters[Int(word >> 18)]
            output[o + 1] = letters[Int(word >> 12 & 0x3F)]
            output[o + 2] = padding
            output[o + 3] = padding
        case 2:
            let word = UInt32(source[i]) << 16 | UInt32(source[i + 1]) << 8
            output[o] = letters[Int(word >> 18)]
            output[o + 1] = letters[Int(word >> 12 & 0x3F)]
            output[o + 2] = letters[Int(word >> 6 & 0x3F)]
            output[o + 3] = padding
        default:
            break
        }
    }

    /// The number of bytes `input` decodes to, or `nil` when its length or
    /// padding cannot be base64. Checks only the shape, not the characters.
    @inline(__always)
    static func decodedCount(_ input: UnsafeBufferPointer<UInt8>) -> Int? {
        var n = input.count
        if n % 4 == 0, n > 0, input[n - 1] == padding {
            n -= input[n - 2] == padding ? 2 : 1
        }
        switch n % 4 {
        case 0: return n / 4 * 3
        case 2: return n / 4 * 3 + 1
        case 3: return n / 4 * 3 + 2
        default: return nil
        }
    }

    /// Decodes standard base64, padded or unpadded. Returns `nil` for any
    /// other input: characters outside the alphabet (whitespace included),
    /// misplaced or excess padding, an impossible length, or non-zero bits
    /// after the last byte (so only the canonical text of each byte string is
    /// accepted).
    static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard let count = decodedCount(input) else { return nil }
        var ok = true
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            ok = decode(input, to: buffer.baseAddress, count: count)
            initialized = ok ? count : 0
        }
        return ok ? bytes : nil
    }

    /// Like ``decode(_:)`` but appending to `bytes`; `false`, with `bytes`
    /// unchanged, for input that is not base64.
    static func decode(_ input: UnsafeBufferPointer<UInt8>, appendingTo bytes: inout [UInt8]) -> Bool {
        guard let count = decodedCount(input) else { return false }
        guard count > 0 else { return true }
        if count <= 1024 {
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
                guard decode(input, to: buffer.baseAddress, count: count) else { return false }
                bytes.append(contentsOf: UnsafeBufferPointer(buffer))
                return true
            }
        }
        guard let decoded = decode(input) else { return false }
        bytes.append(contentsOf: decoded)
        return true
    }

    /// Like ``decode(_:)`` but into `Data`.
    static func decodeData(_ input: UnsafeBufferPointer<UInt8>) -> Data? {
        guard let count = decodedCount(input) else { return nil }
        if count == 0 { return Data() }
        // Decoding on the stack and copying once is much faster than writing
        // into `Data(count:)`; large values are decoded into memory that the
        // `Data` then owns.
        if count <= 1024 {
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
                decode(input, to: buffer.baseAddress, count: count)
                    ? Data(bytes: buffer.baseAddress!, count: count) : nil
            }
        }
        guard let memory = malloc(count)?.assumingMemoryBound(to: UInt8.self) else { return nil }
        guard decode(input, to: memory, count: count) else {
            free(memory)
            return nil
        }
        return Data(bytesNoCopy: memory, count: count, deallocator: .free)
    }

    /// Whether `input` is base64 that ``decode(_:)`` accepts, without
    /// decoding it.
    static func isValid(_ input: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let count = decodedCount(input) else { return false }
        guard count > 0 else { return true }
        return decodeTable.withUnsafeBufferPointer { table in
            let fullGroups = count / 3
            var bad: UInt8 = 0
            var i = 0
            for _ in 0..<fullGroups {
                bad |=
                    table[Int(input[i])] | table[Int(input[i + 1])] | table[Int(input[i + 2])]
                    | table[Int(input[i + 3])]
                i += 4
            }
            switch count - fullGroups * 3 {
            case 1:
                let b = table[Int(input[i + 1])]
                bad |= table[Int(input[i])] | b
                if b & 0x0F != 0 { return false }
            case 2:
                let c = table[Int(input[i + 2])]
                bad |= table[Int(input[i])] | table[Int(input[i + 1])] | c
                if c & 0x03 != 0 { return false }
            default:
                break
            }
            // Every table entry of the alphabet is below 64; 0xFF marks the rest.
            return bad & 0xC0 == 0
        }
    }

    /// Decodes into `output`, which holds `count` bytes (from `decodedCount`).
    private static func decode(
        _ input: UnsafeBufferPointer<UInt8>, to output: UnsafeMutablePointer<UInt8>?, count: Int
    ) -> Bool {
        guard count > 0, let output else { return true }
        return decodeTable.withUnsafeBufferPointer { table in
            let fullGroups = count / 3
            var i = 0
            var o = 0
            var bad: UInt32 = 0
            guard let text = input.baseAddress, let table = table.baseAddress else { return false }
            for _ in 0..<fullGroups {
                let a = UInt32(table[Int(text[i])])
                let b = UInt32(table[Int(text[i &+ 1])])
                let c = UInt32(table[Int(text[i &+ 2])])
                let d = UInt32(table[Int(text[i &+ 3])])
                bad |= a | b | c | d
                let word = a << 18 | b << 12 | c << 6 | d
                output[o] = UInt8(truncatingIfNeeded: word >> 16)
                output[o &+ 1] = UInt8(truncatingIfNeeded: word >> 8)
                output[o &+ 2] = UInt8(truncatingIfNeeded: word)
                i &+= 4
                o &+= 3
            }
            switch count - o {
            case 1:
                let a = UInt32(table[Int(input[i])])
                let b = UInt32(table[Int(input[i + 1])])
                bad |= a | b
                if b & 0x0F != 0 { return false }
                output[o] = UInt8(truncatingIfNeeded: (a << 2) | (b >> 4))
            case 2:
                let a = UInt32(table[Int(input[i])])
                let b = UInt32(table[Int(input[i + 1])])
                let c = UInt32(table[Int(input[i + 2])])
                bad |= a | b | c
                if c & 0x03 != 0 { return false }
                let word = a << 18 | b << 12 | c << 6
                output[o] = UInt8(truncatingIfNeeded: word >> 16)
                output[o + 1] = UInt8(truncatingIfNeeded: word >> 8)
            default:
                break
            }
            // Every table entry of the alphabet is below 64; 0xFF marks the rest.
            return bad & 0xC0 == 0
        }
    }
}
