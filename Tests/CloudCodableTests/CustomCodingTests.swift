import Foundation
import Testing

@testable import CloudCodable

/// A model whose hand-written coding uses every kind of container.
struct Handwritten: CloudCodable, Equatable {
    var cloudIdentifier: String { "hand" }
    var cloudMetadata: RecordMetadata?
    var title: String
    var point: (x: Int, y: Int)
    var values: [Int]
    var mixed: (String, Double, Bool)
    var wrapped: String
    var parent: String

    enum CodingKeys: String, CodingKey { case title, point, values, mixed, wrapped, parent }
    enum PointKeys: String, CodingKey { case x, y }
    struct Wrapper: Codable {
        var inner: String
        init(inner: String) { self.inner = inner }
        init(from decoder: any Decoder) throws { inner = try decoder.singleValueContainer().decode(String.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(inner)
        }
    }

    init(
        title: String, point: (Int, Int), values: [Int], mixed: (String, Double, Bool), wrapped: String, parent: String
    ) {
        self.title = title
        self.point = point
        self.values = values
        self.mixed = mixed
        self.wrapped = wrapped
        self.parent = parent
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var point = container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
        var values = container.nestedUnkeyedContainer(forKey: .values)
        var mixed = container.nestedUnkeyedContainer(forKey: .mixed)
        // Written after the nested containers were created, and interleaved.
        try container.encode(title, forKey: .title)
        try point.encode(self.point.x, forKey: .x)
        for v in self.values { try values.encode(v) }
        try point.encode(self.point.y, forKey: .y)
        try mixed.encode(self.mixed.0)
        try mixed.encode(self.mixed.1)
        try mixed.encode(self.mixed.2)
        try container.encode(Wrapper(inner: wrapped), forKey: .wrapped)
        var parentContainer = container.superEncoder(forKey: .parent).singleValueContainer()
        try parentContainer.encode(parent)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = try container.decode(String.self, forKey: .title)
        let point = try container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
        self.point = (try point.decode(Int.self, forKey: .x), try point.decode(Int.self, forKey: .y))
        var values = try container.nestedUnkeyedContainer(forKey: .values)
        var collected: [Int] = []
        while !values.isAtEnd { collected.append(try values.decode(Int.self)) }
        self.values = collected
        var mixed = try container.nestedUnkeyedContainer(forKey: .mixed)
        self.mixed = (try mixed.decode(String.self), try mixed.decode(Double.self), try mixed.decode(Bool.self))
        wrapped = try container.decode(Wrapper.self, forKey: .wrapped).inner
        parent = try container.superDecoder(forKey: .parent).singleValueContainer().decode(String.self)
    }

    static func == (a: Self, b: Self) -> Bool {
        a.title == b.title && a.point == b.point && a.values == b.values && a.mixed == b.mixed
            && a.wrapped == b.wrapped && a.parent == b.parent
    }
}

/// A nested value whose coding keeps a container and writes to it after a
/// sibling, which forces the encoder off its streaming path.
struct OutOfOrder: Codable, Hashable {
    var a: Int
    var b: [String: Int]
    var c: String

    enum CodingKeys: String, CodingKey { case a, b, c }

    init(a: Int, b: [String: Int], c: String) {
        self.a = a
        self.b = b
        self.c = c
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var nested = container.nestedContainer(keyedBy: AnyKey.self, forKey: .b)
        try container.encode(a, forKey: .a)
        for (k, v) in b.sorted(by: { $0.key < $1.key }) { try nested.encode(v, forKey: AnyKey(k)) }
        try container.encode(c, forKey: .c)
        try container.encode(c + "!", forKey: .c)  // the last write of a key wins
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ s: String) { stringValue = s }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

struct HoldsOutOfOrder: CloudCodable, Hashable {
    var cloudIdentifier: String { "o" }
    var cloudMetadata: RecordMetadata?
    var value: OutOfOrder
    var many: [String: String]
}

@Suite("Hand-written Codable conformances")
struct CustomCodingTests {
    @Test("nested keyed, unkeyed, single-value and super containers round-trip")
    func handwritten() throws {
        let value = Handwritten(
            title: "t", point: (3, -4), values: [1, 2, 3], mixed: ("s", 2.5, true), wrapped: "w", parent: "p")
        let record = try RecordEncoder().encode(value)
        #expect(record["title"] == .string("t"))
        #expect(record["values"] == .int64List([1, 2, 3]))
        #expect(record["wrapped"] == .string("w"))
        #expect(record["parent"] == .string("p"))
        #expect(record["mixed"]?.type == .bytes)
        #expect(record["point"]?.type == .bytes)
        #expect(try RecordDecoder().decode(Handwritten.self, from: record) == value)
    }

