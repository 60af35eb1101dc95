import Foundation
import Testing

@testable import CloudCodable

/// Lists decode as arrays of the matching Swift type straight from the list
/// field, and a list that does not fit its property still fails with the
/// error that names the element, whichever way it was read.
@Suite("List fields")
struct ListDecodingTests {
    struct Lists: CloudCodable {
        var cloudIdentifier: String { "lists" }
        var cloudMetadata: RecordMetadata?
        var strings: [String] = ["a", "b"]
        var uuids: [UUID] = [UUID(), UUID()]
        var ints: [Int] = [1, -2, .max, .min]
        var int64s: [Int64] = [3, -4]
        var bools: [Bool] = [true, false, true]
        var doubles: [Double] = [0.5, -1e300]
        var dates: [Date] = [Date(timeIntervalSince1970: 1.234), Date(timeIntervalSince1970: -5)]
        var datas: [Data] = [Data([1, 2, 3]), Data()]
        var empty: [Int] = []
    }

    /// A record of one field.
    struct One<Value: Decodable>: Decodable { var value: Value }

    /// Decodes `Value` from a record whose only field `value` is `field`.
    static func decode<Value: Decodable>(_: Value.Type, from field: FieldValue) throws -> Value {
        let fields: RecordFields = ["value": field]
        return try RecordDecoder().decode(One<Value>.self, fromFields: fields).value
    }

    @Test("every list type round-trips, in a record and through the wire")
    func roundTrips() throws {
        let lists = Lists()
        let record = try RecordEncoder().encode(lists)
        for decoded in [
            try RecordDecoder().decode(Lists.self, from: record),
            try RecordDecoder().decode(Lists.self, from: WireFormat.decodeRecord(from: WireFormat.encode(record))),
        ] {
            #expect(decoded.strings == lists.strings)
            #expect(decoded.uuids == lists.uuids)
            #expect(decoded.ints == lists.ints)
            #expect(decoded.int64s == lists.int64s)
            #expect(decoded.bools == lists.bools)
            #expect(decoded.doubles == lists.doubles)
            #expect(decoded.dates == lists.dates)
            #expect(decoded.datas == lists.datas)
            #expect(decoded.empty.isEmpty)
        }
    }

    @Test("lists of another field type convert as their elements would")
    func conversions() throws {
        // Any non-zero INT64 is true, as for a single Bool field.
        #expect(try Self.decode([Bool].self, from: .int64List([0, 2, -1])) == [false, true, true])
        #expect(try Self.decode([Double].self, from: .int64List([1, -2])) == [1, -2])
        #expect(try Self.decode([Int].self, from: .doubleList([3, -4])) == [3, -4])
        #expect(try Self.decode([Int8].self, from: .int64List([1, -128])) == [1, -128])
        let uuid = UUID()
        #expect(try Self.decode([UUID].self, from: .stringList([uuid.uuidString.lowercased()])) == [uuid])
    }

    @Test("an element the property cannot hold is an error naming its index")
    func badElements() throws {
        func path(_ body: () throws -> Void) -> [String]? {
            do {
                try body()
                return nil
            } catch let DecodingError.dataCorrupted(context), let DecodingError.typeMismatch(_, context) {
                return context.codingPath.map(\.stringValue)
            } catch {
                return ["unexpected \(error)"]
            }
        }
        let uuidPath = path { _ = try Self.decode([UUID].self, from: .stringList([UUID().uuidString, "nope"])) }
        #expect(uuidPath == ["value", "Index 1"])
        let int8Path = path { _ = try Self.decode([Int8].self, from: .int64List([1, 300])) }
        #expect(int8Path == ["value", "Index 1"])
        let intPath = path { _ = try Self.decode([Int].self, from: .doubleList([1, 2.5])) }
        #expect(intPath == ["value", "Index 1"])
        let datePath = path { _ = try Self.decode([Date].self, from: .stringList(["yesterday"])) }
        #expect(datePath == ["value", "Index 0"])
        let dataPath = path { _ = try Self.decode([Data].self, from: .int64List([1])) }
        #expect(dataPath == ["value", "Index 0"])
    }
}
