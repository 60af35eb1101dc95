import Foundation

/// A value inside the JSON text that a `BYTES` field holds, read where it
/// lies: the decoder's byte-level alternative to a ``JSONValue`` tree.
///
/// The text is checked once, as a whole and as strictly as ``JSONParser``
/// checks it, when the field is first opened (``open(_:)``). After that
/// nothing is built ahead of time: object keys are compared as bytes,
/// numbers are parsed in place, and only the strings the model asks for
/// become `String`s. Each read borrows the bytes once.
struct EmbeddedJSON {
    /// The whole JSON text, already validated.
    let text: [UInt8]
    /// The offset of the value's first byte (never whitespace).
    let offset: Int
    /// The value's first byte, which says what kind of value it is.
    let first: UInt8

    /// What kind of value starts with a byte.
    enum Kind {
        case null, bool, number, string, array, object
    }

    /// Checks that `text` is exactly one JSON value (whitespace around it
    /// allowed) and returns that value; when it is an object, appends its
    /// members to `members`.
    static func open(_ text: [UInt8], members: inout [EmbeddedJSONObject.Member]) throws -> EmbeddedJSON {
        let (offset, first) = try text.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws -> (Int, UInt8) in
            var scanner = JSONScanner(raw)
            let first = try scanner.peek("a value")
            let offset = scanner.position
            if first == UInt8(ascii: "{") {
                // The members of the top-level object are what a keyed
                // container looks up: note where they are while checking.
                if try scanner.enterObject("an object") {
                    repeat {
                        let key = try scanner.memberKey()
                        try scanner.validate(key)
                        let valueFirst = try scanner.peek("a value")
                        members.append(.init(key, value: scanner.position, first: valueFirst))
                        try scanner.skipValue(depth: 1)
                    } while try scanner.nextMember()
                }
            } else {
                try scanner.skipValue(depth: 0)
            }
            try scanner.expectEnd()
            return (offset, first)
        }
        return EmbeddedJSON(text: text, offset: offset, first: first)
    }

    /// Appends the bytes of `data` to `text`.
    static func append(_ data: Data, to text: inout [UInt8]) {
        data.withUnsafeBytes { text.append(contentsOf: $0) }
    }

    /// Runs `body` with a scanner at the value.
    @inline(__always)
    func withScanner<R>(_ body: (inout JSONScanner) -> R) -> R {
        text.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw)
            scanner.position = offset
            return body(&scanner)
        }
    }

    var kind: Kind { Self.kind(first) }

    @inline(__always)
    static func kind(_ first: UInt8) -> Kind {
        switch first {
        case UInt8(ascii: "n"): .null
        case UInt8(ascii: "t"), UInt8(ascii: "f"): .bool
        case JSONText.quote: .string
        case UInt8(ascii: "["): .array
        case UInt8(ascii: "{"): .object
        default: .number
        }
    }

    /// How the value is described in errors.
    var description: String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    // MARK: Scalars

    var bool: Bool? {
        switch first {
        case UInt8(ascii: "t"): true
        case UInt8(ascii: "f"): false
        default: nil
        }
    }

    /// The string, unescaped; `nil` when the value is not a string.
    var string: String? {
        guard first == JSONText.quote else { return nil }
        return withScanner { Self.string(&$0) }
    }

    /// The number's literal text; `nil` when the value is not a number.
    var numberText: String? {
        guard kind == .number else { return nil }
        return withScanner { scanner in
            guard let number = try? scanner.scanNumber() else { return nil }
            return scanner.text(number)
        }
    }

    /// The nearest `Double` to the number (infinite when out of range), as
    /// `Double(numberText)` reads it; `nil` when the value is not a number.
    var double: Double? {
        guard kind == .number else { return nil }
        return withScanner { Self.double(&$0) }
    }

    /// The number when it is an integer literal that fits `T`; `nil` for
    /// anything else, which the caller reads the general way.
    func exactInteger<T: FixedWidthInteger>(_: T.Type) -> T? {
        guard kind == .number else { return nil }
        return withScanner { Self.exactInteger(&$0, T.self) }
    }

    // MARK: Reading at a scanner (the bytes were validated)

    /// The string at the scanner.
    @inline(__always)
    static func string(_ scanner: inout JSONScanner) -> String? {
        try? scanner.string(scanner.scanString())
    }

    /// The number at the scanner as a `Double`.
    @inline(__always)
    static func double(_ scanner: inout JSONScanner) -> Double? {
        guard let number = try? scanner.scanNumber() else { return nil }
        return scanner.double(number)
    }

    /// The integer literal at the scanner, when it fits `T`.
    @inline(__always)
    static func exactInteger<T: FixedWidthInteger>(_ scanner: inout JSONScanner, _: T.Type) -> T? {
        guard let number = try? scanner.scanNumber(), number.isInteger, let value = scanner.int64(number) else {
            return nil
        }
        return T(exactly: value)
    }

    // MARK: Containers

    /// The members of the object, in document order.
    func members() -> [EmbeddedJSONObject.Member] {
        withScanner { scanner in
            var members: [EmbeddedJSONObject.Member] = []
            guard (try? scanner.enterObject("an object")) == true else { return [] }
            members.reserveCapacity(4)
            repeat {
                guard let key = try? scanner.memberKey(), let first = try? scanner.peek("a value") else { break }
                members.append(.init(key, value: scanner.position, first: first))
                guard (try? scanner.skipValue(depth: 0)) != nil else { break }
            } while (try? scanner.nextMember()) == true
            return members
        }
    }

    /// The elements of the array.
    func elements() -> [EmbeddedJSONObject.Element] {
        withScanner { scanner in
            var elements: [EmbeddedJSONObject.Element] = []
            guard (try? scanner.enterArray("an array")) == true else { return [] }
            repeat {
                guard let first = try? scanner.peek("a value") else { break }
                elements.append(.init(offset: scanner.position, first: first))
                guard (try? scanner.skipValue(depth: 0)) != nil else { break }
            } while (try? scanner.nextElement()) == true
            return elements
        }
    }
}