    @Test("containers used out of order and repeated keys encode like JSONEncoder")
    func outOfOrder() throws {
        let many = Dictionary(uniqueKeysWithValues: (0..<100).map { ("k\($0)", "v\($0)") })
        let value = HoldsOutOfOrder(value: OutOfOrder(a: 1, b: ["x": 1, "y": 2], c: "c"), many: many)
        let record = try RecordEncoder().encode(value)
        let back = try RecordDecoder().decode(HoldsOutOfOrder.self, from: record)
        #expect(back.value == OutOfOrder(a: 1, b: ["x": 1, "y": 2], c: "c!"))
        #expect(back.many == many)
        guard case .bytes(let json)? = record["value"] else {
            Issue.record("value should be BYTES")
            return
        }
        #expect(try JSONDecoder().decode(OutOfOrder.self, from: json) == back.value)
    }

    @Test("a record's top level must be keyed: other shapes are errors, not traps")
    func topLevelShapes() throws {
        struct Unkeyed: CloudCodable {
            var cloudIdentifier: String { "u" }
            var cloudMetadata: RecordMetadata?
            init() {}
            init(from decoder: any Decoder) throws { _ = try decoder.unkeyedContainer() }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.unkeyedContainer()
                try container.encode(1)
            }
        }
        struct Single: CloudCodable {
            var cloudIdentifier: String { "s" }
            var cloudMetadata: RecordMetadata?
            init() {}
            init(from decoder: any Decoder) throws { _ = try decoder.singleValueContainer().decode(Int.self) }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(1)
            }
        }
        #expect(throws: EncodingError.self) { try RecordEncoder().encode(Unkeyed()) }
        #expect(throws: EncodingError.self) { try RecordEncoder().encode(Single()) }
        let record = Record(recordType: "Unkeyed", recordName: "u")
        #expect(throws: DecodingError.self) { try RecordDecoder().decode(Unkeyed.self, from: record) }
        let single = Record(recordType: "Single", recordName: "s")
        #expect(throws: DecodingError.self) { try RecordDecoder().decode(Single.self, from: single) }
    }

    @Test("a wrapper that forwards its single value to a keyed value becomes the record")
    func forwardingWrapper() throws {
        struct Forward: CloudCodable, Equatable {
            var cloudIdentifier: String { "f" }
            var cloudMetadata: RecordMetadata?
            var inner: Landmark
            init(inner: Landmark) { self.inner = inner }
            init(from decoder: any Decoder) throws { inner = try decoder.singleValueContainer().decode(Landmark.self) }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(inner)
            }
        }
        let record = try RecordEncoder().encode(Forward(inner: .sample()))
        #expect(record["name"] == .string("Golden Gate Bridge"))
        var decodable = record
        decodable.recordType = "Forward"
        #expect(try RecordDecoder().decode(Forward.self, from: decodable).inner == Landmark.sample())
    }
}

/// Values whose `encode(to:)` starts with an unkeyed container: the stream
/// encoder hands them to the tree encoder at once.
@Suite("Unkeyed nested values")
struct UnkeyedNestedValueTests {
    struct Point: Codable, Hashable {
        var x: Double
        var y: Double
    }

    /// Appends to the same unkeyed container twice, as some hand-written
    /// conformances do for a header and a body.
    struct TwoPasses: Codable, Hashable {
        var head: [Int]
        var tail: [Int]
        init(head: [Int], tail: [Int]) {
            self.head = head
            self.tail = tail
        }
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            var all: [Int] = []
            while !container.isAtEnd { all.append(try container.decode(Int.self)) }
            head = Array(all.prefix(2))
            tail = Array(all.dropFirst(2))
        }
        func encode(to encoder: any Encoder) throws {
            var first = encoder.unkeyedContainer()
            for value in head { try first.encode(value) }
            var second = encoder.unkeyedContainer()
            for value in tail { try second.encode(value) }
        }
    }

    struct Mixed: Codable, Hashable {
        var number: Int
        var text: String
        init(number: Int, text: String) {
            self.number = number
            self.text = text
        }
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            number = try container.decode(Int.self)
            text = try container.decode(String.self)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(number)
            try container.encode(text)
        }
    }

    struct Holder: CloudCodable, Hashable {
        var cloudIdentifier: String { "h" }
        var cloudMetadata: RecordMetadata?
        var tags: Set<String>
        var points: [Point]
        var grid: [[Int]]
        var passes: TwoPasses
        var mixed: Mixed
        var emptySet: Set<Int>
    }

    @Test("sets become lists, other unkeyed values JSON, and all of them round-trip")
    func shapes() throws {
        let holder = Holder(
            tags: ["b", "a", "c"], points: [Point(x: 1, y: -2.5), Point(x: 0, y: 3)], grid: [[1, 2], [], [3]],
            passes: TwoPasses(head: [1, 2], tail: [3, 4, 5]), mixed: Mixed(number: 7, text: "seven"), emptySet: [])
        let record = try RecordEncoder().encode(holder)
        guard case .stringList(let tags)? = record["tags"] else {
            Issue.record("tags should be a STRING_LIST, not \(String(describing: record["tags"]))")
            return
        }
        #expect(Set(tags) == holder.tags)
        #expect(record["passes"] == .int64List([1, 2, 3, 4, 5]))
        for name in ["points", "grid", "mixed"] {
            #expect(record[name]?.type == .bytes, "\(name)")
        }
        if case .bytes(let json)? = record["mixed"] {
            #expect(String(decoding: json, as: UTF8.self) == #"[7,"seven"]"#)
        }
        #expect(try RecordDecoder().decode(Holder.self, from: record) == holder)
        let wire = try WireFormat.decodeRecord(from: WireFormat.encode(record))
        #expect(try RecordDecoder().decode(Holder.self, from: wire) == holder)
    }
}

