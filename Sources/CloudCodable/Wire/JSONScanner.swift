/// A cursor over JSON bytes: the strict RFC 8259 tokenizer under both
/// ``JSONParser`` and the record reader.
///
/// It never builds more than it is asked for: strings come back as spans of
/// the input (or, when they hold escapes, of a reused scratch buffer), numbers
/// as spans with their shape, and values the caller does not want are skipped
/// without allocating. Every failure is a ``WireFormatError`` at the offset of
/// the offending byte; reading past the end is a `.truncated` error, never a trap.
struct JSONScanner {
    /// The deepest nesting of arrays and objects that is accepted.
    static let maximumDepth = 512

    /// The input.
    let bytes: UnsafeBufferPointer<UInt8>
    /// The offset of the next byte to read.
    var position = 0
    /// The unescaped contents of the last string that held escapes.
    private(set) var scratch: [UInt8] = []

    init(_ input: UnsafeRawBufferPointer) {
        bytes = input.assumingMemoryBound(to: UInt8.self)
    }

    // MARK: - Errors

    /// An error at the cursor.
    func error(_ code: WireFormatError.Code, _ message: String) -> WireFormatError {
        WireFormatError(code, offset: position, message: message)
    }

    /// An error at `offset`.
    func error(_ code: WireFormatError.Code, at offset: Int, _ message: String) -> WireFormatError {
        WireFormatError(code, offset: offset, message: message)
    }

    /// The end of the input where `expected` should have been.
    func truncated(_ expected: String) -> WireFormatError {
        WireFormatError(.truncated, offset: bytes.count, message: "unexpected end of input, expected \(expected)")
    }

