import Foundation
import Testing

@testable import CloudCodable

/// Fields kept as wire text (records that ``WireFormat`` read or that
/// ``RecordEncoder`` made) must behave exactly like fields kept as entries.
@Suite("Fields kept as wire text")
struct WireFieldsTests {
    /// The same fields as entries, in the same order.
    static func asEntries(_ fields: RecordFields) -> RecordFields {
        var entries = RecordFields()
        for (name, value) in fields { entries.appendUnchecked(value, forKey: name) }
        #expect(entries.wire == nil)
        return entries
    }

    /// A record whose fields have plain names and the types wire text keeps,
    /// so that the reader keeps them as text.
    static func keptRecord(_ random: inout WireRandom) -> Record {
        var record = WireSamples.record(&random)
        var fields = RecordFields()
        for i in 0..<Int.random(in: 0...40, using: &random) {
            let value: FieldValue
            switch Int.random(in: 0..<10, using: &random) {
            case 0: value = .string(WireSamples.string(&random))
            case 1: value = .int64(WireSamples.int64(&random))
            case 2: value = .double(WireSamples.double(&random))
            case 3: value = .timestamp(WireSamples.date(&random))
            case 4: value = .bytes(WireSamples.data(&random))
            case 5: value = .stringList(WireSamples.list(&random, WireSamples.string))
            case 6: value = .int64List(WireSamples.list(&random, WireSamples.int64))
            case 7: value = .doubleList(WireSamples.list(&random, WireSamples.double))
            case 8: value = .timestampList(WireSamples.list(&random, WireSamples.date))
            default: value = .bytesList(WireSamples.list(&random, WireSamples.data))
            }
            fields["field\(i)_\(Int.random(in: 0...9, using: &random))"] = value
        }
        record.fields = fields
        return record
    }

    /// Everything a caller can observe of `fields` matches `expected`.
    static func expectSame(_ fields: RecordFields, _ expected: RecordFields) throws {
        #expect(fields == expected)
        #expect(expected == fields)
        #expect(fields.hashValue == expected.hashValue)
        #expect(fields.count == expected.count)
        #expect(fields.keys == expected.keys)
        #expect(zip(fields.values, expected.values).allSatisfy { wireIdentical($0, $1) })
        #expect(fields.dictionary == expected.dictionary)
        #expect(fields.description == expected.description)
        for (name, value) in expected {
            let read = try #require(fields[name])
            #expect(wireIdentical(read, value))
        }
        #expect(fields["no such field"] == nil)
        // What rules read without reading values agrees with the values.
        for position in fields.indices {
            #expect(fields.name(at: position) == expected.name(at: position))
            #expect(fields.type(at: position) == expected.type(at: position))
            #expect(fields.type(at: position) == fields[position].value.type)
            #expect(fields.isEmptyList(at: position) == expected.isEmptyList(at: position))
            #expect(fields.isEmptyList(at: position) == (fields[position].value.listCount == 0))
        }
        #expect(WireFormat.encodedSize(ofFields: fields) == WireFormat.encodedSize(ofFields: expected))
        #expect(WireFormat.maximumEncodedSize(ofFields: fields) >= WireFormat.encodedSize(ofFields: fields))
        var writer = JSONWriter()
        try writer.writeFields(fields)
        var expectedWriter = JSONWriter()
        try expectedWriter.writeFields(expected)
        #expect(writer.bytes == expectedWriter.bytes)
        #expect(writer.count == WireFormat.encodedSize(ofFields: fields))
    }

    /// Changes to `fields` give what the same changes to `expected` give.
    static func expectSameChanges(_ fields: RecordFields, _ expected: RecordFields) throws {
        guard let (name, _) = expected.first else { return }
        var a = fields
        var b = expected
        a[name] = .string("changed")
        b[name] = .string("changed")
        try expectSame(a, b)
        #expect(a.wire == nil)
        #expect(fields.wire == nil || fields[name] != .string("changed"))  // the original is untouched

        a = fields
        b = expected
        #expect(a.removeValue(forKey: name) == b.removeValue(forKey: name))
        try expectSame(a, b)

        a = fields
        b = expected
        #expect(a.updateValue(.int64(7), forKey: "added") == b.updateValue(.int64(7), forKey: "added"))
        try expectSame(a, b)

        try expectSame(fields.mapValues { _ in .int64(1) }, expected.mapValues { _ in .int64(1) })

        a = fields
        a.removeAll()
        #expect(a.isEmpty && a == RecordFields())
    }