/// The stream decides how an unkeyed nested value is written from its
/// first element; whatever it decides, the field must be what the tree
/// encoder alone makes of the value.
@Suite("Unkeyed nested values against the tree encoder")
struct UnkeyedAgainstTreeTests {
    enum Mood: String, Codable, Sendable { case happy, calm }
    struct Point: Codable, Sendable { var x: Double, y: Double }

    /// Elements of several shapes, in the order given.
    struct Shapes: Encodable, Sendable {
        enum Key: String, CodingKey { case a }
        enum Element: Sendable {
            case int(Int)
            case text(String)
            case point(Point)
            case keyed, unkeyed, null
        }
        var elements: [Element]
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            for element in elements {
                switch element {
                case .int(let v): try container.encode(v)
                case .text(let v): try container.encode(v)
                case .point(let v): try container.encode(v)
                case .null: try container.encodeNil()
                case .keyed:
                    var nested = container.nestedContainer(keyedBy: Key.self)
                    try nested.encode(1, forKey: .a)
                case .unkeyed:
                    var nested = container.nestedUnkeyedContainer()
                    try nested.encode("n")
                }
            }
        }
    }

    /// A model with one field holding `value`.
    struct One<Value: Encodable & Sendable>: CloudCodable {
        var cloudIdentifier: String { "one" }
        var cloudMetadata: RecordMetadata?
        var value: Value
        init(_ value: Value) { self.value = value }
        init(from decoder: any Decoder) throws {
            throw DecodingError.valueNotFound(Value.self, .init(codingPath: [], debugDescription: "encode only"))
        }
    }

    static func check<Value: Encodable & Sendable>(_ value: Value, _ comment: Comment? = nil) throws {
        let expected = try TreeEncoder.node(for: value, path: CodingPath(AnyCodingKey("value")))
            .fieldValue(codingPath: [AnyCodingKey("value")])
        let record = try RecordEncoder().encode(One(value))
        #expect(record["value"] == expected, comment)
    }

    @Test("every first element gives the field the tree gives")
    func sameAsTree() throws {
        try Self.check([Point(x: 1.5, y: 2), Point(x: -3, y: 0.25)])
        try Self.check([Point]())
        try Self.check([Mood.happy, .calm, .happy])
        try Self.check([Int8(1), -2, 3])
        try Self.check([Float(1.5), 2])
        try Self.check([1, nil, 3] as [Int?])
        try Self.check([nil, 2] as [Int?])
        try Self.check(Set([Mood.calm]))
        try Self.check([[1, 2], [3]] as [[Int]])
        try Self.check([["a": 1], [:]] as [[String: Int]])
        let shapes: [[Shapes.Element]] = [
            [.point(Point(x: 1, y: 2)), .int(3)],
            [.int(3), .point(Point(x: 1, y: 2))],
            [.keyed, .int(1), .text("t")],
            [.unkeyed, .keyed],
            [.null, .point(Point(x: 0, y: 0))],
            [.text("a"), .text("b")],
            [],
        ]
        for elements in shapes {
            try Self.check(Shapes(elements: elements), "\(elements)")
        }
    }

    /// Keeps the root unkeyed container of its first encoding and writes
    /// to it while a later value is being encoded.
    struct KeepsRoot: Encodable, Sendable {
        final class Kept: @unchecked Sendable {
            // Safety: the test touches it from one thread.
            var container: (any UnkeyedEncodingContainer)?
        }
        nonisolated(unsafe) static var kept = Kept()
        var points: [Point]
        var writeThroughKept: Bool
        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            for point in points { try container.encode(point) }
            if writeThroughKept {
                try Self.kept.container?.encode(Point(x: 99, y: 99))
            } else {
                Self.kept.container = container
            }
        }
    }

    struct TwoFields: CloudCodable {
        var cloudIdentifier: String { "two" }
        var cloudMetadata: RecordMetadata?
        var first: KeepsRoot
        var second: KeepsRoot
        init(from decoder: any Decoder) throws {
            throw DecodingError.valueNotFound(Self.self, .init(codingPath: [], debugDescription: "encode only"))
        }
        init(first: KeepsRoot, second: KeepsRoot) {
            self.first = first
            self.second = second
        }
    }

    @Test("a root container kept from an earlier value never writes into a later one")
    func keptRootContainer() throws {
        KeepsRoot.kept = .init()
        let model = TwoFields(
            first: KeepsRoot(points: [Point(x: 1, y: 1)], writeThroughKept: false),
            second: KeepsRoot(points: [Point(x: 2, y: 2)], writeThroughKept: true))
        let record = try RecordEncoder().encode(model)
        KeepsRoot.kept = .init()
        for (name, x) in [("first", 1.0), ("second", 2.0)] {
            guard case .bytes(let json)? = record[name] else {
                Issue.record("\(name) should be BYTES")
                continue
            }
            let points = try JSONDecoder().decode([Point].self, from: json)
            #expect(points.map(\.x) == [x], "\(name)")
        }
    }
}

