import CloudCodable
import Foundation
import Testing

@Suite("Record Codable")
struct RecordCodableTests {
    @Test func roundTripsThroughJSONEncoder() throws {
        for record in [WireSamples.everyType(), WireSamples.landmark(), Record(recordType: "T", recordName: "n")] {
            let decoded = try JSONDecoder().decode(Record.self, from: JSONEncoder().encode(record))
            #expect(wireIdentical(decoded, record))
        }
        var random = WireRandom(seed: 71)
        for _ in 0..<100 {
            let record = WireSamples.record(&random)
            let decoded = try JSONDecoder().decode(Record.self, from: JSONEncoder().encode(record))
            #expect(wireIdentical(decoded, record))
        }
    }

    @Test func sameShapeAsTheWire() throws {
        for record in [WireSamples.everyType(), WireSamples.landmark()] {
            let codable = try JSONEncoder().encode(record)
            let wire = try WireFormat.encode(record)
            let ours = try JSONSerialization.jsonObject(with: codable) as? NSDictionary
            let theirs = try JSONSerialization.jsonObject(with: Data(wire)) as? NSDictionary
            #expect(ours != nil)
            #expect(ours == theirs)
            // Each reads the other's output.
            #expect(try WireFormat.decodeRecord(from: codable) == record)
            #expect(try JSONDecoder().decode(Record.self, from: Data(wire)) == record)
        }
    }

    @Test func readsWhatCloudKitSends() throws {
        let fromWire = try WireFormat.decodeRecord(from: wireUTF8(WireFormatTests.cloudKitStyle))
        // JSONDecoder has no field type inference and no numbers in strings,
        // so drop those fields first.
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(WireFormatTests.cloudKitStyle.utf8)) as? [String: Any])
        var fields = try #require(object["fields"] as? [String: Any])
        for name in fields.keys
        where name.hasPrefix("inferred") || name.hasPrefix("cleared") || name == "count"
            || name == "smallest" || name == "place"
        {
            fields[name] = nil
        }
        object["fields"] = fields
        var modified = try #require(object["modified"] as? [String: Any])
        modified["timestamp"] = 1_700_000_000_500
        object["modified"] = modified
        let data = try JSONSerialization.data(withJSONObject: object)
        let decoded = try JSONDecoder().decode(Record.self, from: data)
        var expected = fromWire
        expected.fields = RecordFields(fromWire.fields.dictionary.filter { fields[$0.key] != nil })
        #expect(decoded == expected)
        #expect(decoded.metadata?.zoneID == decoded.zoneID)
    }

    @Test func defaults() throws {
        let record = try JSONDecoder().decode(Record.self, from: Data(#"{"recordName":"n","recordType":"T"}"#.utf8))
        #expect(record == Record(recordType: "T", recordName: "n"))
        let tagged = try JSONDecoder().decode(
            Record.self,
            from: Data(#"{"recordName":"n","recordType":"T","recordChangeTag":"c","zoneID":{"zoneName":"Z"}}"#.utf8))
        #expect(tagged.metadata == RecordMetadata(changeTag: "c", zoneID: ZoneID(zoneName: "Z")))
    }

    @Test(arguments: [
        #"{"recordType":"T"}"#, #"{"recordName":"n"}"#, #"{"recordName":5,"recordType":"T"}"#,
        #"{"recordName":"n","recordType":"T","fields":{"f":{"type":"INT64","value":"x"}}}"#,
        #"{"recordName":"n","recordType":"T","fields":[]}"#,
        #"{"recordName":"n","recordType":"T","zoneID":{"ownerRecordName":"o"}}"#,
        #"{"recordName":"n","recordType":"T","recordChangeTag":"c","created":{"userRecordName":"u"}}"#, #"[]"#,
    ])
    func rejects(json: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Record.self, from: Data(json.utf8)) }
    }
}
