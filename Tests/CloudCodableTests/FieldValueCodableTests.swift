import CloudCodable
import Foundation
import Testing

@Suite("FieldValue Codable")
struct FieldValueCodableTests {
    static func roundTrip(_ value: FieldValue) throws -> FieldValue {
        try JSONDecoder().decode(FieldValue.self, from: JSONEncoder().encode(value))
    }

    static func decode(_ text: String) throws -> FieldValue {
        try JSONDecoder().decode(FieldValue.self, from: Data(text.utf8))
    }

    @Test func everyTypeRoundTripsExactly() throws {
        let record = WireSamples.everyType()
        for (name, value) in record.fields {
            let decoded = try Self.roundTrip(value)
            #expect(wireIdentical(decoded, value), "field \(name): \(decoded)")
        }
    }

    @Test func randomValuesRoundTrip() throws {
        var random = WireRandom(seed: 61)
        for _ in 0..<300 {
            let value = WireSamples.value(&random)
            #expect(wireIdentical(try Self.roundTrip(value), value), "\(value)")
        }
    }

    @Test func shapeIsTheWireShape() throws {
        let cases: [(FieldValue, String)] = [
            (.string("a"), #"{"type":"STRING","value":"a"}"#),
            (.int64(-3), #"{"type":"INT64","value":-3}"#),
            (.double(0.5), #"{"type":"DOUBLE","value":0.5}"#),
            (.timestamp(WireSamples.date(-1500)), #"{"type":"TIMESTAMP","value":-1500}"#),
            (.bytes(Data([1, 2, 0x3F])), #"{"type":"BYTES","value":"AQI/"}"#),
            (
                .reference(Reference(recordName: "r", action: .validate)),
                #"{"type":"REFERENCE","value":{"recordName":"r","action":"VALIDATE"}}"#
            ),
            (.asset(Asset(size: 2)), #"{"type":"ASSETID","value":{"size":2}}"#),
            (
                .location(Location(latitude: 1, longitude: 2)),
                #"{"type":"LOCATION","value":{"latitude":1,"longitude":2}}"#
            ),
            (.timestampList([WireSamples.date(1), WireSamples.date(2)]), #"{"type":"TIMESTAMP_LIST","value":[1,2]}"#),
            (.bytesList([Data(), Data([0xFF])]), #"{"type":"BYTES_LIST","value":["","/w=="]}"#),
            (.stringList([]), #"{"type":"STRING_LIST","value":[]}"#),
        ]
        for (value, json) in cases {
            let ours = try JSONSerialization.jsonObject(with: JSONEncoder().encode(value)) as? NSDictionary
            let expected = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary
            #expect(ours != nil)
            #expect(ours == expected, "\(value)")
            #expect(try Self.decode(json) == value)
        }
    }

    @Test func readsWhatTheWireWriterWrites() throws {
        // The Codable form of each field equals the wire form of the same field.
        struct Envelope: Decodable {
            var fields: [String: FieldValue]
        }
        let record = WireSamples.everyType()
        let envelope = try JSONDecoder().decode(Envelope.self, from: Data(try WireFormat.encode(record)))
        #expect(envelope.fields.count == record.fields.count)
        for (name, value) in record.fields {
            #expect(envelope.fields[name].map { wireIdentical($0, value) } == true, "field \(name)")
        }
    }

    @Test(arguments: [
        #"{"type":"BOOLEAN","value":true}"#, #"{"type":"string","value":"a"}"#, #"{"value":"a"}"#,
        #"{"type":"STRING"}"#, #"{"type":"STRING","value":5}"#, #"{"type":"INT64","value":"5"}"#,
        #"{"type":"INT64","value":1.5}"#, #"{"type":"INT64","value":9223372036854775808}"#,
        #"{"type":"TIMESTAMP","value":"2024-01-01"}"#, #"{"type":"BYTES","value":"a"}"#,
        #"{"type":"BYTES","value":"QR=="}"#, #"{"type":"BYTES_LIST","value":["QQ==","!"]}"#,
        #"{"type":"REFERENCE","value":{"recordName":"x","action":"BOGUS"}}"#,
        #"{"type":"LOCATION","value":{"latitude":1}}"#, #"{"type":"STRING_LIST","value":[1]}"#,
        #"{"type":"DOUBLE_LIST","value":"x"}"#, #"{"type":7,"value":1}"#, #"[]"#, #""STRING""#,
    ])
    func rejects(json: String) {
        #expect(throws: DecodingError.self) { try Self.decode(json) }
    }

    @Test func refusesDatesBeyondMilliseconds() {
        #expect(throws: EncodingError.self) {
            try JSONEncoder().encode(FieldValue.timestamp(Date(timeIntervalSince1970: 1e300)))
        }
        #expect(throws: EncodingError.self) {
            try JSONEncoder().encode(FieldValue.timestampList([Date(), Date(timeIntervalSince1970: -1e300)]))
        }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(FieldValue.double(.nan)) }
    }
}