    /// The byte at the cursor is not what `expected` says. A byte that starts
    /// some other JSON value is a `.wrongType`; anything else is malformed.
    func unexpected(_ expected: String) -> WireFormatError {
        guard position < bytes.count else { return truncated(expected) }
        let byte = bytes[position]
        let code: WireFormatError.Code =
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\""), UInt8(ascii: "-"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "t"), UInt8(ascii: "f"),
                UInt8(ascii: "n"):
                .wrongType
            default: .malformedJSON
            }
        return error(code, "expected \(expected), found \(Self.describe(byte))")
    }

    /// A byte for an error message: `'x'` for printable ASCII, else `0xNN`.
    static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x21...0x7E: "'\(Character(Unicode.Scalar(byte)))'"
        default: "byte 0x\(String(byte, radix: 16, uppercase: true))"
        }
    }

    /// What a value starting with `byte` is, for error messages.
    static func describeValue(_ byte: UInt8) -> String {
        switch byte {
        case UInt8(ascii: "{"): "an object"
        case UInt8(ascii: "["): "an array"
        case UInt8(ascii: "\""): "a string"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): "a number"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): "a boolean"
        case UInt8(ascii: "n"): "null"
        default: describe(byte)
        }
    }

    // MARK: - Whitespace and punctuation

    /// Whether the cursor is at the end of the input.
    var isAtEnd: Bool { position >= bytes.count }

    /// Moves past spaces, tabs, line feeds and carriage returns.
    @inline(__always)
    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    /// Skips whitespace and returns the byte at the cursor without consuming it.
    @inline(__always)
    mutating func peek(_ expected: @autoclosure () -> String) throws(WireFormatError) -> UInt8 {
        skipWhitespace()
        guard position < bytes.count else { throw truncated(expected()) }
        return bytes[position]
    }

    /// Skips whitespace, then requires the end of the input.
    mutating func expectEnd() throws(WireFormatError) {
        skipWhitespace()
        if position < bytes.count {
            throw error(.malformedJSON, "unexpected \(Self.describe(bytes[position])) after the end of the JSON value")
        }
    }

    /// Skips whitespace and an object's opening brace. Returns `false` when
    /// the object is empty, with its closing brace consumed too.
    @inline(__always)
    mutating func enterObject(_ what: @autoclosure () -> String) throws(WireFormatError) -> Bool {
        guard try peek(what()) == UInt8(ascii: "{") else { throw unexpected(what()) }
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return false
        }
        return true
    }

    /// Skips whitespace and an array's opening bracket. Returns `false` when
    /// the array is empty, with its closing bracket consumed too.
    @inline(__always)
    mutating func enterArray(_ what: @autoclosure () -> String) throws(WireFormatError) -> Bool {
        guard try peek(what()) == UInt8(ascii: "[") else { throw unexpected(what()) }
        position += 1
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return false
        }
        return true
    }

    /// Reads an object member's key and the colon after it; the cursor is
    /// then at (the whitespace before) the member's value.
    @inline(__always)
    mutating func memberKey() throws(WireFormatError) -> StringSpan {
        guard try peek("an object key") == JSONText.quote else {
            if bytes[position] == UInt8(ascii: "}") {
                throw error(.malformedJSON, "expected an object key after ',', found '}' (trailing comma)")
            }
            throw error(.malformedJSON, "expected a string as object key, found \(Self.describe(bytes[position]))")
        }
        let key = try scanString()
        guard try peek("':' after object key") == UInt8(ascii: ":") else {
            throw error(.malformedJSON, "expected ':' after object key, found \(Self.describe(bytes[position]))")
        }
        position += 1
        return key
    }

    /// After a member's value: consumes a comma and returns `true` when
    /// another member follows, or consumes the closing brace and returns `false`.
    @inline(__always)
    mutating func nextMember() throws(WireFormatError) -> Bool {
        switch try peek("',' or '}' in object") {
        case UInt8(ascii: ","):
            position += 1
            return true
        case UInt8(ascii: "}"):
            position += 1
            return false
        case let byte:
            throw error(.malformedJSON, "expected ',' or '}' in object, found \(Self.describe(byte))")
        }
    }

    /// After an element: consumes a comma and returns `true` when another
    /// element follows, or consumes the closing bracket and returns `false`.
    @inline(__always)
    mutating func nextElement() throws(WireFormatError) -> Bool {
        switch try peek("',' or ']' in array") {
        case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                throw error(.malformedJSON, "expected a value after ',', found ']' (trailing comma)")
            }
            return true
        case UInt8(ascii: "]"):
            position += 1
            return false
        case let byte:
            throw error(.malformedJSON, "expected ',' or ']' in array, found \(Self.describe(byte))")
        }
    }

    /// Consumes `literal` when the input continues with exactly those bytes
    /// (no whitespace skipped); otherwise leaves the cursor and returns `false`.
    /// For fast paths over the compact form the writer produces.
    @inline(__always)
    mutating func consume(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard position &+ count <= bytes.count, let base = bytes.baseAddress else { return false }
        guard Self.equal(UnsafeRawPointer(base + position), UnsafeRawPointer(literal.utf8Start), count: count) else {
            return false
        }
        position &+= count
        return true
    }

    /// Consumes what the writer puts between a field's name and its value,
    /// `:{"type":"T","value":`, and returns the type `T`; `nil`, with the
    /// cursor anywhere, for any other text.
    @inline(__always)
    mutating func consumeFieldPrefix() -> FieldType? {
        guard consume(#":{"type":""#), position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "S"):
            if consume(#"STRING","value":"#) { return .string }
            if consume(#"STRING_LIST","value":"#) { return .stringList }
        case UInt8(ascii: "I"):
            if consume(#"INT64","value":"#) { return .int64 }
            if consume(#"INT64_LIST","value":"#) { return .int64List }
        case UInt8(ascii: "D"):
            if consume(#"DOUBLE","value":"#) { return .double }
            if consume(#"DOUBLE_LIST","value":"#) { return .doubleList }
        case UInt8(ascii: "T"):
            if consume(#"TIMESTAMP","value":"#) { return .timestamp }
            if consume(#"TIMESTAMP_LIST","value":"#) { return .timestampList }
        case UInt8(ascii: "B"):
            if consume(#"BYTES","value":"#) { return .bytes }
            if consume(#"BYTES_LIST","value":"#) { return .bytesList }
        case UInt8(ascii: "R"):
            if consume(#"REFERENCE","value":"#) { return .reference }
            if consume(#"REFERENCE_LIST","value":"#) { return .referenceList }
        case UInt8(ascii: "A"):
            if consume(#"ASSETID","value":"#) { return .asset }
            if consume(#"ASSETID_LIST","value":"#) { return .assetList }
        case UInt8(ascii: "L"):
            if consume(#"LOCATION","value":"#) { return .location }
            if consume(#"LOCATION_LIST","value":"#) { return .locationList }
        default:
            break
        }
        return nil
    }

    /// Whether the `count` bytes at `a` and `b` are equal, compared a word
    /// at a time (the last word overlapping the one before it).
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        if count >= 8 {
            var k = 0
            while k &+ 8 < count {
                if a.loadUnaligned(fromByteOffset: k, as: UInt64.self)
                    != b.loadUnaligned(fromByteOffset: k, as: UInt64.self)
                {
                    return false
                }
                k &+= 8
            }
            return a.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
                == b.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        }
        if count >= 4 {
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
                    == b.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
        }
        var k = 0
        while k < count {
            if a.load(fromByteOffset: k, as: UInt8.self) != b.load(fromByteOffset: k, as: UInt8.self) { return false }
            k &+= 1
        }
        return true
    }

    /// Scans a number at the cursor that must be an integer fitting `Int64`
    /// and returns it, in one pass; `nil`, with the cursor where it was, for
    /// anything else (a fraction, an exponent, too many digits, bad JSON),
    /// which the caller reads the general way.
    @inline(__always)
    mutating func scanInt64() -> Int64? {
        let count = bytes.count
        var i = position
        guard i < count, let base = bytes.baseAddress else { return nil }
        let negative = base[i] == UInt8(ascii: "-")
        if negative { i &+= 1 }
        guard i < count else { return nil }
        let first = base[i] &- UInt8(ascii: "0")
        guard first < 10 else { return nil }
        var magnitude = UInt64(first)
        i &+= 1
        if first == 0 {
            // No leading zeros.
            if i < count, base[i] &- UInt8(ascii: "0") < 10 { return nil }
        } else {
            let limit = min(count, i &+ 17)  // 18 digits always fit
            while i < limit {
                let digit = base[i] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                magnitude = magnitude &* 10 &+ UInt64(digit)
                i &+= 1
            }
            if i < count, base[i] &- UInt8(ascii: "0") < 10 { return nil }
        }
        if i < count {
            switch base[i] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        position = i
        return negative ? Int64(bitPattern: 0 &- magnitude) : Int64(bitPattern: magnitude)
    }

    // MARK: - Literals

    /// Consumes `true`, `false` or `null` at the cursor, whichever `literal` is.
    mutating func scanLiteral(_ literal: StaticString) throws(WireFormatError) {
        let mismatch = literal.withUTF8Buffer { text -> Int? in
            for k in 0..<text.count where position + k >= bytes.count || bytes[position + k] != text[k] {
                return k
            }
            return nil
        }
        if let mismatch {
            if position + mismatch >= bytes.count { throw truncated("'\(literal)'") }
            position += mismatch
            throw error(.malformedJSON, "invalid literal, expected '\(literal)'")
        }
        position += literal.utf8CodeUnitCount
    }

    /// Reads `true` or `false` after whitespace.
    mutating func readBool() throws(WireFormatError) -> Bool {
        switch try peek("a boolean") {
        case UInt8(ascii: "t"):
            try scanLiteral("true")
            return true
        case UInt8(ascii: "f"):
            try scanLiteral("false")
            return false
        default:
            throw unexpected("a boolean")
        }
    }

    /// Skips whitespace and consumes `null` when it is next. Returns whether it did.
    @inline(__always)
    mutating func skipNull() throws(WireFormatError) -> Bool {
        guard try peek("a value") == UInt8(ascii: "n") else { return false }
        try scanLiteral("null")
        return true
    }

    // MARK: - Strings

    /// Where a string's contents are.
    struct StringSpan {
        /// The offset of the opening quote, for error messages.
        var quote: Int
        /// The contents in the input, between the quotes. When `isEscaped`,
        /// the unescaped contents are in ``JSONScanner/scratch`` instead.
        var start: Int
        var end: Int
        /// Whether the contents hold escapes.
        var isEscaped: Bool
        /// Whether every byte of the raw contents is ASCII (and so valid UTF-8).
        var isASCII: Bool
    }

    /// Scans the string whose opening quote is at the cursor and leaves the
    /// cursor after its closing quote. Checks escapes and surrogate pairs;
    /// UTF-8 is checked when the contents become a `String` (or by `validate`).
    @inline(__always)
    mutating func scanString() throws(WireFormatError) -> StringSpan {
        let quote = position
        let start = position + 1
        let count = bytes.count
        guard start < count, let base = bytes.baseAddress else { throw truncated("the end of a string") }
        var i = start
        var high: UInt64 = 0
        let raw = UnsafeRawPointer(base)
        var found = false
        while i &+ 8 <= count {
            let word = JSONText.loadWord(raw, at: i)
            if JSONText.wordNeedsEscape(word) {
                // The bytes before the first one to look at belong to the string.
                let plain = JSONText.escapeMask(word).trailingZeroBitCount &>> 3
                high |= word & ((1 &<< (UInt64(plain) &* 8)) &- 1)
                i &+= plain
                found = true
                break
            }
            high |= word
            i &+= 8
        }
        while !found, i < count {
            let byte = base[i]
            if JSONText.needsEscape(byte) { break }
            high |= UInt64(byte)
            i &+= 1
        }
        guard i < count else { throw truncated("the end of a string") }
        switch base[i] {
        case JSONText.quote:
            position = i + 1
            return StringSpan(
                quote: quote, start: start, end: i, isEscaped: false,
                isASCII: high & 0x8080_8080_8080_8080 == 0)
        case JSONText.backslash:
            return try scanEscapedString(quote: quote, start: start, from: i)
        case let control:
            throw error(.malformedJSON, at: i, "unescaped control character (\(Self.describe(control))) in string")
        }
    }

    /// The rest of `scanString` once a backslash is found at `from`: unescapes
    /// the whole contents into `scratch`.
    private mutating func scanEscapedString(quote: Int, start: Int, from: Int) throws(WireFormatError)
        -> StringSpan
    {
        let count = bytes.count
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<from]))
        var i = from
        while true {
            let run = JSONText.firstEscapeIndex(UnsafeBufferPointer(rebasing: bytes[i...]))
            if run > 0 {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[i..<(i + run)]))
                i += run
            }
            guard i < count else { throw truncated("the end of a string") }
            let byte = bytes[i]
            if byte == JSONText.quote {
                position = i + 1
                return StringSpan(quote: quote, start: start, end: i, isEscaped: true, isASCII: false)
            }
            guard byte == JSONText.backslash else {
                throw error(.malformedJSON, at: i, "unescaped control character in string")
            }
            guard i + 1 < count else { throw truncated("an escape sequence") }
            switch bytes[i + 1] {
            case UInt8(ascii: "\""): scratch.append(JSONText.quote)
            case UInt8(ascii: "\\"): scratch.append(JSONText.backslash)
            case UInt8(ascii: "/"): scratch.append(UInt8(ascii: "/"))
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try hexUnit(at: i + 2)
                switch unit {
                case 0xD800...0xDBFF:
                    guard i + 6 < count else { throw truncated("the low surrogate after \\u\(hex(unit))") }
                    guard bytes[i + 6] == JSONText.backslash else {
                        throw error(.invalidUTF8, at: i, "lone high surrogate \\u\(hex(unit)) in string")
                    }
                    guard i + 7 < count else { throw truncated("the low surrogate after \\u\(hex(unit))") }
                    guard bytes[i + 7] == UInt8(ascii: "u") else {
                        throw error(.invalidUTF8, at: i, "lone high surrogate \\u\(hex(unit)) in string")
                    }
                    let low = try hexUnit(at: i + 8)
                    guard (0xDC00...0xDFFF).contains(low) else {
                        throw error(.invalidUTF8, at: i, "lone high surrogate \\u\(hex(unit)) in string")
                    }
                    let scalar = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    UTF8Validation.append(scalar, to: &scratch)
                    i += 6
                case 0xDC00...0xDFFF:
                    throw error(.invalidUTF8, at: i, "lone low surrogate \\u\(hex(unit)) in string")
                default:
                    UTF8Validation.append(unit, to: &scratch)
                }
                i += 4
            case let other:
                throw error(.malformedJSON, at: i, "invalid escape '\\\(Character(Unicode.Scalar(other)))' in string")
            }
            i += 2
        }
    }

    /// The four hex digits at `offset`, as a UTF-16 code unit.
    private func hexUnit(at offset: Int) throws(WireFormatError) -> UInt32 {
        var value: UInt32 = 0
        for k in 0..<4 {
            guard offset + k < bytes.count else { throw truncated("four hex digits after \\u") }
            let byte = bytes[offset + k]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default:
                throw error(
                    .malformedJSON, at: offset + k, "expected four hex digits after \\u, found \(Self.describe(byte))")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private func hex(_ unit: UInt32) -> String {
        String(unit, radix: 16, uppercase: true)
    }

    /// Calls `body` with the contents of `span`: a slice of the input, or the
    /// scratch buffer when it held escapes. Valid until the next string is scanned.
    @inline(__always)
    func withContents<R>(of span: StringSpan, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if span.isEscaped {
            return scratch.withUnsafeBufferPointer(body)
        }
        return body(UnsafeBufferPointer(rebasing: bytes[span.start..<span.end]))
    }

    /// Checks that the contents of `span` are valid UTF-8.
    @inline(__always)
    mutating func validate(_ span: StringSpan) throws(WireFormatError) {
        if span.isASCII { return }
        try validateNonASCII(span)
    }

    private mutating func validateNonASCII(_ span: StringSpan) throws(WireFormatError) {
        if let bad = withContents(of: span, UTF8Validation.firstInvalidIndex) {
            throw error(.invalidUTF8, at: span.isEscaped ? span.quote : span.start + bad, "invalid UTF-8 in string")
        }
    }

    /// The contents of `span` as a `String`, after checking that they are
    /// valid UTF-8 (never repaired).
    @inline(__always)
    mutating func string(_ span: StringSpan) throws(WireFormatError) -> String {
        try validate(span)
        return withContents(of: span, Self.makeString)
    }

    /// A `String` of valid UTF-8. Short text (which fits in a `String`
    /// without allocating) is copied in words; the standard library then
    /// only checks that it is ASCII.
    @inline(__always)
    static func makeString(_ utf8: UnsafeBufferPointer<UInt8>) -> String {
        let count = utf8.count
        if count <= 15, let source = utf8.baseAddress {
            return String(unsafeUninitializedCapacity: count) { target in
                JSONText.copyShortText(source, to: target.baseAddress!, count: count)
                return count
            }
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// Reads a string value after whitespace.
    @inline(__always)
    mutating func readString(_ what: @autoclosure () -> String = "a string") throws(WireFormatError) -> String {
        guard try peek(what()) == JSONText.quote else { throw unexpected(what()) }
        return try string(scanString())
    }

    // MARK: - Numbers

    /// Where a number is and what shape it has.
    struct NumberSpan {
        var start: Int
        var end: Int
        /// No fraction and no exponent.
        var isInteger: Bool
    }

    /// Scans the number at the cursor (RFC 8259 grammar: no leading zeros,
    /// no `+`, digits on both sides of the point) and leaves the cursor after it.
    @inline(__always)
    mutating func scanNumber() throws(WireFormatError) -> NumberSpan {
        let count = bytes.count
        let start = position
        var i = position
        if i < count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < count else { throw truncated("a digit") }
        switch bytes[i] {
        case UInt8(ascii: "0"):
            i += 1
            if i < count, Self.isDigit(bytes[i]) {
                throw error(.malformedJSON, at: i - 1, "leading zeros are not allowed in numbers")
            }
        case UInt8(ascii: "1")...UInt8(ascii: "9"):
            i += 1
            while i < count, Self.isDigit(bytes[i]) { i += 1 }
        case let byte:
            throw error(.malformedJSON, at: i, "expected a digit, found \(Self.describe(byte))")
        }
        var isInteger = true
        if i < count, bytes[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard i < count else { throw truncated("a digit after '.'") }
            guard Self.isDigit(bytes[i]) else {
                throw error(.malformedJSON, at: i, "expected a digit after '.', found \(Self.describe(bytes[i]))")
            }
            while i < count, Self.isDigit(bytes[i]) { i += 1 }
        }
        if i < count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < count else { throw truncated("a digit in the exponent") }
            guard Self.isDigit(bytes[i]) else {
                throw error(.malformedJSON, at: i, "expected a digit in the exponent, found \(Self.describe(bytes[i]))")
            }
            while i < count, Self.isDigit(bytes[i]) { i += 1 }
        }
        position = i
        return NumberSpan(start: start, end: i, isInteger: isInteger)
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// The value of an optional minus and decimal digits, or `nil` when
    /// `text` is not that or does not fit `Int64`.
    @inline(__always)
    static func int64(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        var i = 0
        let negative = text.count > 0 && text[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        guard i < text.count else { return nil }
        var magnitude: UInt64 = 0
        if text.count - i <= 18 {
            while i < text.count {
                let digit = text[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                magnitude = magnitude &* 10 &+ UInt64(digit)
                i += 1
            }
        } else {
            while i < text.count {
                let digit = text[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(digit))
                guard !o1, !o2 else { return nil }
                magnitude = sum
                i += 1
            }
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return Int64(bitPattern: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    /// The integer value of `number`, or `nil` when it does not fit `Int64`.
    @inline(__always)
    func int64(_ number: NumberSpan) -> Int64? {
        Self.int64(UnsafeBufferPointer(rebasing: bytes[number.start..<number.end]))
    }

    /// The nearest `Double` to `number` (infinite when it is out of range).
    @inline(__always)
    func double(_ number: NumberSpan) -> Double {
        let text = UnsafeBufferPointer(rebasing: bytes[number.start..<number.end])
        // Integers of up to 15 digits are exact in a Double.
        if number.isInteger, text.count <= 15, let integer = Self.int64(text) {
            if integer == 0, text[0] == UInt8(ascii: "-") { return -0.0 }
            return Double(integer)
        }
        if let exact = Self.exactDouble(text) { return exact }
        // The grammar was checked: the text is a valid Swift float literal.
        return Double(String(decoding: text, as: UTF8.self)) ?? .nan
    }

    /// The value of a JSON number whose significant digits fit in 53 bits
    /// and whose decimal exponent is at most 22 either way, or `nil`.
    ///
    /// Such a number is an exact integer times or divided by an exact power
    /// of ten, and one IEEE multiplication or division rounds correctly, so
    /// the result is exactly what `Double(String)` returns (Clinger's fast
    /// path). Everything else, including numbers with more digits, goes to
    /// the standard library.
    @inline(__always)
    static func exactDouble(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        let count = text.count
        var i = 0
        let negative = count > 0 && text[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        var mantissa: UInt64 = 0
        var exponent = 0
        // At most 16 significant digits: a 17-digit mantissa may exceed 2^53.
        var room = 16
        while i < count {
            let digit = text[i] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            if mantissa != 0 || digit != 0 {
                guard room > 0 else { return nil }
                room &-= 1
                mantissa = mantissa &* 10 &+ UInt64(digit)
            }
            i &+= 1
        }
        if i < count, text[i] == UInt8(ascii: ".") {
            i &+= 1
            while i < count {
                let digit = text[i] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                if mantissa != 0 || digit != 0 {
                    guard room > 0 else { return nil }
                    room &-= 1
                    mantissa = mantissa &* 10 &+ UInt64(digit)
                }
                exponent &-= 1
                i &+= 1
            }
        }
        if i < count {
            // An exponent: e or E, an optional sign, digits.
            i &+= 1
            var exponentIsNegative = false
            if i < count, text[i] == UInt8(ascii: "-") || text[i] == UInt8(ascii: "+") {
                exponentIsNegative = text[i] == UInt8(ascii: "-")
                i &+= 1
            }
            var written = 0
            while i < count {
                let digit = text[i] &- UInt8(ascii: "0")
                guard digit < 10, written < 1000 else { return nil }
                written = written &* 10 &+ Int(digit)
                i &+= 1
            }
            exponent &+= exponentIsNegative ? -written : written
        }
        guard mantissa <= 1 << 53 else { return nil }
        var value = Double(mantissa)
        if mantissa != 0 {
            if exponent > 0 {
                guard exponent <= 22 else { return nil }
                value *= powerOfTen(exponent)
            } else if exponent < 0 {
                guard exponent >= -22 else { return nil }
                value /= powerOfTen(-exponent)
            }
        }
        return negative ? -value : value
    }

    /// 10^k for 0 ≤ k ≤ 22, all exact in a `Double`.
    @inline(__always)
    private static func powerOfTen(_ k: Int) -> Double {
        switch k {
        case 0: 1e0
        case 1: 1e1
        case 2: 1e2
        case 3: 1e3
        case 4: 1e4
        case 5: 1e5
        case 6: 1e6
        case 7: 1e7
        case 8: 1e8
        case 9: 1e9
        case 10: 1e10
        case 11: 1e11
        case 12: 1e12
        case 13: 1e13
        case 14: 1e14
        case 15: 1e15
        case 16: 1e16
        case 17: 1e17
        case 18: 1e18
        case 19: 1e19
        case 20: 1e20
        case 21: 1e21
        default: 1e22
        }
    }

    /// The literal text of `number`.
    func text(_ number: NumberSpan) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[number.start..<number.end]), as: UTF8.self)
    }

    // MARK: - Skipping

    /// Skips the value after whitespace, checking it as strictly as if it
    /// were read, without building it. `depth` is the number of arrays and
    /// objects already open around it.
    mutating func skipValue(depth: Int) throws(WireFormatError) {
        let byte = try peek("a value")
        if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
            try withUnsafeTemporaryAllocation(of: Bool.self, capacity: Self.maximumDepth) {
                (isObject) throws(WireFormatError) in
                try skipContainer(depth: depth, isObject: isObject)
            }
        } else {
            try skipScalar(byte)
        }
    }

    /// Skips the string, number or literal at the cursor, which starts with `byte`.
    @inline(__always)
    private mutating func skipScalar(_ byte: UInt8) throws(WireFormatError) {
        switch byte {
        case JSONText.quote:
            try validate(scanString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            _ = try scanNumber()
        case UInt8(ascii: "t"):
            try scanLiteral("true")
        case UInt8(ascii: "f"):
            try scanLiteral("false")
        case UInt8(ascii: "n"):
            try scanLiteral("null")
        default:
            throw error(.malformedJSON, "expected a value, found \(Self.describe(byte))")
        }
    }

    /// Skips the array or object at the cursor, without recursion.
    /// `isObject` records, for each container open, whether it is an object.
    private mutating func skipContainer(
        depth: Int, isObject: UnsafeMutableBufferPointer<Bool>
    ) throws(WireFormatError) {
        var open = 0
        while true {
            // At the start of a value (whitespace skipped).
            let byte = bytes[position]
            if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                guard depth + open < Self.maximumDepth else {
                    throw error(.nestingTooDeep, "arrays and objects nested deeper than \(Self.maximumDepth)")
                }
                let object = byte == UInt8(ascii: "{")
                isObject[open] = object
                open += 1
                let isEmpty = try object ? !enterObject("an object") : !enterArray("an array")
                if isEmpty {
                    open -= 1
                } else {
                    if object { try validate(memberKey()) }
                    _ = try peek("a value")
                    continue
                }
            } else {
                try skipScalar(byte)
            }
            // After a value: close containers until one continues.
            while true {
                if open == 0 { return }
                let more = try isObject[open - 1] ? nextMember() : nextElement()
                if more {
                    if isObject[open - 1] { try validate(memberKey()) }
                    _ = try peek("a value")
                    break
                }
                open -= 1
            }
        }
    }
}
