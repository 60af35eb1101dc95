/// Byte-level facts about JSON text shared by the writer, the size counter and
/// the readers: which bytes a string must escape, how long numbers are.
enum JSONText {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")

    /// Whether a string byte must be escaped: `"`, `\` and the controls below 0x20.
    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == quote || byte == backslash
    }

    /// Whether any of the eight bytes in `word` is `"`, `\` or below 0x20.
    /// Exact (no false positives) whatever the other bytes hold.
    @inline(__always)
    static func wordNeedsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22)
        let backslashes = word ^ (ones &* 0x5C)
        let hasQuote = (quotes &- ones) & ~quotes
        let hasBackslash = (backslashes &- ones) & ~backslashes
        let hasControl = (word &- ones &* 0x20) & ~word
        return (hasQuote | hasBackslash | hasControl) & highs != 0
    }

    /// The index of the first byte of `text` that needs escaping, or
    /// `text.count` when there is none. Looks at eight bytes at a time.
    @inline(__always)
    static func firstEscapeIndex(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = text.baseAddress else { return 0 }
        let count = text.count
        var i = 0
        let raw = UnsafeRawPointer(base)
        while i + 8 <= count {
            if wordNeedsEscape(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { break }
            i += 8
        }
        while i < count, !needsEscape(base[i]) { i += 1 }
        return i
    }

    /// The length of the escape the writer uses for `byte` (which needs one):
    /// two for the short forms, six for `\u00XX`.
    @inline(__always)
    static func escapeLength(_ byte: UInt8) -> Int {
        switch byte {
        case quote, backslash, 0x08, 0x09, 0x0A, 0x0C, 0x0D: 2
        default: 6
        }
    }

    /// The number of bytes `text` takes inside the quotes once escaped.
    static func escapedLength(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        var i = firstEscapeIndex(text)
        var length = i
        while i < text.count {
            let byte = text[i]
            length += needsEscape(byte) ? escapeLength(byte) : 1
            i += 1
        }
        return length
    }

    /// The number of bytes `string` takes as a JSON string, quotes included.
    @inline(__always)
    static func quotedLength(_ string: String) -> Int {
        if let length = string.utf8.withContiguousStorageIfAvailable(escapedLength) {
            return length + 2
        }
        var copy = string
        return copy.withUTF8(escapedLength) + 2
    }

    /// The number of decimal digits of `value`.
    @inline(__always)
    static func digitCount(_ value: UInt64) -> Int {
        var count = 1
        var rest = value
        while rest >= 10_000 {
            rest /= 10_000
            count += 4
        }
        if rest >= 10 { count += 1 }
        if rest >= 100 { count += 1 }
        if rest >= 1000 { count += 1 }
        return count
    }

    /// Writes the `count` decimal digits of `value` at `target`, two at a
    /// time from the right.
    @inline(__always)
    static func writeDigits(_ value: UInt64, count: Int, to target: UnsafeMutablePointer<UInt8>) {
        let pairs: StaticString = """
            0001020304050607080910111213141516171819\
            2021222324252627282930313233343536373839\
            4041424344454647484950515253545556575859\
            6061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899
            """
        let digits = pairs.utf8Start
        var i = count
        var rest = value
        while rest >= 100 {
            let (quotient, remainder) = rest.quotientAndRemainder(dividingBy: 100)
            let pair = Int(truncatingIfNeeded: remainder) &* 2
            i &-= 2
            target[i] = digits[pair]
            target[i &+ 1] = digits[pair &+ 1]
            rest = quotient
        }
        if rest >= 10 {
            let pair = Int(truncatingIfNeeded: rest) &* 2
            target[i &- 2] = digits[pair]
            target[i &- 1] = digits[pair &+ 1]
        } else {
            target[i &- 1] = UInt8(truncatingIfNeeded: rest) &+ UInt8(ascii: "0")
        }
    }

    /// The lower-case hex digit of `nibble` (0–15).
    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ UInt8(ascii: "0") : nibble &- 10 &+ UInt8(ascii: "a")
    }

    /// The number of bytes `value` takes as a JSON integer.
    @inline(__always)
    static func integerLength(_ value: Int64) -> Int {
        value < 0 ? digitCount(value.magnitude) + 1 : digitCount(UInt64(value))
    }

    /// The number of bytes the writer uses for `value`: its shortest
    /// round-trip text, or 4 (`null`) when it is not finite. No allocation.
    @inline(__always)
    static func doubleLength(_ value: Double) -> Int {
        guard value.isFinite else { return 4 }
        var counter = ASCIICounter()
        value.write(to: &counter)
        return counter.count
    }
}

/// A text stream that only counts bytes. The standard library prints floating
/// point numbers into a stack buffer and hands it to `_writeASCII`, so counting
/// a number's text this way allocates nothing.
struct ASCIICounter: TextOutputStream {
    var count = 0

    mutating func write(_ string: String) { count += string.utf8.count }

    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) { count += buffer.count }
}
