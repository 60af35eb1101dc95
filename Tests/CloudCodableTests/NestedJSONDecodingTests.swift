import Foundation
import Testing

@testable import CloudCodable

/// Nested values are JSON in `BYTES` fields, read in place by the record
/// decoder. Whatever Foundation's `JSONDecoder` reads from that JSON, the
/// record decoder must read the same, and fail where it fails.
@Suite("Nested JSON decoding")
struct NestedJSONDecodingTests {
    struct Holder<Value: Codable & Sendable>: CloudCodable {
        var cloudIdentifier: String { "h" }
        var cloudMetadata: RecordMetadata?
        var value: Value
    }

    /// `value` decoded from a record whose field holds `json`, both as an
    /// entry and as wire text read back from the wire form.
    static func decode<Value: Codable & Sendable>(_ type: Value.Type, from json: String) throws -> [Value] {
        let record = Record(
            recordType: "Holder<\(Value.self)>", recordName: "h", fields: ["value": .bytes(Data(json.utf8))])
        let read = try WireFormat.decodeRecord(from: WireFormat.encode(record))
        return [
            try RecordDecoder().decode(Holder<Value>.self, from: record).value,
            try RecordDecoder().decode(Holder<Value>.self, from: read).value,
        ]
    }

    /// Decodes `json` both ways and with `JSONDecoder`, and checks they agree.
    static func expectAgreement<Value: Codable & Sendable & Equatable>(
        _ type: Value.Type, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let foundation = try JSONDecoder().decode(Value.self, from: Data(json.utf8))
        for value in try decode(Value.self, from: json) {
            #expect(value == foundation, "\(json)", sourceLocation: sourceLocation)
        }
    }

