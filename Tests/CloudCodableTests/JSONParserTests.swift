import CloudCodable
import Foundation
import Testing

@Suite("JSONParser")
struct JSONParserTests {
    static func parse(_ text: String) throws -> JSONValue {
        try JSONParser.parse(wireUTF8(text))
    }

    static func error(_ text: String) -> WireFormatError? {
        wireError { () throws in try parse(text) }
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try Self.parse(
            #" { "a" : [ true , false , null , -1.50e+3 , 0 , "x\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00" ] , "b" : { } , "c" : [ ] , "a" : 1 } "#
        )
        #expect(
            value
                == .object([
                    JSONMember(
                        key: "a",
                        value: .array([
                            .bool(true), .bool(false), .null, .number("-1.50e+3"), .number("0"),
                            .string("x\"\\/\u{8}\u{C}\n\r\té😀"),
                        ])),
                    JSONMember(key: "b", value: .object([])),
                    JSONMember(key: "c", value: .array([])),
                    JSONMember(key: "a", value: .number("1")),
                ]))
    }

    @Test func topLevelScalars() throws {
        #expect(try Self.parse("12") == .number("12"))
        #expect(try Self.parse("\t\"s\"\r\n") == .string("s"))
        #expect(try Self.parse("null") == .null)
        #expect(try Self.parse("-0.0E-0") == .number("-0.0E-0"))
    }

    @Test func overloadsAgree() throws {
        let bytes = wireUTF8(#"{"k":[1,"two"]}"#)
        let fromArray = try JSONParser.parse(bytes)
        let fromData = try JSONParser.parse(Data(bytes))
        let fromPointer = try bytes.withUnsafeBytes { try JSONParser.parse($0) }
        #expect(fromArray == fromData)
        #expect(fromArray == fromPointer)
    }

    @Test(arguments: [
        ("[1,]", WireFormatError.Code.malformedJSON), ("{\"a\":1,}", .malformedJSON), ("[,1]", .malformedJSON),
        ("{,}", .malformedJSON), ("01", .malformedJSON), ("-01", .malformedJSON), ("1.", .truncated),
        ("1.e5", .malformedJSON), (".5", .malformedJSON), ("+1", .malformedJSON), ("1e", .truncated),
        ("1e+", .truncated), ("-", .truncated), ("NaN", .malformedJSON), ("Infinity", .malformedJSON),
        ("-Infinity", .malformedJSON), ("'a'", .malformedJSON), ("{a:1}", .malformedJSON),
        ("// c\n1", .malformedJSON), ("/* c */ 1", .malformedJSON), ("1 2", .malformedJSON), ("{} x", .malformedJSON),
        ("", .truncated), ("   ", .truncated), ("[", .truncated), ("{\"a\"", .truncated), ("{\"a\":", .truncated),
        ("\"abc", .truncated), ("tru", .truncated), ("trUe", .malformedJSON), ("nul", .truncated),
        ("\"a\tb\"", .malformedJSON), ("\"a\nb\"", .malformedJSON), ("\"\\x\"", .malformedJSON),
        ("\"\\u12G4\"", .malformedJSON), ("\"\\u12\"", .malformedJSON), ("\"\\u12", .truncated), ("\"\\", .truncated),
        ("[1 2]", .malformedJSON), ("{\"a\" 1}", .malformedJSON), ("{\"a\":1 \"b\":2}", .malformedJSON),
        ("]", .malformedJSON),
        ("\"\\uD800\"", .invalidUTF8), ("\"\\uDC00\"", .invalidUTF8), ("\"\\uD800\\u0041\"", .invalidUTF8),
        ("\"\\uD800x\"", .invalidUTF8), ("\"\\uD800", .truncated), ("\"\\uD800\\", .truncated),
        ("\"\\uDBFF\\uDBFF\"", .invalidUTF8), ("\u{FEFF}1", .malformedJSON),
    ])
    func rejects(text: String, code: WireFormatError.Code) {
        let error = Self.error(text)
        #expect(error?.code == code, "\(text): \(String(describing: error))")
        #expect(error?.offset != nil)
    }

    @Test func reportsTheOffset() throws {
        let error = try #require(Self.error(#"{"recordName" "x"}"#))
        #expect(error.code == .malformedJSON)
        #expect(error.offset == 14)
        #expect(error.description == #"malformed JSON at byte 14: expected ':' after object key, found '"'"#)
    }

    @Test(
        arguments: [
            [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF8, 0x88, 0x80, 0x80, 0x80],
            [0xFF], [0xE0, 0x80, 0x80], [0xF0, 0x80, 0x80, 0x80], [0x61, 0xC3],
        ] as [[UInt8]])
    func rejectsInvalidUTF8(sequence: [UInt8]) {
        for prefix in [[], wireUTF8("ab"), wireUTF8("abcdefghij"), wireUTF8("a\\n")] as [[UInt8]] {
            // As a string, as a key and after an escape.
            let asValue = wireUTF8("[\"") + prefix + sequence + wireUTF8("\"]")
            let asKey = wireUTF8("{\"") + prefix + sequence + wireUTF8("\":1}")
            for document in [asValue, asKey] {
                let error = wireError { () throws in try JSONParser.parse(document) }
                #expect(error?.code == .invalidUTF8, "\(document)")
            }
        }
    }

    @Test func acceptsValidUTF8OfEveryLength() throws {
        let text = "a é € 😀 \u{10FFFF} \u{E000} \u{D7FF}"
        #expect(try Self.parse("\"\(text)\"") == .string(text))
    }

    @Test func nestingLimit() throws {
        let limit = JSONParser.maximumDepth
        #expect(limit == 512)
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        _ = try Self.parse(deepest)
        let objects = String(repeating: "{\"a\":", count: limit) + "1" + String(repeating: "}", count: limit)
        _ = try Self.parse(objects)
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        #expect(Self.error(tooDeep)?.code == .nestingTooDeep)
        let hostile = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(Self.error(hostile)?.code == .nestingTooDeep)
        let hostileObjects = String(repeating: "{\"a\":", count: 10_000)
        #expect(Self.error(hostileObjects)?.code == .nestingTooDeep)
    }

    @Test func everyPrefixOfADocumentIsTruncated() {
        let text = #"{"a" : [1, -2.5e3, true, false, null, "x\u00e9\n"], "b": {"c": "é😀"}, "d": 0}"#
        let bytes = wireUTF8(text)
        for count in 0..<bytes.count {
            let error = wireError { () throws in try JSONParser.parse(Array(bytes[..<count])) }
            #expect(error?.code == .truncated, "prefix of \(count) bytes: \(String(describing: error))")
        }
    }

    @Test func agreesWithFoundationOnWriterOutput() throws {
        var random = WireRandom(seed: 31)
        for _ in 0..<100 {
            let record = WireSamples.record(&random)
            let bytes = try WireFormat.encode(record)
            let ours = try JSONParser.parse(bytes)
            let theirs = try JSONSerialization.jsonObject(with: Data(bytes))
            #expect(Self.same(ours, theirs))
        }
    }

    /// Whether a parsed value equals what Foundation parsed.
    static func same(_ value: JSONValue, _ object: Any) -> Bool {
        switch value {
        case .null: return object is NSNull
        case .bool(let bool): return (object as? Bool) == bool
        case .number(let text):
            guard let number = object as? NSNumber, let value = Double(text) else { return false }
            return wireSameDouble(number.doubleValue, value)
        case .string(let string): return wireSameString(object as? String, string)
        case .array(let elements):
            guard let array = object as? [Any], array.count == elements.count else { return false }
            return zip(elements, array).allSatisfy { same($0, $1) }
        case .object(let members):
            guard let dictionary = object as? [String: Any], dictionary.count == members.count else { return false }
            return members.allSatisfy { member in
                let key = dictionary[member.key] != nil ? member.key : String(member.key.drop { $0 == "\u{FEFF}" })
                return dictionary[key].map { same(member.value, $0) } ?? false
            }
        }
    }
}