/// The members of an object in embedded JSON: where each key and value is.
struct EmbeddedJSONObject {
    struct Member {
        /// The offset of the key's opening quote.
        var keyQuote: Int
        /// The length of the key's raw text between the quotes.
        var keyLength: Int
        /// The offset of the value's first byte.
        var value: Int
        var first: UInt8
        /// Whether the key holds escapes (and must be unescaped to compare).
        var isEscaped: Bool

        init(_ key: JSONScanner.StringSpan, value: Int, first: UInt8) {
            keyQuote = key.quote
            keyLength = key.end &- key.start
            self.value = value
            self.first = first
            isEscaped = key.isEscaped
        }
    }

    struct Element {
        var offset: Int
        var first: UInt8
    }

    let text: [UInt8]
    let members: [Member]
    /// Positions by key, built for large objects (dictionaries), where a
    /// linear search per key would be quadratic. The last of duplicate keys
    /// wins, as in `JSONDecoder`.
    private let index: [String: Int]?

    init(text: [UInt8], members: [Member]) {
        self.text = text
        self.members = members
        if members.count > 16 {
            let keys = Self.keys(of: members, in: text)
            var index = [String: Int](minimumCapacity: members.count)
            for i in keys.indices { index[keys[i]] = i }
            self.index = index
        } else {
            index = nil
        }
    }

    private static func keys(of members: [Member], in text: [UInt8]) -> [String] {
        text.withUnsafeBytes { raw in
            var scanner = JSONScanner(raw)
            return members.map { member in
                scanner.position = member.keyQuote
                return EmbeddedJSON.string(&scanner) ?? ""
            }
        }
    }

    /// The keys in document order, duplicates included.
    var keys: [String] { Self.keys(of: members, in: text) }

    /// The value of the last member whose key is `name`.
    func value(forKey name: String) -> EmbeddedJSON? {
        if let index {
            return index[name].map { EmbeddedJSON(text: text, offset: members[$0].value, first: members[$0].first) }
        }
        guard let i = withMember(named: name, { _, i in i }) else { return nil }
        return EmbeddedJSON(text: text, offset: members[i].value, first: members[i].first)
    }

    /// Finds the last member whose key is `name` and calls `body` with a
    /// scanner at its value and its position among the members, borrowing
    /// the bytes once for both. `nil` when there is no such member.
    @inline(__always)
    func withMember<R>(named name: String, _ body: (inout JSONScanner, Int) -> R?) -> R? {
        if let index {
            guard let i = index[name] else { return nil }
            return text.withUnsafeBytes { raw in
                var scanner = JSONScanner(raw)
                scanner.position = members[i].value
                return body(&scanner, i)
            }
        }
        let count = members.count
        guard count > 0 else { return nil }
        var name = name
        return name.withUTF8 { key in
            text.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> R? in
                var scanner = JSONScanner(raw)
                let bytes = scanner.bytes.baseAddress!
                let length = key.count
                var i = count &- 1
                while i >= 0 {
                    let member = members[i]
                    if member.isEscaped {
                        scanner.position = member.keyQuote
                        if let span = try? scanner.scanString(),
                            scanner.withContents(of: span, { $0.elementsEqual(key) })
                        {
                            break
                        }
                    } else if member.keyLength == length,
                        length == 0
                            || JSONScanner.equal(bytes + (member.keyQuote &+ 1), key.baseAddress!, count: key.count)
                    {
                        break
                    }
                    i &-= 1
                }
                guard i >= 0 else { return nil }
                scanner.position = members[i].value
                return body(&scanner, i)
            }
        }
    }
}