    /// Checks that `json` fails to decode both ways, as it does with
    /// `JSONDecoder` (which, on Linux, accepts a trailing comma in an object;
    /// the record decoder reads JSON strictly).
    static func expectFailure<Value: Codable & Sendable>(
        _ type: Value.Type, _ json: String, foundationFails: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        if foundationFails {
            #expect(throws: (any Error).self, "Foundation accepts \(json)", sourceLocation: sourceLocation) {
                try JSONDecoder().decode(Value.self, from: Data(json.utf8))
            }
        }
        #expect(throws: DecodingError.self, "\(json)", sourceLocation: sourceLocation) {
            _ = try decode(Value.self, from: json)
        }
    }

    struct Scalars: Codable, Hashable, Sendable {
        var bool: Bool
        var int: Int
        var int8: Int8
        var uint64: UInt64
        var double: Double
        var float: Float
        var string: String
        var date: Date
        var data: Data
        var uuid: UUID
        var url: URL
        var decimal: Decimal
        var optional: Int?
        var absent: String?
        var null: Double?
    }

    @Test func everyValueType() throws {
        let json = #"""
            {"bool":true,"int":-42,"int8":-128,"uint64":18446744073709551615,"double":-1.5e-7,"float":0.1,
             "string":"é \"q\" \\ \/ \n \u00e9 \ud83c\udff3\ufe0f","date":123456.789,"data":"AAEC/w==",
             "uuid":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f","url":"https:\/\/example.com\/a?b=c",
             "decimal":12345678901234567890.123456789,"optional":7,"null":null}
            """#
        try Self.expectAgreement(Scalars.self, json)
        let decoded = try Self.decode(Scalars.self, from: json)[1]
        #expect(decoded.double.bitPattern == (-1.5e-7).bitPattern)
        #expect(decoded.absent == nil && decoded.null == nil && decoded.optional == 7)
    }

    @Test func numbersReadExactly() throws {
        var random = WireRandom(seed: 41)
        for value in FastNumberTests.decimalLikeDoubles(count: 2_000, seed: 42) + [
            -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
        ] {
            let text = value.description.replacingOccurrences(of: "e+", with: "e")
            let decoded = try Self.decode([Double].self, from: "[\(text), \(Int.random(in: -9...9, using: &random))]")
            for list in decoded { #expect(list[0].bitPattern == value.bitPattern, "\(text)") }
        }
        try Self.expectAgreement(
            [Int].self,
            "[1, -0, 9223372036854775807, -9223372036854775808, 1.0, 1e2, 25E-1]".replacingOccurrences(
                of: ", 25E-1", with: ""))
        try Self.expectAgreement([UInt8].self, "[0, 255, 2.0]")
        try Self.expectAgreement([Float].self, "[0.1, 3.4028234663852886e38, 1e-45]")
        Self.expectFailure([Int8].self, "[128]")
        Self.expectFailure([Int].self, "[1.5]")
        Self.expectFailure([UInt].self, "[-1]")
        Self.expectFailure([Int].self, "[9223372036854775808]")
        Self.expectFailure([Float].self, "[1e39]")
    }

    struct Node: Codable, Hashable, Sendable {
        var name: String
        var children: [Node]
        var attributes: [String: Int]
    }

    @Test func nestedContainersDictionariesAndDeepNesting() throws {
        // A chain 60 deep, with a few siblings at each level.
        var node = Node(name: "leaf", children: [], attributes: [:])
        for depth in 0..<60 {
            let sibling = Node(name: "s\(depth)", children: [], attributes: ["s": -depth])
            node = Node(name: "n\(depth)", children: [node, sibling], attributes: ["d": depth, "e": 2])
        }
        let json = String(decoding: try JSONEncoder().encode(node), as: UTF8.self)
        try Self.expectAgreement(Node.self, json)
        let wide = Dictionary(uniqueKeysWithValues: (0..<200).map { ("key \($0) \u{e9}", $0) })
        try Self.expectAgreement([String: Int].self, String(decoding: try JSONEncoder().encode(wide), as: UTF8.self))
        try Self.expectAgreement([[String: [Int]]].self, #"[{"a":[1,2],"b":[]},{},{"c":[3]}]"#)
        // Arrays nested 500 deep are fine; deeper than the limit is refused.
        let deep = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        #expect(throws: Never.self) { _ = try Self.decode(AnyJSON.self, from: deep) }
        let tooDeep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: DecodingError.self) { _ = try Self.decode(AnyJSON.self, from: tooDeep) }
    }

    /// Any JSON value, decoded through every kind of container.
    enum AnyJSON: Codable, Hashable, Sendable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([AnyJSON])
        case object([String: AnyJSON])

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            if let keyed = try? decoder.container(keyedBy: Key.self) {
                var object: [String: AnyJSON] = [:]
                for key in keyed.allKeys { object[key.stringValue] = try keyed.decode(AnyJSON.self, forKey: key) }
                self = .object(object)
            } else if var unkeyed = try? decoder.unkeyedContainer() {
                var array: [AnyJSON] = []
                while !unkeyed.isAtEnd { array.append(try unkeyed.decode(AnyJSON.self)) }
                self = .array(array)
            } else {
                let single = try decoder.singleValueContainer()
                if single.decodeNil() {
                    self = .null
                } else if let bool = try? single.decode(Bool.self) {
                    self = .bool(bool)
                } else if let number = try? single.decode(Double.self) {
                    self = .number(number)
                } else {
                    self = .string(try single.decode(String.self))
                }
            }
        }

        func encode(to encoder: any Encoder) throws {
            var single = encoder.singleValueContainer()
            switch self {
            case .null: try single.encodeNil()
            case .bool(let v): try single.encode(v)
            case .number(let v): try single.encode(v)
            case .string(let v): try single.encode(v)
            case .array(let v): try single.encode(v)
            case .object(let v): try single.encode(v)
            }
        }
    }

    @Test func anyJSONAgreesWithFoundation() throws {
        let texts = [
            #"{"a":1,"b":[true,false,null,"x",{"c":-0.5}],"d":{},"e":[]}"#,
            #"  { "spaced" :  [ 1 , 2 ] , "\u0061" : "escaped key" }  "#,
            #"[1, "two", 3.5e1, {"four": [4]}, null]"#,
        ]
        for text in texts { try Self.expectAgreement(AnyJSON.self, text) }
    }

    /// A key given twice takes its last value, as the record decoder always
    /// did (Foundation on Linux takes the first).
    @Test func theLastOfDuplicateKeysWins() throws {
        for value in try Self.decode(AnyJSON.self, from: #"{"dup":1,"dup":2,"other":3,"dup":4}"#) {
            #expect(value == .object(["dup": .number(4), "other": .number(3)]))
        }
        for value in try Self.decode(Pair.self, from: #"{"a":1,"b":"first","a":2,"b":"last"}"#) {
            #expect(value == Pair(a: 2, b: "last"))
        }
        // Past 16 members the lookup is by hash; the last still wins.
        let many = (0..<20).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        for value in try Self.decode([String: Int].self, from: "{\(many),\"k3\":33}") {
            #expect(value["k3"] == 33 && value.count == 20)
        }
        for value in try Self.decode([String: Int].self, from: #"{"ab":1,"ba":2,"a\u0062c":3,"abc":4}"#) {
            #expect(value == ["ab": 1, "ba": 2, "abc": 4])
        }
    }

    struct Pair: Codable, Hashable, Sendable {
        var a: Int
        var b: String
    }

    @Test func keysInAnyOrderEscapedDuplicatedOrUnknown() throws {
        try Self.expectAgreement(Pair.self, #"{"b":"x","a":1}"#)
        try Self.expectAgreement(Pair.self, #"{"\u0061":1,"b":"\u0078","extra":[1,{"deep":true}]}"#)
        try Self.expectAgreement(Pair.self, "\n\t{ \"a\" : 1 , \"b\" : \"x\" }\r\n")
        // Keys that differ only after the bytes a length check sees.
        try Self.expectAgreement([String: Int].self, #"{"ab":1,"ba":2,"a\u0062d":3,"abc":4}"#)
    }

    @Test(arguments: [
        #"{"a":1,"b":"x""#, #"{"a":1,"b":"x",}"#, #"{"a":1 "b":"x"}"#, #"{"a":01,"b":"x"}"#, #"{"a":1,"b":"x"} x"#,
        #"{"a":1,"b":"\q"}"#, #"{"a":1,"b":"\ud800"}"#, #"{"a":1,"b":'x'}"#, #"{"a":NaN,"b":"x"}"#, #""#,
        #"{"a":1,"b":"x"]"#,
    ])
    func malformedJSONIsDataCorrupted(_ text: String) throws {
        Self.expectFailure(Pair.self, text, foundationFails: !text.hasSuffix(",}"))
        do {
            _ = try Self.decode(Pair.self, from: text)
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.codingPath.map(\.stringValue) == ["value"])
            #expect(context.debugDescription.contains("does not hold valid JSON"))
        }
    }

    @Test func invalidUTF8IsDataCorrupted() throws {
        var bytes = Array(#"{"a":1,"b":"xy"}"#.utf8)
        bytes[bytes.firstIndex(of: UInt8(ascii: "y"))!] = 0xFF
        let record = Record(recordType: "Holder<Pair>", recordName: "h", fields: ["value": .bytes(Data(bytes))])
        #expect(throws: DecodingError.self) { try RecordDecoder().decode(Holder<Pair>.self, from: record) }
        var keyBytes = Array(#"{"a":1,"b":"x","\#u{e9}":2}"#.utf8)
        keyBytes[keyBytes.count - 5] = 0xC3
        let keyRecord = Record(recordType: "Holder<Pair>", recordName: "h", fields: ["value": .bytes(Data(keyBytes))])
        #expect(throws: DecodingError.self) { try RecordDecoder().decode(Holder<Pair>.self, from: keyRecord) }
    }

    @Test func wrongShapesAndTypesAreTypeMismatchesNamingThePath() throws {
        Self.expectFailure(Pair.self, #"{"a":"1","b":"x"}"#)
        Self.expectFailure(Pair.self, #"{"a":1,"b":2}"#)
        Self.expectFailure(Pair.self, #"[1,"x"]"#)
        Self.expectFailure([Pair].self, #"{"a":1,"b":"x"}"#)
        Self.expectFailure(Pair.self, #"{"b":"x"}"#)
        Self.expectFailure(Pair.self, #"{"a":null,"b":"x"}"#)
        do {
            _ = try Self.decode([Pair].self, from: #"[{"a":1,"b":"x"},{"a":true,"b":"y"}]"#)
            Issue.record("decoding should fail")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["value", "Index 1", "a"])
            #expect(context.debugDescription.contains("a boolean"))
        }
        do {
            _ = try Self.decode(Pair.self, from: #"{"b":"x"}"#)
            Issue.record("decoding should fail")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "a")
        }
    }

    struct Probe: Codable, Sendable {
        var keys: [String]
        var containsA: Bool
        var containsZ: Bool
        var bIsNull: Bool
        var superValue: Int
        var nested: Int
        var listCount: Int?

        enum CodingKeys: String, CodingKey { case a, b, c, list }
        enum Inner: String, CodingKey { case x }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyJSON.Key.self)
            keys = container.allKeys.map(\.stringValue)
            containsA = container.contains(AnyJSON.Key(stringValue: "a"))
            containsZ = container.contains(AnyJSON.Key(stringValue: "z"))
            bIsNull = try container.decodeNil(forKey: AnyJSON.Key(stringValue: "b"))
            superValue = try container.superDecoder(forKey: AnyJSON.Key(stringValue: "a")).singleValueContainer()
                .decode(Int.self)
            nested = try container.nestedContainer(keyedBy: Inner.self, forKey: AnyJSON.Key(stringValue: "c"))
                .decode(Int.self, forKey: .x)
            listCount = try container.nestedUnkeyedContainer(forKey: AnyJSON.Key(stringValue: "list")).count
        }

        func encode(to encoder: any Encoder) throws {}
    }

    @Test func containerOperations() throws {
        let json = #"{"a":5,"b":null,"c":{"x":9},"list":[1,2,3],"a":6}"#
        for probe in try Self.decode(Probe.self, from: json) {
            #expect(probe.keys == ["a", "b", "c", "list", "a"])
            #expect(probe.containsA && !probe.containsZ && probe.bIsNull)
            #expect(probe.superValue == 6)
            #expect(probe.nested == 9)
            #expect(probe.listCount == 3)
        }
    }

    @Test func embeddedNumbersAndStringsReadInPlace() throws {
        let text = Array(#"{"n":-12.5e1,"i":-9007199254740993,"s":"a\"b","t":true}"#.utf8)
        var members: [EmbeddedJSONObject.Member] = []
        let root = try EmbeddedJSON.open(text, members: &members)
        #expect(root.kind == .object && members.count == 4)
        let object = EmbeddedJSONObject(text: text, members: members)
        #expect(object.value(forKey: "n")?.double == -125)
        #expect(object.value(forKey: "i")?.exactInteger(Int64.self) == -9_007_199_254_740_993)
        #expect(object.value(forKey: "i")?.exactInteger(Int32.self) == nil)
        #expect(object.value(forKey: "s")?.string == "a\"b")
        #expect(object.value(forKey: "t")?.bool == true)
        #expect(object.value(forKey: "missing") == nil)
    }
}
