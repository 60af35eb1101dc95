import Foundation
import Testing

@testable import CloudCodable

/// Equal values must encode to equal bytes: the default merge compares
/// encoded fields, and a dictionary's iteration order differs between equal
/// dictionaries (and between runs).
@Suite("Canonical encoding")
struct CanonicalEncodingTests {
    struct Doc: CloudCodable, Identifiable {
        var id: String
        var title: String
        var counts: [String: Int]
        var cloudMetadata: RecordMetadata?
    }

    /// A model with one nested property, so that a test can compare its bytes.
    struct Holder<Value: Codable & Sendable>: CloudCodable, Identifiable {
        var id = "holder"
        var value: Value
        var cloudMetadata: RecordMetadata?
    }

    /// Declared out of alphabetical order.
    struct Unsorted: Codable, Equatable, Sendable {
        var zebra: Int
        var apple: String
        var mango: Bool
        var inner: Inner?

        struct Inner: Codable, Equatable, Sendable {
            var y: Double
            var x: Double
        }
    }

    /// The same entries as `pairs`, inserted in order and in reverse into a
    /// dictionary of another capacity, so that the two iterate differently.
    static func twoOrders<Value>(_ pairs: [(String, Value)]) -> ([String: Value], [String: Value]) {
        var forward = [String: Value]()
        for (key, value) in pairs { forward[key] = value }
        var backward = [String: Value](minimumCapacity: 4 * pairs.count + 64)
        for (key, value) in pairs.reversed() { backward[key] = value }
        return (forward, backward)
    }

    static func keys(_ count: Int) -> [String] { (0..<count).map { "k\($0)" } }

    func wireBytes<Value: Codable & Sendable>(_ value: Value) throws -> [UInt8] {
        try WireFormat.encode(RecordEncoder().encode(Holder(value: value)))
    }