    @Test func readerKeepsCanonicalFieldsAsText() throws {
        let record = WireSamples.landmark()
        let read = try WireFormat.decodeRecord(from: WireFormat.encode(record))
        #expect(read.fields.wire != nil)
        #expect(wireIdentical(read, record))
        try Self.expectSame(read.fields, Self.asEntries(record.fields))
        try Self.expectSameChanges(read.fields, Self.asEntries(record.fields))
    }

    @Test func randomKeptRecordsBehaveLikeEntries() throws {
        var random = WireRandom(seed: 31)
        for _ in 0..<300 {
            let record = Self.keptRecord(&random)
            let bytes = try WireFormat.encode(record)
            let read = try WireFormat.decodeRecord(from: bytes)
            #expect(read.fields.wire != nil || record.fields.isEmpty)
            #expect(wireIdentical(read, record))
            #expect(try WireFormat.encode(read) == bytes)
            try Self.expectSame(read.fields, Self.asEntries(record.fields))
            try Self.expectSameChanges(read.fields, Self.asEntries(record.fields))
        }
    }

    @Test func everyRecordReadsTheSameWhetherKeptOrNot() throws {
        var random = WireRandom(seed: 32)
        var records = [WireSamples.everyType(), WireSamples.landmark()]
        for _ in 0..<300 { records.append(WireSamples.record(&random)) }
        for record in records {
            let bytes = try WireFormat.encode(record)
            let read = try WireFormat.decodeRecord(from: bytes)
            #expect(wireIdentical(read, record))
            #expect(try WireFormat.encode(read) == bytes)
            try Self.expectSame(read.fields, Self.asEntries(record.fields))
        }
    }

