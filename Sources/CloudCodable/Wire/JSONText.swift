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

    /// The high bit of each byte of `word` that is `"`, `\` or below 0x20,
    /// and no other bit. Exact for every byte (no borrow crosses from one
    /// byte to the next), so the bits can be counted and located; `word`
    /// holds the first byte of the text in its lowest byte (see
    /// ``loadWord(_:at:)``) for locating them.
    @inline(__always)
    static func escapeMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        return controlMask(word) | zeroBytes(word ^ (ones &* 0x22)) | zeroBytes(word ^ (ones &* 0x5C))
    }

    /// The high bit of each byte of `word` below 0x20.
    @inline(__always)
    static func controlMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        // A byte's low seven bits plus 0x60 reach the high bit exactly when
        // they are at least 0x20, and never carry out (0x7F + 0x60 < 0x100).
        return ~((word & lows) &+ ones &* 0x60) & ~word & ~lows
    }

    /// The high bit of each zero byte of `word`.
    @inline(__always)
    static func zeroBytes(_ word: UInt64) -> UInt64 {
        let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        return ~(((word & lows) &+ lows) | word) & ~lows
    }

    /// The high bit of each byte of `word` that is a control with a
    /// two-byte escape (`\b`, `\t`, `\n`, `\f`, `\r`: 0x08–0x0D but 0x0B).
    @inline(__always)
    static func shortControlMask(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let lows: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        let low = word & lows
        // At least 0x08 and not at least 0x0E, as above.
        let inRange = (low &+ ones &* 0x78) & ~(low &+ ones &* 0x72) & ~word & ~lows
        return inRange & ~zeroBytes(word ^ (ones &* 0x0B))
    }

    /// How many bytes escaping adds to the bytes of `word` whose high bits
    /// are in `mask` (a part of ``escapeMask(_:)``).
    @inline(__always)
    static func escapeExtra(_ word: UInt64, mask: UInt64) -> Int {
        var extra = mask.nonzeroBitCount
        let controls = controlMask(word) & mask
        if controls != 0 {
            // `\u00XX` takes six bytes, four more than the two-byte escapes.
            extra &+= (controls & ~shortControlMask(word)).nonzeroBitCount &* 4
        }
        return extra
    }

    /// The eight bytes at `offset`, the first in the lowest byte whatever
    /// the platform's byte order.
    @inline(__always)
    static func loadWord(_ base: UnsafeRawPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The index of the first byte of `text` that needs escaping, or
    /// `text.count` when there is none. Looks at eight bytes at a time.
    @inline(__always)
    static func firstEscapeIndex(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = text.baseAddress else { return 0 }
        let count = text.count
        var i = 0
        let raw = UnsafeRawPointer(base)
        while i &+ 8 <= count {
            let word = loadWord(raw, at: i)
            if wordNeedsEscape(word) { return i &+ escapeMask(word).trailingZeroBitCount >> 3 }
            i &+= 8
        }
        while i < count, !needsEscape(base[i]) { i &+= 1 }
        return i
    }

    /// Whether none of the `count` (at most 16) bytes at `text` needs escaping.
    @inline(__always)
    static func isShortTextClean(_ text: UnsafePointer<UInt8>, count: Int) -> Bool {
        let raw = UnsafeRawPointer(text)
        if count >= 8 {
            // Two words that overlap when there are fewer than 16 bytes.
            return !wordNeedsEscape(raw.loadUnaligned(as: UInt64.self))
                && !wordNeedsEscape(raw.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self))
        }
        var i = 0
        while i < count {
            if needsEscape(text[i]) { return false }
            i &+= 1
        }
        return true
    }

    /// Copies `count` (at most 16) bytes, in at most two overlapping words.
    @inline(__always)
    static func copyShortText(_ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(target)
        if count >= 8 {
            let head = from.loadUnaligned(as: UInt64.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count &- 8, as: UInt64.self)
        } else if count >= 4 {
            let head = from.loadUnaligned(as: UInt32.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: count &- 4, as: UInt32.self)
        } else {
            var i = 0
            while i < count {
                target[i] = source[i]
                i &+= 1
            }
        }
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
    /// Eight bytes at a time: a word without escapes costs a few operations,
    /// one with escapes a few more to count them.
    static func escapedLength(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = text.baseAddress else { return 0 }
        let raw = UnsafeRawPointer(base)
        let count = text.count
        var extra = 0
        var i = 0
        // Two words a round; a word with escapes costs a few more operations.
        while i &+ 16 <= count {
            let first = loadWord(raw, at: i)
            let second = loadWord(raw, at: i &+ 8)
            if wordNeedsEscape(first) { extra &+= escapeExtra(first, mask: escapeMask(first)) }
            if wordNeedsEscape(second) { extra &+= escapeExtra(second, mask: escapeMask(second)) }
            i &+= 16
        }
        if i &+ 8 <= count {
            let word = loadWord(raw, at: i)
            extra &+= escapeExtra(word, mask: escapeMask(word))
            i &+= 8
        }
        let rest = count &- i
        if rest > 0 {
            if count >= 8 {
                // The last eight bytes, of which the first 8 - rest are counted.
                let word = loadWord(raw, at: count &- 8)
                let mask = escapeMask(word) & (~0 << UInt64(truncatingIfNeeded: (8 &- rest) &* 8))
                extra &+= escapeExtra(word, mask: mask)
            } else {
                while i < count {
                    let byte = base[i]
                    if needsEscape(byte) { extra &+= escapeLength(byte) &- 1 }
                    i &+= 1
                }
            }
        }
        return count &+ extra
    }

    /// Writes the escape for `byte` (which needs one) at `target` and
    /// returns its length.
    @inline(__always)
    static func writeEscape(_ byte: UInt8, to target: UnsafeMutablePointer<UInt8>) -> Int {
        target[0] = backslash
        switch byte {
        case quote, backslash: target[1] = byte
        case 0x08: target[1] = UInt8(ascii: "b")
        case 0x09: target[1] = UInt8(ascii: "t")
        case 0x0A: target[1] = UInt8(ascii: "n")
        case 0x0C: target[1] = UInt8(ascii: "f")
        case 0x0D: target[1] = UInt8(ascii: "r")
        default:
            target[1] = UInt8(ascii: "u")
            target[2] = UInt8(ascii: "0")
            target[3] = UInt8(ascii: "0")
            target[4] = hexDigit(byte >> 4)
            target[5] = hexDigit(byte & 0x0F)
            return 6
        }
        return 2
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
        let short = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            writeShortDecimal(value, to: buffer.baseAddress!)
        }
        if short > 0 { return short }
        var counter = ASCIICounter()
        value.write(to: &counter)
        return counter.count
    }

    /// Writes the text of `value` that `value.description` would write, when
    /// that text is a plain decimal of at most 16 digits (the common case:
    /// `37.8199`, `-0.5`, `42.0`), and returns its length; returns 0 without
    /// a guarantee about what was written for anything else (exponents,
    /// zero, huge or tiny values, non-finite values). `target` has room for
    /// 32 bytes.
    ///
    /// Why the text is the same: for `1e-4 ≤ |value| < 2^50`, let `t` be
    /// `|value| × 10^k` for k = 0, 1, …; the decimal `round(t) × 10^-k` reads
    /// back as `value` exactly when `round(t) / 10^k == |value|` (both
    /// operands are exact, and one IEEE division rounds correctly). While
    /// `t < 2^50`, the rounding interval of `value` scaled by `10^k` is
    /// narrower than 1/4 and the error of `t` below 1/16, so `round(t)` is
    /// the only candidate with k fraction digits. The first k that reads
    /// back is therefore the shortest round-trip text, which is what the
    /// standard library prints in plain notation for this range.
    @inline(__always)
    static func writeShortDecimal(_ value: Double, to target: UnsafeMutablePointer<UInt8>) -> Int {
        let magnitude = value.magnitude
        guard magnitude >= 1e-4, magnitude < 0x1p50 else { return 0 }
        var scale = 1.0
        var k = 0
        while true {
            let scaled = magnitude * scale
            guard scaled < 0x1p50 else { return 0 }
            // Below 2^50 adding a half is exact, and truncating then rounds
            // (a tie cannot be a match: see above).
            let digits = UInt64(scaled + 0.5)
            if Double(digits) / scale == magnitude {
                return writeDecimal(digits, fractionDigits: k, negative: value < 0, to: target)
            }
            k &+= 1
            scale *= 10
        }
    }

    /// Writes `digits × 10^-fractionDigits` in plain notation with at least
    /// one digit on each side of the point.
    @inline(__always)
    private static func writeDecimal(
        _ digits: UInt64, fractionDigits k: Int, negative: Bool, to target: UnsafeMutablePointer<UInt8>
    ) -> Int {
        var o = 0
        if negative {
            target[0] = UInt8(ascii: "-")
            o = 1
        }
        let count = digitCount(digits)
        if k == 0 {
            writeDigits(digits, count: count, to: target + o)
            o &+= count
            target[o] = UInt8(ascii: ".")
            target[o &+ 1] = UInt8(ascii: "0")
            return o &+ 2
        }
        if count > k {
            // ddd.ddd: write the digits one place to the right, then move
            // the whole part back left over the point's place.
            writeDigits(digits, count: count, to: target + o + 1)
            let whole = count &- k
            for i in 0..<whole { target[o &+ i] = target[o &+ i &+ 1] }
            target[o &+ whole] = UInt8(ascii: ".")
            return o &+ count &+ 1
        }
        // 0.000ddd
        target[o] = UInt8(ascii: "0")
        target[o &+ 1] = UInt8(ascii: ".")
        o &+= 2
        for _ in 0..<(k &- count) {
            target[o] = UInt8(ascii: "0")
            o &+= 1
        }
        writeDigits(digits, count: count, to: target + o)
        return o &+ count
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