    /// The nested JSON of `value`'s field.
    func json<Value: Codable & Sendable>(_ value: Value) throws -> String {
        let record = try RecordEncoder().encode(Holder(value: value))
        guard case .bytes(let data)? = record.fields["value"] else {
            Issue.record("the value is not a BYTES field: \(String(describing: record.fields["value"]))")
            return ""
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Expects `a` and `b` (equal, iterating differently) to encode alike.
    func expectSameBytes<Value: Codable & Sendable & Equatable>(
        _ a: Value, _ b: Value, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(a == b, sourceLocation: sourceLocation)
        #expect(try wireBytes(a) == wireBytes(b), sourceLocation: sourceLocation)
        #expect(try json(a) == json(b), sourceLocation: sourceLocation)
    }

    @Test("the default merge keeps the server's dictionary entry when the client changed only the title")
    func mergeOfUnchangedDictionary() {
        let pairs = Self.keys(20).enumerated().map { ($0.element, $0.offset) }
        let (ancestorCounts, clientCounts) = Self.twoOrders(pairs)
        var serverCounts = ancestorCounts
        serverCounts["k0"] = 100
        let ancestor = Doc(id: "d", title: "Draft", counts: ancestorCounts)
        let server = Doc(id: "d", title: "Draft", counts: serverCounts)
        let client = Doc(id: "d", title: "Final", counts: clientCounts)
        #expect(Array(clientCounts.keys) != Array(ancestorCounts.keys))

        let merged = Doc.resolveConflict(client: client, server: server, ancestor: ancestor)
        #expect(merged?.title == "Final")
        #expect(merged?.counts["k0"] == 100)
        #expect(merged?.counts == serverCounts)
    }

    @Test("[String: Int] built in different orders encodes to the same bytes")
    func flatDictionary() throws {
        let (a, b) = Self.twoOrders(Self.keys(20).enumerated().map { ($0.element, $0.offset) })
        #expect(Array(a.keys) != Array(b.keys))
        try expectSameBytes(a, b)
        #expect(try json(a).hasPrefix(#"{"k0":0,"k1":1,"k10":10,"k11":11,"#))
    }

    @Test("[String: [String: Double]] is sorted at every depth")
    func nestedDictionaries() throws {
        let inner = Self.keys(12).enumerated().map { ($0.element, Double($0.offset) / 4) }
        let (innerA, innerB) = Self.twoOrders(inner)
        let outer = Self.keys(10)
        let (a, _) = Self.twoOrders(outer.map { ($0, innerA) })
        let (_, b) = Self.twoOrders(outer.map { ($0, innerB) })
        try expectSameBytes(a, b)
        #expect(try json(a).hasPrefix(#"{"k0":{"k0":0.0,"k1":0.25,"k10":2.5,"#))
    }

    @Test("a struct nested in a dictionary is sorted, keys and members")
    func structInDictionary() throws {
        let pairs = Self.keys(10).enumerated().map {
            ($0.element, Unsorted(zebra: $0.offset, apple: "a", mango: true, inner: .init(y: 2, x: 1)))
        }
        let (a, b) = Self.twoOrders(pairs)
        try expectSameBytes(a, b)
        #expect(try json(a).hasPrefix(#"{"k0":{"apple":"a","inner":{"x":1.0,"y":2.0},"mango":true,"zebra":0},"#))
    }

    @Test("an array of dictionaries is sorted element by element")
    func arrayOfDictionaries() throws {
        let pairs = Self.keys(15).enumerated().map { ($0.element, $0.offset) }
        let (a, b) = Self.twoOrders(pairs)
        try expectSameBytes([a, b, a], [b, a, b])
        #expect(try json([b]).hasPrefix(#"[{"k0":0,"k1":1,"k10":10,"#))
    }

    @Test("keys that need escapes, and keys outside ASCII, sort by their UTF-8 bytes")
    func escapedKeys() throws {
        let names = ["quote\"d", "back\\slash", "line\nbreak", "é", "z", "Z", "a", "ab", "😀", "\u{FFFD}", "tab\t"]
        let (a, b) = Self.twoOrders(names.enumerated().map { ($0.element, $0.offset) })
        try expectSameBytes(a, b)
        let expected = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let decoded = try JSONSerialization.jsonObject(with: Data(json(a).utf8))
        #expect(decoded is [String: Int])
        // The keys appear in the text in byte order.
        let text = try json(b)
        let positions = try expected.map { key -> String.Index in
            let encoded = try #require(String(data: JSONEncoder().encode(key), encoding: .utf8))
            return try #require(text.range(of: encoded + ":")?.lowerBound)
        }
        #expect(positions == positions.sorted())
    }

    @Test("objects with more keys than the stream writes are sorted by the tree")
    func manyKeys() throws {
        let (a, b) = Self.twoOrders(Self.keys(40).enumerated().map { ($0.element, $0.offset) })
        try expectSameBytes(a, b)
        let (nestedA, nestedB) = (["outer": a], ["outer": b])
        try expectSameBytes(nestedA, nestedB)
        #expect(try json(a).hasPrefix(#"{"k0":0,"k1":1,"k10":10,"#))
    }

    @Test("struct keys are written sorted, not in declaration order")
    func structKeysSorted() throws {
        let value = Unsorted(zebra: 1, apple: "x", mango: false, inner: .init(y: 2.5, x: -1))
        #expect(try json(value) == #"{"apple":"x","inner":{"x":-1.0,"y":2.5},"mango":false,"zebra":1}"#)
        // The same through the tree: an array root is captured as a tree first.
        #expect(try json([value]) == #"[{"apple":"x","inner":{"x":-1.0,"y":2.5},"mango":false,"zebra":1}]"#)
    }

    @Test("the stream and the tree write what JSONEncoder writes with sorted keys")
    func matchesSortedKeys() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abAB0_z")
        func key() -> String {
            String((0..<Int.random(in: 0...4, using: &generator)).map { _ in alphabet.randomElement()! })
        }
        let foundation = JSONEncoder()
        foundation.outputFormatting = .sortedKeys
        for round in 0..<200 {
            var value: [String: [String: Int]] = [:]
            // Up to 50 keys: the stream (up to 32) and the tree.
            for _ in 0..<Int.random(in: 1...(round % 2 == 0 ? 12 : 50), using: &generator) {
                var inner: [String: Int] = [:]
                for _ in 0..<Int.random(in: 0...40, using: &generator) { inner[key()] = Int.random(in: -9...9) }
                value[key()] = inner
            }
            let expected = String(decoding: try foundation.encode(value), as: UTF8.self)
            #expect(try json(value) == expected)
        }
    }

    @Test("canonical JSON decodes to the same values with RecordDecoder and JSONDecoder")
    func roundTrip() throws {
        let pairs = Self.keys(40).enumerated().map {
            ($0.element, Unsorted(zebra: $0.offset, apple: "\u{e9}\"", mango: true, inner: .init(y: 2, x: 1)))
        }
        let (value, _) = Self.twoOrders(pairs)
        let model = Holder(value: ["a": value, "b\n": [:]])
        let record = try RecordEncoder().encode(model)
        let decoded = try RecordDecoder().decode(Holder<[String: [String: Unsorted]]>.self, from: record)
        #expect(decoded.value == model.value)
        let viaFoundation = try JSONDecoder().decode(
            [String: [String: Unsorted]].self, from: Data(json(model.value).utf8))
        #expect(viaFoundation == model.value)
        let plain = Unsorted(zebra: 3, apple: "b", mango: true, inner: nil)
        #expect(try JSONDecoder().decode(Unsorted.self, from: Data(json(plain).utf8)) == plain)
        let wire = try WireFormat.decodeRecord(from: WireFormat.encode(record))
        #expect(try RecordDecoder().decode(Holder<[String: [String: Unsorted]]>.self, from: wire).value == model.value)
    }

    @Test("equal sets of scalars encode to equal, sorted lists")
    func sets() throws {
        let words = Self.keys(30) + ["Z", "é", "a"]
        var a = Set<String>()
        for word in words { a.insert(word) }
        var b = Set<String>(minimumCapacity: 512)
        for word in words.reversed() { b.insert(word) }
        #expect(Array(a) != Array(b))
        #expect(try wireBytes(a) == wireBytes(b))
        let record = try RecordEncoder().encode(Holder(value: b))
        #expect(record.fields["value"] == .stringList(words.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }))
        #expect(try RecordDecoder().decode(Holder<Set<String>>.self, from: record).value == a)

        let numbers = Array(-20...20)
        var c = Set<Int>()
        for n in numbers { c.insert(n) }
        var d = Set<Int>(minimumCapacity: 512)
        for n in numbers.reversed() { d.insert(n) }
        #expect(try RecordEncoder().encode(Holder(value: d)).fields["value"] == .int64List(numbers.map(Int64.init)))
        #expect(try wireBytes(c) == wireBytes(d))

        // Inside nested JSON, by the stream and by the tree.
        try expectSameBytes(["s": a], ["s": b])
        try expectSameBytes([a], [b])
        #expect(try json(["s": d]) == "{\"s\":[\(numbers.map(String.init).joined(separator: ","))]}")
    }
}
