import Foundation
import Testing

@testable import CloudCodable

@Suite("RecordEncoder and RecordDecoder")
struct RecordEncoderTests {
    let encoder = RecordEncoder()
    let decoder = RecordDecoder()

    @Test("the landmark maps to the documented field types")
    func landmarkFields() throws {
        let record = try encoder.encode(Landmark.sample())
        #expect(record.recordType == "Landmark")
        #expect(record.recordName == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(record.zoneID == .defaultZone)
        #expect(record.metadata == nil)
        #expect(record["id"] == .string("E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(record["name"] == .string("Golden Gate Bridge"))
        #expect(record["tags"] == .stringList(["bridge", "landmark", "san-francisco"]))
        #expect(record["visits"] == .int64(42))
        #expect(record["isFavorite"] == .int64(1))
        #expect(record["lastVisited"] == .timestamp(Date(timeIntervalSince1970: 1_700_000_000.123)))
        let coordinate = try #require(record["coordinate"])
        guard case .bytes(let json) = coordinate else {
            Issue.record("coordinate should be BYTES, is \(coordinate.type)")
            return
        }
        // Nested values are plain JSON that Foundation reads back.
        let decoded = try JSONDecoder().decode(Landmark.Coordinate.self, from: json)
        #expect(decoded == Landmark.sample().coordinate)
        #expect(record.fields.count == 7)
    }

    @Test("every mapped kind of property round-trips")
    func everythingRoundTrips() throws {
        let value = Everything(key: "all")
        let record = try encoder.encode(value)
        let back = try decoder.decode(Everything.self, from: record)
        var expected = value
        // Dates are stored to the millisecond.
        expected.date = Date(timeIntervalSince1970: -12_345.678)
        #expect(back == expected)
        #expect(record["optionalAbsent"] == nil)
        #expect(record["optionalPresent"] == .string("here"))
        #expect(record["mood"] == .string("sad"))
        #expect(record["priority"] == .int64(9))
        #expect(record["url"] == .string("https://example.com/a?b=c"))
        #expect(record["decimal"] == .string("12345678901234567890.123456789"))
        #expect(record["data"] == .bytes(Data([0, 1, 2, 255])))
        #expect(record["ints"] == .int64List([1, -2, 3]))
        #expect(record["bools"] == .int64List([1, 0]))
        #expect(record["doubles"] == .doubleList([1.5, -0.0]))
        #expect(record["moods"] == .stringList(["happy", "sad"]))
        #expect(record["uuids"] == .stringList(["00000000-0000-0000-0000-000000000001"]))
        #expect(record["datas"] == .bytesList([Data([1]), Data()]))
        #expect(record["dates"]?.type == .timestampList)
        #expect(record["set"]?.type == .stringList)
        #expect(record["dictionary"]?.type == .bytes)
        #expect(record["inner"]?.type == .bytes)
        #expect(record["inners"]?.type == .bytes)
        #expect(record["optionalInts"]?.type == .bytes)
        #expect(record["nested"]?.type == .bytes)
        #expect(record["location"] == .location(Location(latitude: 1, longitude: 2)))
        #expect(record["reference"] == .reference(Reference(recordName: "other", action: .deleteSelf)))
        #expect(record["int8"] == .int64(Int64(Int8.min)))
        #expect(record["uint64"] == .int64(Int64.max))
    }

    @Test("dates become whole-millisecond timestamps")
    func dateRounding() throws {
        var landmark = Landmark.sample()
        landmark.lastVisited = Date(timeIntervalSince1970: 1.0004)
        let record = try encoder.encode(landmark)
        #expect(record["lastVisited"] == .timestamp(Date(timeIntervalSince1970: 1)))
    }

    @Test("an integer beyond INT64 is an EncodingError, never a wrap")
    func uint64Overflow() throws {
        struct Big: CloudCodable {
            var cloudIdentifier: String { "big" }
            var cloudMetadata: RecordMetadata?
            var value: UInt64
        }
        #expect(throws: EncodingError.self) { try encoder.encode(Big(value: UInt64(Int64.max) + 1)) }
        #expect(throws: EncodingError.self) { try encoder.encode(Big(value: .max)) }
        #expect(try encoder.encode(Big(value: UInt64(Int64.max)))["value"] == .int64(.max))

        struct BigList: CloudCodable {
            var cloudIdentifier: String { "big" }
            var cloudMetadata: RecordMetadata?
            var values: [UInt64]
        }
        #expect(throws: EncodingError.self) { try encoder.encode(BigList(values: [1, .max])) }
    }

    @Test("a value that does not fit the property's type is a DecodingError")
    func integerNarrowing() throws {
        struct Small: CloudCodable {
            var cloudIdentifier: String { "s" }
            var cloudMetadata: RecordMetadata?
            var value: UInt8
        }
        let record = Record(recordType: "Small", recordName: "s", fields: ["value": .int64(300)])
        #expect(throws: DecodingError.self) { try decoder.decode(Small.self, from: record) }
        let negative = Record(recordType: "Small", recordName: "s", fields: ["value": .int64(-1)])
        #expect(throws: DecodingError.self) { try decoder.decode(Small.self, from: negative) }
    }

    @Test("non-finite numbers are refused when encoding")
    func nonFinite() throws {
        struct Measure: CloudCodable {
            var cloudIdentifier: String { "m" }
            var cloudMetadata: RecordMetadata?
            var value: Double
            var inner: [String: Double] = [:]
        }
        #expect(throws: EncodingError.self) { try encoder.encode(Measure(value: .nan)) }
        #expect(throws: EncodingError.self) { try encoder.encode(Measure(value: .infinity)) }
        #expect(throws: EncodingError.self) { try encoder.encode(Measure(value: 1, inner: ["x": -.infinity])) }
    }

