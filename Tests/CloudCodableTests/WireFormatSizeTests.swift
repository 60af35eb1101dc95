import Foundation
import Testing

@testable import CloudCodable

@Suite("WireFormat sizes")
struct WireFormatSizeTests {
    /// The bytes of the `fields` object as the writer writes it.
    static func written(_ fields: RecordFields) throws -> Int {
        var writer = JSONWriter()
        try writer.writeFields(fields)
        return writer.count
    }

    @Test func exactSizeOfRandomRecords() throws {
        var random = WireRandom(seed: 51)
        var checked = 0
        for _ in 0..<400 {
            let fields = WireSamples.fields(&random)
            let exact = WireFormat.encodedSize(ofFields: fields)
            #expect(exact == (try Self.written(fields)))
            #expect(WireFormat.maximumEncodedSize(ofFields: fields) >= exact)
            checked += fields.count
        }
        #expect(checked > 1_000)
    }

    @Test func exactSizeOfEveryType() throws {
        let record = WireSamples.everyType()
        let exact = WireFormat.encodedSize(ofFields: record.fields)
        #expect(exact == (try Self.written(record.fields)))
        #expect(WireFormat.maximumEncodedSize(ofFields: record.fields) >= exact)
        // The fields object is exactly what sits between `"fields":` and `,"created"`.
        let text = String(decoding: try WireFormat.encode(record), as: UTF8.self)
        let start = try #require(text.range(of: #","fields":"#)).upperBound
        let end = try #require(text.range(of: #","created":"#)).lowerBound
        #expect(text.utf8[start..<end].count == exact)
    }

    @Test func boundHoldsForWorstCases() throws {
        let worst: RecordFields = [
            String(repeating: "\u{1}", count: 50): .string(String(repeating: "\u{0}\u{1F}", count: 100)),
            "d": .double(-Double.leastNormalMagnitude),
            "e": .double(-1.797_693_134_862_315_7e308),
            "s": .double(-Double.leastNonzeroMagnitude),
            "i": .int64(.min),
            "t": .timestamp(WireSamples.date(-9_000_000_000_000_000)),
            "l": .doubleList([-Double.leastNormalMagnitude, -1.234_567_890_123_456_7e-300]),
            "loc": .location(
                Location(
                    latitude: -Double.leastNormalMagnitude, longitude: -1.797_693_134_862_315_7e308,
                    horizontalAccuracy: -0.000_123_456_789_012_345_67, verticalAccuracy: -1e-300, altitude: -1e300,
                    speed: -1.1, course: -2.2, timestamp: .min)),
            "a": .asset(
                Asset(
                    fileChecksum: "\u{0}", size: .min, referenceChecksum: "\\", wrappingKey: "\"",
                    receipt: "\n", downloadURL: "\u{1F}")),
            "r": .referenceList([
                Reference(
                    recordName: "\u{0}", zoneID: ZoneID(zoneName: "\u{0}", ownerRecordName: "\u{0}"),
                    action: .deleteSelf)
            ]),
        ]
        for (name, value) in worst {
            let single: RecordFields = [name: value]
            let exact = WireFormat.encodedSize(ofFields: single)
            #expect(exact == (try Self.written(single)), "\(name)")
            #expect(WireFormat.maximumEncodedSize(ofFields: single) >= exact, "\(name)")
        }
        // Random doubles: the bound of 32 bytes each is never too small.
        var random = WireRandom(seed: 52)
        for _ in 0..<10_000 {
            let value = Double(bitPattern: random.next())
            guard value.isFinite else { continue }
            #expect(value.description.utf8.count <= 24)
        }
    }

    @Test func emptyFields() throws {
        #expect(WireFormat.encodedSize(ofFields: [:]) == 2)
        #expect(try Self.written([:]) == 2)
        #expect(WireFormat.maximumEncodedSize(ofFields: [:]) == 2)
    }

    @Test func valuesTheWriterRefusesCountAsNull() {
        let one = WireFormat.encodedSize(ofFields: ["x": .double(1)])  // "1.0"
        #expect(WireFormat.encodedSize(ofFields: ["x": .double(.nan)]) == one + 1)
        #expect(WireFormat.encodedSize(ofFields: ["x": .double(-.infinity)]) == one + 1)
        let zero = WireFormat.encodedSize(ofFields: ["x": .timestamp(WireSamples.date(1000))])  // "1000"
        #expect(WireFormat.encodedSize(ofFields: ["x": .timestamp(Date(timeIntervalSince1970: 1e300))]) == zero)
    }

    @Test func escapesAreCountedExactly() throws {
        for text in WireSamples.awkwardStrings {
            let fields: RecordFields = [text: .string(text), "list": .stringList([text, text])]
            #expect(WireFormat.encodedSize(ofFields: fields) == (try Self.written(fields)), "\(text.debugDescription)")
        }
    }
}
