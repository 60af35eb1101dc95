/// Strict UTF-8 validation (Unicode Table 3-7: no overlong forms, no
/// surrogates, nothing above U+10FFFF), with an eight-bytes-at-a-time path
/// for ASCII. Validated bytes become a `String` without any repair.
enum UTF8Validation {
    /// The index of the first byte of `text` that does not start a valid
    /// sequence, or `nil` when all of `text` is valid UTF-8.
    static func firstInvalidIndex(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = text.baseAddress else { return nil }
        let count = text.count
        let raw = UnsafeRawPointer(base)
        var i = 0
        while i < count {
            while i + 8 <= count,
                raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0
            {
                i += 8
            }
            guard i < count else { return nil }
            let lead = base[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF:
                length = 2
            case 0xE0:
                length = 3
                low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF:
                length = 3
            case 0xED:
                length = 3
                high = 0x9F
            case 0xF0:
                length = 4
                low = 0x90
            case 0xF1...0xF3:
                length = 4
            case 0xF4:
                length = 4
                high = 0x8F
            default:
                return i
            }
            guard i + length <= count else { return i }
            let second = base[i + 1]
            guard second >= low, second <= high else { return i }
            for k in 2..<length where base[i + k] & 0xC0 != 0x80 {
                return i
            }
            i += length
        }
        return nil
    }

    /// Appends the UTF-8 form of `scalar` (which is a valid scalar value).
    @inline(__always)
    static func append(_ scalar: UInt32, to bytes: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            bytes.append(UInt8(truncatingIfNeeded: scalar))
        case 0x80..<0x800:
            bytes.append(UInt8(truncatingIfNeeded: 0xC0 | scalar >> 6))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            bytes.append(UInt8(truncatingIfNeeded: 0xE0 | scalar >> 12))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
        default:
            bytes.append(UInt8(truncatingIfNeeded: 0xF0 | scalar >> 18))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 12 & 0x3F))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F))
            bytes.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
        }
    }
}