    @Test("a missing optional is nil; a missing non-optional is keyNotFound naming it")
    func missingFields() throws {
        var record = try encoder.encode(Everything(key: "k"))
        record.fields["optionalPresent"] = nil
        #expect(try decoder.decode(Everything.self, from: record).optionalPresent == nil)

        record.fields["name"] = nil
        var landmarkRecord = try encoder.encode(Landmark.sample())
        landmarkRecord.fields["name"] = nil
        do {
            _ = try decoder.decode(Landmark.self, from: landmarkRecord)
            Issue.record("decoding should fail")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "name")
        }
    }

    @Test("a field of the wrong type is typeMismatch naming the field")
    func typeMismatch() throws {
        var record = try encoder.encode(Landmark.sample())
        record.fields["visits"] = .string("many")
        do {
            _ = try decoder.decode(Landmark.self, from: record)
            Issue.record("decoding should fail")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["visits"])
            #expect(context.debugDescription.contains("visits"))
        }

        for (field, value) in [
            ("id", FieldValue.int64(3)), ("id", .string("not-a-uuid")), ("tags", .string("x")),
            ("coordinate", .string("x")), ("coordinate", .bytes(Data("{".utf8))),
            ("lastVisited", .string("today")), ("isFavorite", .double(0.5)), ("name", .stringList([])),
        ] {
            var broken = try encoder.encode(Landmark.sample())
            broken.fields[field] = value
            #expect(throws: DecodingError.self, "\(field) = \(value)") {
                try decoder.decode(Landmark.self, from: broken)
            }
        }
    }

    @Test("numbers convert where nothing is lost")
    func lenientNumbers() throws {
        var record = try encoder.encode(Landmark.sample())
        record.fields["visits"] = .double(42)
        #expect(try decoder.decode(Landmark.self, from: record).visits == 42)
        record.fields["visits"] = .double(42.5)
        #expect(throws: DecodingError.self) { try decoder.decode(Landmark.self, from: record) }
    }

    @Test("a record of another type is refused")
    func recordTypeMismatch() throws {
        var record = try encoder.encode(Landmark.sample())
        record.recordType = "Note"
        #expect(throws: DecodingError.self) { try decoder.decode(Landmark.self, from: record) }
    }

    @Test("metadata travels in Record.metadata, never as a field")
    func metadata() throws {
        var landmark = Landmark.sample()
        let zone = ZoneID(zoneName: "Places", ownerRecordName: "_owner")
        landmark.cloudMetadata = RecordMetadata(
            changeTag: "t1", zoneID: zone, created: RecordStamp(timestamp: 5, userRecordName: "_u"),
            modified: RecordStamp(timestamp: 6, userRecordName: "_v", deviceID: "d"))
        let record = try encoder.encode(landmark)
        #expect(record.fields["cloudMetadata"] == nil)
        #expect(record.metadata == landmark.cloudMetadata)
        #expect(record.zoneID == zone)
        #expect(record.changeTag == "t1")
        let back = try decoder.decode(Landmark.self, from: record)
        #expect(back.cloudMetadata == landmark.cloudMetadata)

        // The record's zone is the authority when the two disagree.
        var moved = record
        moved.zoneID = ZoneID(zoneName: "Elsewhere")
        #expect(try decoder.decode(Landmark.self, from: moved).cloudMetadata?.zoneID.zoneName == "Elsewhere")

        // A model that keeps metadata out of its CodingKeys still gets it.
        struct Keyless: CloudCodable {
            enum CodingKeys: String, CodingKey { case name }
            var cloudIdentifier: String { name }
            var cloudMetadata: RecordMetadata?
            var name: String
        }
        var keyless = try encoder.encode(Keyless(name: "k"))
        keyless.metadata = RecordMetadata(changeTag: "x")
        #expect(try decoder.decode(Keyless.self, from: keyless).cloudMetadata?.changeTag == "x")
    }

    @Test("models without metadata go to the encoder's zone")
    func encoderZone() throws {
        let zoned = RecordEncoder(zoneID: ZoneID(zoneName: "Landmark"))
        #expect(try zoned.encode(Landmark.sample()).zoneID.zoneName == "Landmark")
    }

    @Test("an empty identifier is refused")
    func emptyIdentifier() throws {
        struct Nameless: CloudCodable {
            var cloudIdentifier: String { "" }
            var cloudMetadata: RecordMetadata?
        }
        #expect(throws: EncodingError.self) { try encoder.encode(Nameless()) }
    }

    @Test("nested JSON written by Foundation's JSONEncoder decodes (CloudKitCodable's BYTES)")
    func foundationJSONInterop() throws {
        var record = try encoder.encode(Everything(key: "k"))
        let inner = Everything.Inner(
            label: "from foundation", when: Date(timeIntervalSinceReferenceDate: 77.5), blob: Data([1, 2, 3]),
            big: .max, maybe: nil)
        record.fields["inner"] = .bytes(try JSONEncoder().encode(inner))
        #expect(try decoder.decode(Everything.self, from: record).inner == inner)

        // And what Cumulus writes, Foundation reads.
        let ours = try encoder.encode(Everything(key: "k"))
        guard case .bytes(let json)? = ours["inners"] else {
            Issue.record("inners should be BYTES")
            return
        }
        #expect(try JSONDecoder().decode([Everything.Inner].self, from: json) == Everything(key: "k").inners)
    }
}