/// A nested value that keeps its keyed container: a later nested value of
/// the same record, or of a later record, is written by the same stream
/// encoder, and what the kept container writes must land in neither.
@Suite("Kept keyed containers of nested values", .serialized)
struct KeptNestedContainerTests {
    struct KeepsKeyed: Encodable, Sendable {
        final class Kept: @unchecked Sendable {
            // Safety: the tests touch it from one thread.
            var container: KeyedEncodingContainer<Key>?
        }
        enum Key: String, CodingKey { case x, y }
        nonisolated(unsafe) static var kept = Kept()
        var x: Int
        var writeThroughKept: Bool
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(x, forKey: .x)
            if writeThroughKept {
                try Self.kept.container?.encode(99, forKey: .y)
            } else {
                Self.kept.container = container
            }
        }
    }

    struct TwoFields: CloudCodable {
        var cloudIdentifier: String { "two" }
        var cloudMetadata: RecordMetadata?
        var first: KeepsKeyed
        var second: KeepsKeyed
        init(from decoder: any Decoder) throws {
            throw DecodingError.valueNotFound(Self.self, .init(codingPath: [], debugDescription: "encode only"))
        }
        init(first: KeepsKeyed, second: KeepsKeyed) {
            self.first = first
            self.second = second
        }
    }

    /// The JSON object in the BYTES field `name` of `record`.
    private static func object(_ name: String, in record: Record) throws -> [String: Int] {
        guard case .bytes(let json)? = record[name] else {
            Issue.record("\(name) should be BYTES")
            return [:]
        }
        return try JSONDecoder().decode([String: Int].self, from: json)
    }

    @Test("a keyed container kept from an earlier value never writes into a later one")
    func keptInOneRecord() throws {
        KeepsKeyed.kept = .init()
        defer { KeepsKeyed.kept = .init() }
        let record = try RecordEncoder().encode(
            TwoFields(
                first: KeepsKeyed(x: 1, writeThroughKept: false), second: KeepsKeyed(x: 2, writeThroughKept: true)))
        #expect(try Self.object("first", in: record) == ["x": 1])
        #expect(try Self.object("second", in: record) == ["x": 2])
    }

    @Test("a keyed container kept from an earlier record never writes into a later one")
    func keptAcrossRecords() throws {
        KeepsKeyed.kept = .init()
        defer { KeepsKeyed.kept = .init() }
        let model = KeepsKeyed(x: 1, writeThroughKept: false)
        _ = try RecordEncoder().encode(TwoFields(first: model, second: model))
        // Written between records: goes nowhere.
        try KeepsKeyed.kept.container?.encode(98, forKey: .y)
        let record = try RecordEncoder().encode(
            TwoFields(first: KeepsKeyed(x: 3, writeThroughKept: true), second: KeepsKeyed(x: 4, writeThroughKept: true))
        )
        #expect(try Self.object("first", in: record) == ["x": 3])
        #expect(try Self.object("second", in: record) == ["x": 4])
    }
}
