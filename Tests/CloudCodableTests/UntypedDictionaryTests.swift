import Foundation
import Testing

@testable import CloudCodable

/// Fields sent without `type` whose value is a dictionary, or a list of
/// them, for a field the schema does not know: the keys say the type.
@Suite("Untyped dictionaries")
struct UntypedDictionaryTests {
    /// Reads a record whose only field is `f` with `field` as its
    /// `{type, value}` object, the way the server reads a saved record.
    static func readField(
        _ field: String, schema: @escaping (String, String) -> FieldType? = { _, _ in nil }
    ) throws -> FieldValue? {
        let text = #"{"recordName":"r","recordType":"T","fields":{"f":"# + field + "}}"
        return try WireBodyReader.read(wireUTF8(text), fieldTypes: schema) { reader -> FieldValue? in
            guard case .record(let record, _) = try reader.readRecord() else { return nil }
            try reader.expectEnd()
            return record["f"]
        }
    }

    static let zone = ZoneID(zoneName: "Z", ownerRecordName: "_o")

    @Test(arguments: [
        (#"{"value":{"latitude":1.5,"longitude":-2}}"#, FieldValue.location(Location(latitude: 1.5, longitude: -2))),
        (
            #"{"value":{"latitude":1,"longitude":2,"horizontalAccuracy":3,"verticalAccuracy":4,"altitude":5,"speed":6,"course":7,"timestamp":8}}"#,
            .location(
                Location(
                    latitude: 1, longitude: 2, horizontalAccuracy: 3, verticalAccuracy: 4, altitude: 5, speed: 6,
                    course: 7, timestamp: 8))
        ),
        (
            #"{ "value" : { "longitude" : 2 , "altitude" : null , "latitude" : 1 } }"#,
            .location(Location(latitude: 1, longitude: 2))
        ),
        (#"{"value":{"recordName":"B"}}"#, .reference(Reference(recordName: "B"))),
        (
            #"{"value":{"action":"DELETE_SELF","zoneID":{"zoneName":"Z","ownerRecordName":"_o"},"recordName":"B"}}"#,
            .reference(Reference(recordName: "B", zoneID: zone, action: .deleteSelf))
        ),
        (#"{"value":{"recordN\u0061me":"B","zoneID":null}}"#, .reference(Reference(recordName: "B"))),
        (
            #"{"value":{"fileChecksum":"c1","size":1024,"downloadURL":"https://x/${f}"}}"#,
            .asset(Asset(fileChecksum: "c1", size: 1024, downloadURL: "https://x/${f}"))
        ),
        (
            #"{"value":{"wrappingKey":"w","fileChecksum":"c","receipt":"r","referenceChecksum":"rc","size":3}}"#,
            .asset(Asset(fileChecksum: "c", size: 3, referenceChecksum: "rc", wrappingKey: "w", receipt: "r"))
        ),
        (#"{"value":{"receipt":"r"}}"#, .asset(Asset(receipt: "r"))),
        // Keys of no shape are skipped, as the typed readers skip them.
        (
            #"{"value":{"latitude":1,"longitude":2,"extra":[1,{"recordName":"x"}]}}"#,
            .location(Location(latitude: 1, longitude: 2))
        ),
        (
            #"{"value":[{"latitude":1,"longitude":2},{"longitude":4,"latitude":3,"speed":5}]}"#,
            .locationList([Location(latitude: 1, longitude: 2), Location(latitude: 3, longitude: 4, speed: 5)])
        ),
        (
            #"{"value":[{"recordName":"a"},{"recordName":"b","action":"VALIDATE"}]}"#,
            .referenceList([Reference(recordName: "a"), Reference(recordName: "b", action: .validate)])
        ),
        (
            #"{"value":[{"fileChecksum":"a","size":1},{"receipt":"b"}]}"#,
            .assetList([Asset(fileChecksum: "a", size: 1), Asset(receipt: "b")])
        ),
        (#"{"value":[{"recordName":"only"}]}"#, .referenceList([Reference(recordName: "only")])),
    ])
    func dictionariesSayTheirTypeByTheirKeys(field: String, expected: FieldValue) throws {
        #expect(try Self.readField(field) == expected)
        // The client's reader, which has no schema, reads them alike.
        let record = try WireFormat.decodeRecord(from: wireUTF8(WireFormatTests.document(field: field)))
        #expect(record["f"] == expected)
    }

    @Test func theSchemaTypeStillDecidesForAFieldItKnows() throws {
        let schema: (String, String) -> FieldType? = { type, field in
            type == "T" && field == "known" ? .reference : nil
        }
        let text = #"""
            {"recordName":"r","recordType":"T","fields":{
              "known":{"value":{"recordName":"x","fileChecksum":"c","latitude":1}},
              "unknown":{"value":{"latitude":1,"longitude":2}},
              "number":{"value":2.5}}}
            """#
        let record = try WireBodyReader.read(wireUTF8(text), fieldTypes: schema) { reader -> Record? in
            guard case .record(let record, _) = try reader.readRecord() else { return nil }
            return record
        }
        // Ambiguous by its keys, but the schema says REFERENCE: the other keys are skipped.
        #expect(record?["known"] == .reference(Reference(recordName: "x")))
        #expect(record?["unknown"] == .location(Location(latitude: 1, longitude: 2)))
        #expect(record?["number"] == .double(2.5))
        // A dictionary the schema's type cannot read is that type's error, not another type.
        let error = wireError {
            try Self.readField(#"{"value":{"latitude":1,"longitude":2}}"#, schema: { _, _ in .string })
        }
        #expect(error?.code == .wrongType)
        #expect(error?.message.hasPrefix("field 'f': ") == true)
    }

    @Test(arguments: [
        // Ambiguous: keys of two shapes.
        (
            #"{"value":{"latitude":1,"longitude":2,"recordName":"x"}}"#, WireFormatError.Code.unknownFieldType,
            "a location's 'latitude' and a reference's 'recordName' is ambiguous"
        ),
        (
            #"{"value":{"fileChecksum":"c","zoneID":{"zoneName":"Z"}}}"#, .unknownFieldType,
            "an asset's 'fileChecksum' and a reference's 'zoneID' is ambiguous"
        ),
        // No key of any shape.
        (#"{"value":{"name":"x"}}"#, .unknownFieldType, "without the keys of a location (latitude, longitude)"),
        (#"{"value":{}}"#, .unknownFieldType, "without the keys of a location (latitude, longitude)"),
        // A shape without the key it needs.
        (#"{"value":{"latitude":1}}"#, .missingKey, "a location's 'latitude' has no 'longitude'"),
        (#"{"value":{"altitude":1,"longitude":2}}"#, .missingKey, "has no 'latitude'"),
        (#"{"value":{"timestamp":1,"userRecordName":"u"}}"#, .missingKey, "has no 'latitude'"),
        (#"{"value":{"zoneID":{"zoneName":"Z"},"action":"NONE"}}"#, .missingKey, "has no 'recordName'"),
        (#"{"value":{"size":10,"downloadURL":"u"}}"#, .missingKey, "has no 'fileChecksum' or 'receipt'"),
        (#"{"value":{"fileChecksum":null,"receipt":null}}"#, .missingKey, "has no 'fileChecksum' or 'receipt'"),
        // A clear shape with a bad value: the shape's reader says what is wrong.
        (#"{"value":{"latitude":"1","longitude":2}}"#, .wrongType, "latitude: expected a number"),
        (#"{"value":{"latitude":null,"longitude":2}}"#, .missingKey, "has no 'latitude'"),
        (#"{"value":{"latitude":1e999,"longitude":2}}"#, .invalidValue, "out of the range of Double"),
        (#"{"value":{"recordName":5}}"#, .wrongType, "recordName: expected a string"),
        (#"{"value":{"recordName":"x","action":"BOGUS"}}"#, .invalidValue, "unknown reference action 'BOGUS'"),
        (#"{"value":{"recordName":"x","zoneID":{}}}"#, .missingKey, "zone ID has no 'zoneName'"),
        (#"{"value":{"fileChecksum":5}}"#, .wrongType, "fileChecksum: expected a string"),
        (#"{"value":{"receipt":"r","size":"big"}}"#, .invalidValue, "size: expected an integer"),
        // Lists.
        (
            #"{"value":[{"latitude":1,"longitude":2},{"recordName":"x"}]}"#, .unknownFieldType,
            "mixes locations and references (element 1)"
        ),
        (#"{"value":[{"recordName":"x"},"y"]}"#, .unknownFieldType, "mixes references and strings"),
        (#"{"value":[3,{"receipt":"r"}]}"#, .unknownFieldType, "mixes numbers and assets"),
        (#"{"value":[{"latitude":1,"longitude":2},{"latitude":1}]}"#, .missingKey, "element 1: no 'type'"),
        (
            #"{"value":[{"recordName":"x"},{"recordName":"y","latitude":1}]}"#, .unknownFieldType,
            "element 1: no 'type', and an object with a reference's 'recordName' and a location's 'latitude'"
        ),
        (#"{"value":[{"recordName":"x"},null]}"#, .unknownFieldType, "a list holding null"),
        (#"{"value":[{"recordName":"x"},[]]}"#, .unknownFieldType, "a list holding an array"),
        (#"{"value":[{"recordName":"x"},{"recordName":1}]}"#, .wrongType, "element 1: recordName"),
    ])
    func badDictionariesAreTypedErrorsNamingTheField(field: String, code: WireFormatError.Code, message: String) {
        let error = wireError { try Self.readField(field) }
        #expect(error?.code == code, "\(field): \(String(describing: error))")
        #expect(error?.message.hasPrefix("field 'f': ") == true, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
        #expect(error?.offset != nil)
    }

    @Test func aQueryFiltersUntypedValueSaysItsTypeToo() throws {
        let unknown: (String, String) -> FieldType? = { _, _ in nil }
        let read = { (text: String) throws -> FieldValue? in
            try WireBodyReader.read(wireUTF8(text), fieldTypes: unknown) { reader in
                try reader.readFieldValue(recordType: "T", fieldName: "where")
            }
        }
        #expect(
            try read(#"{"value":{"latitude":1,"longitude":2}}"#) == .location(Location(latitude: 1, longitude: 2)))
        #expect(try read(#"{"value":[{"recordName":"a"}]}"#) == .referenceList([Reference(recordName: "a")]))
        let error = wireError { try read(#"{"value":{"recordName":"a","receipt":"r"}}"#) }
        #expect(error?.code == .unknownFieldType)
        #expect(error?.message.hasPrefix("field 'where': ") == true)
    }

    @Test func randomDictionariesWrittenWithoutTheirTypeReadBack() throws {
        // What the writer writes for a reference, asset or location (or a
        // list of them), with its "type" cut out, as an independent client
        // may send it.
        var random = WireRandom(seed: 11)
        let types: [FieldType] = [.reference, .asset, .location, .referenceList, .assetList, .locationList]
        var read = 0
        for _ in 0..<1_000 {
            var value = WireSamples.value(&random)
            while !types.contains(value.type) { value = WireSamples.value(&random) }
            var record = Record(recordType: "T", recordName: "r")
            record["f"] = value
            let typed = String(decoding: try WireFormat.encode(record), as: UTF8.self)
            let untyped = typed.replacingOccurrences(
                of: #"{"type":"\#(value.type.rawValue)","value":"#, with: #"{"value":"#)
            #expect(untyped != typed)
            let assets: [Asset] =
                switch value {
                case .asset(let asset): [asset]
                case .assetList(let list): list
                default: []
                }
            // The first asset that does not say what it is fails the field:
            // with other asset keys it lacks one, with none it says nothing.
            if let bad = assets.first(where: { $0.fileChecksum == nil && $0.receipt == nil }) {
                let code: WireFormatError.Code = bad == Asset() ? .unknownFieldType : .missingKey
                #expect(wireError { try WireFormat.decodeRecord(from: wireUTF8(untyped)) }?.code == code)
            } else if value.type.isList, value == WireSamples.emptyList(value.type) {
                #expect(wireError { try WireFormat.decodeRecord(from: wireUTF8(untyped)) }?.code == .unknownFieldType)
            } else {
                #expect(try WireFormat.decodeRecord(from: wireUTF8(untyped)) == record, "\(untyped)")
                read += 1
            }
        }
        #expect(read > 300)
    }
}