    /// Wire text the writer would not produce (spacing, escapes, numbers
    /// as strings, repeated names, nulls, types the table does not keep)
    /// reads the same as before: kept where it can be, entries otherwise.
    @Test(arguments: [
        (#"{"a":{"type":"STRING","value":"x"}, "b":{"type":"INT64","value":1}}"#, false),
        (#"{"a":{"type":"STRING","value":"x\u0041"},"b":{"type":"INT64","value":1}}"#, true),
        (#"{"a\u0041":{"type":"STRING","value":"x"}}"#, false),
        (#"{"a":{"type":"INT64","value":"12"}}"#, false),
        (#"{"a":{"type":"INT64","value":-0}}"#, true),
        (#"{"a":{"type":"INT64","value":1},"a":{"type":"INT64","value":2}}"#, false),
        (#"{"a":{"type":"INT64","value":null},"b":{"type":"INT64","value":2}}"#, false),
        (#"{"a":{"value":1,"type":"INT64"}}"#, false),
        (#"{"a":{"type":"DOUBLE","value":1E2}}"#, true),
        (#"{"a":{"type":"BYTES","value":"AQI"}}"#, true),
        (#"{"a":{"type":"BYTES","value":"A\/8="}}"#, false),
        (#"{"a":{"type":"STRING_LIST","value":[ "x" , "y" ]}}"#, true),
        (#"{"a":{"type":"REFERENCE","value":{"recordName":"r"}}}"#, false),
        (#"{"a":{"type":"LOCATION","value":{"latitude":1,"longitude":2}}}"#, false),
        (#"{}"#, true),
    ])
    func unusualFieldTextReadsAsBefore(_ fieldsText: String, kept: Bool) throws {
        let text = #"{"recordName":"r","recordType":"T","fields":"# + fieldsText + "}"
        let read = try WireFormat.decodeRecord(from: wireUTF8(text))
        #expect((read.fields.wire != nil) == kept, "\(fieldsText)")
        // The general reader is the reference: parse the same fields as entries.
        let entries = Self.asEntries(read.fields)
        try Self.expectSame(read.fields, entries)
        let again = try WireFormat.decodeRecord(from: WireFormat.encode(read))
        #expect(wireIdentical(again, read))
    }

    @Test(arguments: [
        #"{"a":{"type":"INT64","value":1.5}}"#, #"{"a":{"type":"INT64","value":99999999999999999999}}"#,
        #"{"a":{"type":"DOUBLE","value":1e999}}"#, #"{"a":{"type":"BYTES","value":"A"}}"#,
        #"{"a":{"type":"BYTES","value":"AQ=x"}}"#, #"{"a":{"type":"STRING","value":1}}"#,
        #"{"a":{"type":"STRING_LIST","value":["x",1]}}"#, #"{"a":{"type":"NOPE","value":1}}"#,
        #"{"a":{"type":"STRING","value":"x"},}"#, #"{"a":{"type":"STRING","value":"x""#,
    ])
    func badFieldTextFailsAsBefore(_ fieldsText: String) {
        let text = #"{"recordName":"r","recordType":"T","fields":"# + fieldsText + "}"
        #expect(throws: WireFormatError.self) { try WireFormat.decodeRecord(from: wireUTF8(text)) }
    }

    @Test func invalidUTF8InKeptTextIsRefused() {
        var bytes = wireUTF8(#"{"recordName":"r","recordType":"T","fields":{"a":{"type":"STRING","value":"xy"}}}"#)
        let index = bytes.firstIndex(of: UInt8(ascii: "y"))!
        bytes[index] = 0xFF
        #expect(wireError { try WireFormat.decodeRecord(from: bytes) }?.code == .invalidUTF8)
        var name = wireUTF8(#"{"recordName":"r","recordType":"T","fields":{"ab":{"type":"INT64","value":1}}}"#)
        name[name.firstIndex(of: UInt8(ascii: "b"))!] = 0xC3
        #expect(wireError { try WireFormat.decodeRecord(from: name) }?.code == .invalidUTF8)
    }

    @Test func manyFieldsKeepTheirOrderAndLookups() throws {
        var record = Record(recordType: "T", recordName: "r")
        for i in 0..<100 { record["f\(i)"] = .int64(Int64(i)) }
        let read = try WireFormat.decodeRecord(from: WireFormat.encode(record))
        try Self.expectSame(read.fields, Self.asEntries(record.fields))
        for i in 0..<100 { #expect(read.fields.position(of: "f\(i)", hint: 100 - i) == i) }
    }

    // MARK: - Records the encoder makes

    @Test func encoderKeepsFieldsAsCanonicalText() throws {
        let record = try RecordEncoder().encode(Landmark.sample())
        let wire = try #require(record.fields.wire)
        #expect(wire.isCanonical)
        let entries = Self.asEntries(record.fields)
        try Self.expectSame(record.fields, entries)
        try Self.expectSameChanges(record.fields, entries)
        let everything = try RecordEncoder().encode(Everything(key: "k"))
        #expect(everything.fields.wire != nil)
        try Self.expectSame(everything.fields, Self.asEntries(everything.fields))
        #expect(try RecordDecoder().decode(Everything.self, from: everything) == Everything(key: "k"))
    }

    /// What wire text cannot hold turns the fields into entries midway, and
    /// the record is the same as it always was.
    @Test func encoderFallsBackToEntries() throws {
        struct Awkward: CloudCodable {
            enum CodingKeys: String, CodingKey {
                case first, second
                case quoted = "needs \"escapes\""
                case removed
            }
            var cloudIdentifier: String { "a" }
            var cloudMetadata: RecordMetadata?
            var mode: Int

            init(mode: Int) { self.mode = mode }
            init(from decoder: any Decoder) throws { mode = 0 }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode("one", forKey: .first)
                switch mode {
                case 0:
                    try container.encode(2, forKey: .second)
                    try container.encode(3, forKey: .second)  // the last write wins
                case 1: try container.encode("x", forKey: .quoted)
                case 2:
                    try container.encode(true, forKey: .removed)
                    try container.encodeNil(forKey: .removed)
                case 3: try container.encode(FieldValue.double(.nan), forKey: .second)
                default:
                    try container.encodeNil(forKey: .removed)  // nothing to remove: stays text
                    try container.encode(Location(latitude: 1, longitude: 2), forKey: .second)
                }
                try container.encode("after", forKey: .removed)
            }
        }
        let zero = try RecordEncoder().encode(Awkward(mode: 0))
        #expect(zero.fields == ["first": .string("one"), "second": .int64(3), "removed": .string("after")])
        #expect(zero.fields.keys == ["first", "second", "removed"])
        let one = try RecordEncoder().encode(Awkward(mode: 1))
        #expect(one.fields.keys == ["first", "needs \"escapes\"", "removed"])
        #expect(one.fields.wire == nil)
        let two = try RecordEncoder().encode(Awkward(mode: 2))
        #expect(two.fields.keys == ["first", "removed"])
        #expect(two["removed"] == .string("after"))
        // A value the wire form refuses is kept, and refused when written.
        let three = try RecordEncoder().encode(Awkward(mode: 3))
        #expect(three["second"]?.type == .double)
        #expect(throws: WireFormatError.self) { try WireFormat.encode(three) }
        let four = try RecordEncoder().encode(Awkward(mode: 4))
        #expect(four.fields.wire != nil)
        #expect(four["second"] == .location(Location(latitude: 1, longitude: 2)))
        for record in [zero, one, two, four] {
            let read = try WireFormat.decodeRecord(from: WireFormat.encode(record))
            #expect(read == record)
        }
    }

    @Test func containersKeptPastTheirRecordChangeNothing() throws {
        final class Leak: @unchecked Sendable {
            var container: KeyedEncodingContainer<Holder.CodingKeys>?
        }
        struct Holder: CloudCodable {
            enum CodingKeys: String, CodingKey { case value }
            var cloudIdentifier: String { "h" }
            var cloudMetadata: RecordMetadata?
            var value: Int
            var leak: Leak?

            init(value: Int, leak: Leak?) {
                self.value = value
                self.leak = leak
            }
            init(from decoder: any Decoder) throws { value = 0 }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(value, forKey: .value)
                leak?.container = container
            }
        }
        let leak = Leak()
        _ = try RecordEncoder().encode(Holder(value: 1, leak: leak))
        struct Other: CloudCodable {
            var cloudIdentifier: String { "o" }
            var cloudMetadata: RecordMetadata?
            var name = "n"
            var leak: Leak

            enum CodingKeys: String, CodingKey { case name }
            init(leak: Leak) { self.leak = leak }
            init(from decoder: any Decoder) throws { throw CancellationError() }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(name, forKey: .name)
                // A container of an earlier record writes nowhere.
                try leak.container?.encode(99, forKey: .value)
            }
        }
        let other = try RecordEncoder().encode(Other(leak: leak))
        #expect(other.fields == ["name": .string("n")])
    }

    @Test func nestedRecordEncodingOnOneThreadUsesItsOwnEncoder() throws {
        struct Outer: CloudCodable {
            var cloudIdentifier: String { "outer" }
            var cloudMetadata: RecordMetadata?
            var a = 1
            var b = 2
            enum CodingKeys: String, CodingKey { case a, b, inner }
            init() {}
            init(from decoder: any Decoder) throws {}
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(a, forKey: .a)
                // Encoding another record while this one is half written.
                let inner = try RecordEncoder().encode(Landmark.sample())
                try container.encode(inner.fields.count, forKey: .inner)
                try container.encode(b, forKey: .b)
            }
        }
        let record = try RecordEncoder().encode(Outer())
        #expect(record.fields == ["a": .int64(1), "inner": .int64(7), "b": .int64(2)])
        #expect(record.fields.keys == ["a", "inner", "b"])
    }
}
