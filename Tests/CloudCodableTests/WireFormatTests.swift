import CloudCodable
import Foundation
import Testing

@Suite("WireFormat")
struct WireFormatTests {
    static func decode(_ text: String) throws -> Record {
        try WireFormat.decodeRecord(from: wireUTF8(text))
    }

    static func error(_ text: String) -> WireFormatError? {
        wireError { () throws in try decode(text) }
    }

    /// A record document with one field whose `{type, value}` object is `field`.
    static func document(field: String) -> String {
        #"{"recordName":"r","recordType":"T","fields":{"f":"# + field + "}}"
    }

    static func fieldError(_ field: String) -> WireFormatError? {
        error(document(field: field))
    }

    // MARK: - Round trips

    @Test func everyFieldTypeRoundTrips() throws {
        let record = WireSamples.everyType()
        #expect(Set(record.fields.values.map(\.type)) == Set(FieldType.allCases))
        let bytes = try WireFormat.encode(record)
        let decoded = try WireFormat.decodeRecord(from: bytes)
        #expect(decoded == record)
        #expect(wireIdentical(decoded, record))
        #expect(decoded.fields["double"].map { wireIdentical($0, .double(-0.0)) } == true)
        #expect(try WireFormat.decodeRecord(from: Data(bytes)) == record)
        #expect(try bytes.withUnsafeBytes { try WireFormat.decodeRecord(from: $0) } == record)
        #expect(try WireFormat.decodeRecordEntry(from: bytes) == .record(record))
    }

    @Test func landmarkRoundTrips() throws {
        let record = WireSamples.landmark()
        let bytes = try WireFormat.encode(record)
        #expect(try WireFormat.decodeRecord(from: bytes) == record)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(
            text.hasPrefix(
                #"{"recordName":"8A1F0F2C-3D4E-4F60-9A7B-1C2D3E4F5A6B","recordType":"Landmark","recordChangeTag":"lq2z5k9a","fields":{"#
            ))
        #expect(text.hasSuffix(#","zoneID":{"zoneName":"_defaultZone"}}"#))
        #expect(text.contains(#""visits":{"type":"INT64","value":1234}"#))
        #expect(text.contains(#""lastVisited":{"type":"TIMESTAMP","value":1700000000123}"#))
        #expect(text.contains(#""tags":{"type":"STRING_LIST","value":["bridge","landmark","san francisco"]}"#))
        #expect(text.contains(#""created":{"timestamp":1699000000000,"userRecordName":"_a1b2c3","deviceID":"2"}"#))
    }

    @Test func randomRecordsRoundTrip() throws {
        var random = WireRandom(seed: 41)
        for _ in 0..<300 {
            let record = WireSamples.record(&random)
            let bytes = try WireFormat.encode(record)
            let decoded = try WireFormat.decodeRecord(from: bytes)
            #expect(wireIdentical(decoded, record))
        }
    }

    @Test func writerAppendsToExistingText() throws {
        let record = WireSamples.landmark()
        var writer = JSONWriter()
        writer.appendRaw(#"{"operations":[{"operationType":"forceUpdate","record":"#)
        try writer.writeRecord(record)
        writer.appendRaw("}]}")
        let value = try JSONParser.parse(writer.bytes)
        guard case .object(let top) = value, case .array(let operations) = top.first?.value,
            case .object(let operation) = operations.first
        else {
            Issue.record("unexpected shape \(value)")
            return
        }
        #expect(operation.map(\.key) == ["operationType", "record"])
    }

    @Test func timestampsAreRoundedToMilliseconds() throws {
        var record = Record(recordType: "T", recordName: "r")
        record["t"] = .timestamp(Date(timeIntervalSince1970: 1.2346))
        let decoded = try WireFormat.decodeRecord(from: WireFormat.encode(record))
        #expect(decoded["t"] == .timestamp(Date(timeIntervalSince1970: 1.235)))
    }

    // MARK: - Foundation reads our output

    @Test func foundationReadsTheSameValues() throws {
        let record = WireSamples.everyType()
        let bytes = try WireFormat.encode(record)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(wireSameString(object["recordName"] as? String, record.recordName))
        #expect(wireSameString(object["recordType"] as? String, record.recordType))
        #expect(wireSameString(object["recordChangeTag"] as? String, record.changeTag))
        let zone = try #require(object["zoneID"] as? [String: Any])
        #expect(zone["zoneName"] as? String == "Places")
        #expect(zone["ownerRecordName"] as? String == "_owner")
        let created = try #require(object["created"] as? [String: Any])
        #expect((created["timestamp"] as? NSNumber)?.int64Value == -5)
        let fields = try #require(object["fields"] as? [String: [String: Any]])
        #expect(fields.count == record.fields.count)
        for (name, value) in record.fields {
            let field = try #require(fields[name] ?? fields[String(name.drop { $0 == "\u{FEFF}" })], "field \(name)")
            #expect(field["type"] as? String == value.type.rawValue)
            #expect(Self.foundationValue(field["value"] as Any, equals: value), "field \(name)")
        }
    }

    /// Whether what JSONSerialization read is the wire encoding of `value`.
    static func foundationValue(_ object: Any, equals value: FieldValue) -> Bool {
        func integer(_ object: Any) -> Int64? { (object as? NSNumber)?.int64Value }
        func double(_ object: Any) -> Double? { (object as? NSNumber)?.doubleValue }
        func same(_ a: Double?, _ b: Double?) -> Bool {
            guard let a, let b else { return a == nil && b == nil }
            return wireSameDouble(a, b)
        }
        func same(_ a: Any, _ b: String?) -> Bool { wireSameString(a as? String, b) }
        func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        func zone(_ object: Any?, _ zone: ZoneID?) -> Bool {
            guard let zone else { return object == nil }
            guard let dictionary = object as? [String: Any] else { return false }
            return same(dictionary["zoneName"] as Any, zone.zoneName)
                && wireSameString(dictionary["ownerRecordName"] as? String, zone.ownerRecordName)
        }
        func reference(_ object: Any, _ reference: Reference) -> Bool {
            guard let dictionary = object as? [String: Any] else { return false }
            return same(dictionary["recordName"] as Any, reference.recordName)
                && dictionary["action"] as? String == reference.action.rawValue
                && zone(dictionary["zoneID"], reference.zoneID)
        }
        func asset(_ object: Any, _ asset: Asset) -> Bool {
            guard let dictionary = object as? [String: Any] else { return false }
            return wireSameString(dictionary["fileChecksum"] as? String, asset.fileChecksum)
                && dictionary["size"].flatMap(integer) == asset.size
                && wireSameString(dictionary["referenceChecksum"] as? String, asset.referenceChecksum)
                && wireSameString(dictionary["wrappingKey"] as? String, asset.wrappingKey)
                && wireSameString(dictionary["receipt"] as? String, asset.receipt)
                && wireSameString(dictionary["downloadURL"] as? String, asset.downloadURL)
        }
        func location(_ object: Any, _ location: Location) -> Bool {
            guard let dictionary = object as? [String: Any] else { return false }
            return same(dictionary["latitude"].flatMap(double), location.latitude)
                && same(dictionary["longitude"].flatMap(double), location.longitude)
                && same(dictionary["horizontalAccuracy"].flatMap(double), location.horizontalAccuracy)
                && same(dictionary["verticalAccuracy"].flatMap(double), location.verticalAccuracy)
                && same(dictionary["altitude"].flatMap(double), location.altitude)
                && same(dictionary["speed"].flatMap(double), location.speed)
                && same(dictionary["course"].flatMap(double), location.course)
                && dictionary["timestamp"].flatMap(integer) == location.timestamp
        }
        func list(_ object: Any, _ count: Int, _ element: (Any, Int) -> Bool) -> Bool {
            guard let array = object as? [Any], array.count == count else { return false }
            return array.indices.allSatisfy { element(array[$0], $0) }
        }
        switch value {
        case .string(let string): return same(object, string)
        case .int64(let value): return integer(object) == value
        case .double(let value): return same(double(object), value)
        case .timestamp(let date): return integer(object) == milliseconds(date)
        case .bytes(let data): return (object as? String).flatMap { Data(base64Encoded: $0) } == data
        case .reference(let value): return reference(object, value)
        case .asset(let value): return asset(object, value)
        case .location(let value): return location(object, value)
        case .stringList(let values): return list(object, values.count) { same($0, values[$1]) }
        case .int64List(let values): return list(object, values.count) { integer($0) == values[$1] }
        case .doubleList(let values): return list(object, values.count) { same(double($0), values[$1]) }
        case .timestampList(let values): return list(object, values.count) { integer($0) == milliseconds(values[$1]) }
        case .bytesList(let values):
            return list(object, values.count) { ($0 as? String).flatMap { Data(base64Encoded: $0) } == values[$1] }
        case .referenceList(let values): return list(object, values.count) { reference($0, values[$1]) }
        case .assetList(let values): return list(object, values.count) { asset($0, values[$1]) }
        case .locationList(let values): return list(object, values.count) { location($0, values[$1]) }
        }
    }

    // MARK: - What CloudKit sends

    static let cloudKitStyle = #"""
        {
          "recordName" : "A1",
          "recordType" : "Note",
          "fields" : {
            "title" : { "value" : "Groceries \u00e9\ud83d\ude00 \/", "type" : "STRING" },
            "count" : { "value" : "42", "type" : "INT64" },
            "smallest" : { "type" : "INT64", "value" : "-9223372036854775808" },
            "when" : { "value" : 1700000000123, "type" : "TIMESTAMP" },
            "tags" : { "value" : [ "a" , "b" ], "type" : "STRING_LIST" },
            "ratio" : { "type" : "DOUBLE", "value" : 0.25, "isEncrypted" : false },
            "whole" : { "type" : "DOUBLE", "value" : 3 },
            "photo" : { "value" : { "fileChecksum" : "c1", "size" : 1024, "downloadURL" : "https://x/y", "wrappingKey" : null }, "type" : "ASSETID" },
            "place" : { "value" : { "longitude" : 2.5, "latitude" : 1.5, "altitude" : null, "timestamp" : "77" }, "type" : "LOCATION" },
            "parent" : { "value" : { "recordName" : "B", "action" : "DELETE_SELF", "zoneID" : { "zoneName" : "Z", "ownerRecordName" : "_o", "zoneType" : "REGULAR_CUSTOM_ZONE" } }, "type" : "REFERENCE" },
            "data" : { "value" : "AQI\/", "type" : "BYTES" },
            "inferredString" : { "value" : "x" },
            "inferredInt" : { "value" : -7 },
            "inferredDouble" : { "value" : 7.5e0 },
            "inferredInts" : { "value" : [ 1, 2 ] },
            "inferredDoubles" : { "value" : [ 1, 2.5 ] },
            "inferredStrings" : { "value" : [ "p" ] },
            "cleared" : { "value" : null, "type" : "STRING" },
            "clearedUntyped" : { "value" : null }
          },
          "pluginFields" : { },
          "recordChangeTag" : "k1",
          "created" : { "timestamp" : 1700000000000, "userRecordName" : "_u", "deviceID" : "D" },
          "modified" : { "deviceID" : "D", "timestamp" : "1700000000500", "userRecordName" : "_u" },
          "deleted" : false,
          "zoneID" : { "zoneName" : "_defaultZone", "ownerRecordName" : "_u", "zoneType" : "DEFAULT_ZONE" },
          "parent" : { "recordName" : "P" },
          "unknown" : [ 1, { "a" : [ true, null, -0.5e-3 ] }, "x\u00e9", [] ]
        }
        """#

    @Test func readsWhatCloudKitSends() throws {
        let zone = ZoneID(zoneName: "_defaultZone", ownerRecordName: "_u")
        var expected = Record(recordType: "Note", recordName: "A1", zoneID: zone)
        expected["title"] = .string("Groceries é😀 /")
        expected["count"] = .int64(42)
        expected["smallest"] = .int64(.min)
        expected["when"] = .timestamp(WireSamples.date(1_700_000_000_123))
        expected["tags"] = .stringList(["a", "b"])
        expected["ratio"] = .double(0.25)
        expected["whole"] = .double(3)
        expected["photo"] = .asset(Asset(fileChecksum: "c1", size: 1024, downloadURL: "https://x/y"))
        expected["place"] = .location(Location(latitude: 1.5, longitude: 2.5, timestamp: 77))
        expected["parent"] = .reference(
            Reference(recordName: "B", zoneID: ZoneID(zoneName: "Z", ownerRecordName: "_o"), action: .deleteSelf))
        expected["data"] = .bytes(Data([1, 2, 0x3F]))
        expected["inferredString"] = .string("x")
        expected["inferredInt"] = .int64(-7)
        expected["inferredDouble"] = .double(7.5)
        expected["inferredInts"] = .int64List([1, 2])
        expected["inferredDoubles"] = .doubleList([1, 2.5])
        expected["inferredStrings"] = .stringList(["p"])
        expected.metadata = RecordMetadata(
            changeTag: "k1", zoneID: zone,
            created: RecordStamp(timestamp: 1_700_000_000_000, userRecordName: "_u", deviceID: "D"),
            modified: RecordStamp(timestamp: 1_700_000_000_500, userRecordName: "_u", deviceID: "D"))
        // The record's own `parent` (a system key), not the field of that name.
        expected.parent = "P"
        let decoded = try Self.decode(Self.cloudKitStyle)
        #expect(decoded == expected)
        for (name, value) in expected.fields {
            #expect(decoded[name] == value, "field \(name)")
        }
        #expect(decoded.metadata?.zoneID == decoded.zoneID)
    }

    @Test func deletedRecords() throws {
        let entry = try WireFormat.decodeRecordEntry(
            from: wireUTF8(#"{"recordName":"gone","deleted":true,"zoneID":{"zoneName":"Z"},"recordType":"T"}"#))
        #expect(entry == .deleted(recordName: "gone", zoneID: ZoneID(zoneName: "Z")))
        let bare = try WireFormat.decodeRecordEntry(from: Data(#" { "deleted" : true , "recordName" : "x" } "#.utf8))
        #expect(bare == .deleted(recordName: "x", zoneID: nil))
        #expect(Self.error(#"{"recordName":"gone","deleted":true}"#)?.code == .invalidValue)
        #expect(
            try WireFormat.decodeRecordEntry(from: wireUTF8(#"{"deleted":false,"recordName":"a","recordType":"T"}"#))
                == .record(Record(recordType: "T", recordName: "a")))
        #expect(Self.error(#"{"recordName":"a","recordType":"T","deleted":"yes"}"#)?.code == .wrongType)
        #expect(
            wireError { () throws in
                try WireFormat.decodeRecordEntry(from: wireUTF8(#"{"deleted":true}"#))
            }?
            .code == .missingKey)
    }

    @Test func defaultsAndMetadata() throws {
        let plain = try Self.decode(#"{"recordType":"T","recordName":"n"}"#)
        #expect(plain == Record(recordType: "T", recordName: "n"))
        #expect(plain.zoneID == .defaultZone)
        #expect(plain.metadata == nil)
        let tagged = try Self.decode(
            #"{"recordType":"T","recordName":"n","recordChangeTag":"t","zoneID":{"zoneName":"Z"},"fields":{}}"#)
        #expect(tagged.metadata == RecordMetadata(changeTag: "t", zoneID: ZoneID(zoneName: "Z")))
        #expect(tagged.metadata?.zoneID == tagged.zoneID)
        // Stamps without a change tag do not make metadata.
        let untagged = try Self.decode(#"{"recordType":"T","recordName":"n","created":{"timestamp":1}}"#)
        #expect(untagged.metadata == nil)
        let nulls = try Self.decode(
            #"{"recordType":"T","recordName":"n","recordChangeTag":null,"zoneID":null,"fields":null,"created":null}"#)
        #expect(nulls == Record(recordType: "T", recordName: "n"))
    }

    @Test func duplicateKeysTakeTheLastValue() throws {
        let record = try Self.decode(
            #"{"recordName":"a","recordName":"b","recordType":"T","fields":{"f":{"type":"INT64","value":1},"f":{"type":"INT64","value":2}}}"#
        )
        #expect(record.recordName == "b")
        #expect(record["f"] == .int64(2))
    }

    // MARK: - Errors

    @Test func missingKeys() {
        #expect(Self.error(#"{"recordType":"T"}"#)?.code == .missingKey)
        #expect(Self.error(#"{}"#)?.code == .missingKey)
        let error = Self.error(#"{"recordName":"n"}"#)
        #expect(error?.code == .missingKey)
        #expect(error?.message.contains("recordType") == true)
        #expect(Self.fieldError(#"{"type":"STRING"}"#)?.code == .missingKey)
        #expect(Self.fieldError(#"{"type":"LOCATION","value":{"latitude":1}}"#)?.code == .missingKey)
        #expect(Self.fieldError(#"{"type":"REFERENCE","value":{"action":"NONE"}}"#)?.code == .missingKey)
        #expect(
            Self.error(#"{"recordName":"n","recordType":"T","created":{"userRecordName":"u"}}"#)?.code == .missingKey)
        #expect(Self.error(#"{"recordName":"n","recordType":"T","zoneID":{"owner":"u"}}"#)?.code == .missingKey)
    }

    @Test(arguments: [
        (#"{"type":"STRING","value":5}"#, WireFormatError.Code.wrongType),
        (#"{"type":"STRING","value":["a"]}"#, .wrongType),
        (#"{"value":"a","type":"INT64"}"#, .invalidValue),
        (#"{"type":"INT64","value":"12a"}"#, .invalidValue),
        (#"{"type":"INT64","value":""}"#, .invalidValue),
        (#"{"type":"INT64","value":true}"#, .wrongType),
        (#"{"type":"INT64","value":1.5}"#, .invalidValue),
        (#"{"type":"INT64","value":1e3}"#, .invalidValue),
        (#"{"type":"INT64","value":9223372036854775808}"#, .invalidValue),
        (#"{"type":"INT64","value":-9223372036854775809}"#, .invalidValue),
        (#"{"type":"INT64","value":"9223372036854775808"}"#, .invalidValue),
        (#"{"type":"INT64","value":99999999999999999999999999}"#, .invalidValue),
        (#"{"type":"TIMESTAMP","value":18446744073709551616}"#, .invalidValue),
        (#"{"type":"DOUBLE","value":"1.5"}"#, .wrongType),
        (#"{"type":"DOUBLE","value":1e400}"#, .invalidValue),
        (#"{"type":"DOUBLE","value":-1e309}"#, .invalidValue),
        (#"{"type":"BYTES","value":5}"#, .wrongType),
        (#"{"type":"BYTES","value":"a"}"#, .invalidValue),
        (#"{"type":"BYTES","value":"ab=c"}"#, .invalidValue),
        (#"{"type":"BYTES","value":"QR=="}"#, .invalidValue),
        (#"{"type":"BYTES","value":"QUJD RA=="}"#, .invalidValue),
        (##"{"type":"BYTES_LIST","value":["QQ==","#"]}"##, .invalidValue),
        (#"{"type":"REFERENCE","value":{"recordName":"x","action":"BOGUS"}}"#, .invalidValue),
        (#"{"type":"REFERENCE","value":"x"}"#, .wrongType),
        (#"{"type":"LOCATION","value":{"latitude":"1","longitude":2}}"#, .wrongType),
        (#"{"type":"ASSETID","value":{"size":"big"}}"#, .invalidValue),
        (#"{"type":"STRING_LIST","value":[1]}"#, .wrongType),
        (#"{"type":"STRING_LIST","value":"a"}"#, .wrongType),
        (#"{"type":"STRING_LIST","value":["a",null]}"#, .wrongType),
        (#"{"type":"INT64_LIST","value":[1,2.5]}"#, .invalidValue),
        (#"{"type":"BOOLEAN","value":true}"#, .unknownFieldType),
        (#"{"type":"string","value":"a"}"#, .unknownFieldType),
        (#"{"type":5,"value":"a"}"#, .wrongType),
        (#"{"value":{}}"#, .unknownFieldType),
        (#"{"value":[]}"#, .unknownFieldType),
        (#"{"value":true}"#, .unknownFieldType),
        (#"{"value":[1,"a"]}"#, .unknownFieldType),
        (#"{"value":[{}]}"#, .unknownFieldType),
        (#"{"value":[[1]]}"#, .unknownFieldType),
        (#"{"type":"STRING","type":"INT64","value":"a"}"#, .invalidValue),
        (#""STRING""#, .wrongType),
        (#"{"type":"STRING","value":"a",}"#, .malformedJSON),
    ])
    func rejectsWrongValues(field: String, code: WireFormatError.Code) {
        let error = Self.fieldError(field)
        #expect(error?.code == code, "\(field): \(String(describing: error))")
        #expect(error?.message.contains("field 'f'") == true, "\(String(describing: error))")
        #expect(error?.offset != nil)
    }

    @Test func errorsNameWhatWasBeingRead() throws {
        let error = try #require(
            Self.error(
                #"{"recordName":"r","recordType":"T","fields":{"tags":{"type":"STRING_LIST","value":["a","b",3]}}}"#))
        #expect(error.code == .wrongType)
        #expect(error.offset == 91)
        #expect(error.message == "field 'tags': element 2: expected a string, found '3'")
        let stamp = try #require(Self.error(#"{"recordName":"r","recordType":"T","modified":{"timestamp":"soon"}}"#))
        #expect(stamp.message.hasPrefix("modified: timestamp: "))
    }

    @Test func rejectsInvalidUTF8Anywhere() {
        let bad: [UInt8] = [0xC3, 0x28]
        let places: [[UInt8]] = [
            wireUTF8(#"{"recordName":""#) + bad + wireUTF8(#"","recordType":"T"}"#),
            wireUTF8(#"{"recordName":"r","recordType":"T","fields":{""#) + bad
                + wireUTF8(#"":{"type":"INT64","value":1}}}"#),
            wireUTF8(#"{"recordName":"r","recordType":"T","fields":{"f":{"type":"STRING","value":""#) + bad
                + wireUTF8(#""}}}"#),
            wireUTF8(#"{"recordName":"r","recordType":"T","fields":{"f":{"value":""#) + bad
                + wireUTF8(#"","type":"STRING"}}}"#),
            wireUTF8(#"{"recordName":"r","recordType":"T",""#) + bad + wireUTF8(#"":1}"#),
            wireUTF8(#"{"recordName":"r","recordType":"T","x":[{"y":""#) + bad + wireUTF8(#""}]}"#),
            wireUTF8(#"{"recordName":"r","recordType":"T","x\n":[{"y\n":""#) + bad + wireUTF8(#""}]}"#),
        ]
        for document in places {
            let error = wireError { () throws in try WireFormat.decodeRecord(from: document) }
            #expect(error?.code == .invalidUTF8, "\(String(decoding: document, as: UTF8.self))")
        }
    }

    @Test func rejectsLoneSurrogates() throws {
        for escape in [#"\uD800"#, #"\uDFFF"#, #"\uD83D\u0041"#, #"\uD83Dx"#] {
            let document = #"{"recordName":"r"# + escape + #"","recordType":"T"}"#
            #expect(Self.error(document)?.code == .invalidUTF8, "\(escape)")
        }
        #expect(try Self.decode(#"{"recordName":"\uD83D\uDE00","recordType":"T"}"#).recordName == "😀")
    }

    @Test func rejectsDeepNestingWithoutCrashing() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let document = #"{"recordName":"r","recordType":"T","unknown":"# + deep + "}"
        #expect(Self.error(document)?.code == .nestingTooDeep)
        let inField = Self.document(field: #"{"value":[1],"extra":"# + deep + "}")
        #expect(Self.error(inField)?.code == .nestingTooDeep)
        // 512 in all is allowed: the record object and 511 arrays.
        let deepest = String(repeating: "[", count: 511) + String(repeating: "]", count: 511)
        #expect(Self.error(#"{"recordName":"r","recordType":"T","x":"# + deepest + "}") == nil)
        let tooDeep = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(Self.error(#"{"recordName":"r","recordType":"T","x":"# + tooDeep + "}")?.code == .nestingTooDeep)
    }

    @Test func everyPrefixIsTruncated() throws {
        let documents = [try WireFormat.encode(WireSamples.everyType()), wireUTF8(Self.cloudKitStyle)]
        for bytes in documents {
            for count in 0..<bytes.count {
                let error = wireError { () throws in
                    try WireFormat.decodeRecordEntry(from: Array(bytes[..<count]))
                }
                #expect(error?.code == .truncated, "prefix of \(count) bytes: \(String(describing: error))")
                #expect(error?.offset == count)
            }
        }
    }

    @Test func rejectsTextAroundTheRecord() {
        #expect(Self.error(#"{"recordName":"r","recordType":"T"} {}"#)?.code == .malformedJSON)
        #expect(Self.error(#"{"recordName":"r","recordType":"T"},"#)?.code == .malformedJSON)
        #expect(Self.error(#"[{"recordName":"r","recordType":"T"}]"#)?.code == .wrongType)
        #expect(Self.error(#"x"#)?.code == .malformedJSON)
        #expect(Self.error(" \n{\"recordName\":\"r\",\"recordType\":\"T\"}\n ") == nil)
    }

    @Test func fuzzedInputNeverCrashes() throws {
        // Random byte flips of a valid record: any outcome but a crash is fine,
        // and what decodes must encode again.
        var random = WireRandom(seed: 43)
        let original = try WireFormat.encode(WireSamples.everyType())
        for _ in 0..<2_000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] = UInt8.random(in: 0...255, using: &random)
            }
            // (A timestamp near Int64.max milliseconds reads but cannot be
            // written back: its Date is rounded beyond Int64.)
            if let record = try? WireFormat.decodeRecord(from: bytes), let again = try? WireFormat.encode(record) {
                #expect(try WireFormat.decodeRecord(from: again) == record)
            }
        }
    }

    // MARK: - Writing errors

    @Test func writerRefusesWhatJSONCannotHold() throws {
        let bad: [(String, FieldValue)] = [
            ("nan", .double(.nan)), ("inf", .double(.infinity)), ("list", .doubleList([1, -.infinity])),
            ("place", .location(Location(latitude: .nan, longitude: 0))),
            ("speedy", .location(Location(latitude: 0, longitude: 0, speed: .infinity))),
            ("far", .timestamp(Date(timeIntervalSince1970: 1e300))),
            ("farList", .timestampList([Date(timeIntervalSince1970: -1e300)])),
            ("places", .locationList([Location(latitude: 0, longitude: .nan)])),
        ]
        for (name, value) in bad {
            var record = WireSamples.landmark()
            record[name] = value
            var writer = JSONWriter()
            writer.appendRaw("[")
            let error = wireError { () throws in try writer.writeRecord(record) }
            #expect(error?.code == .invalidValue, "\(name)")
            #expect(error?.message.contains("field '\(name)'") == true, "\(String(describing: error))")
            #expect(error?.offset == nil)
            // The writer is left as it was.
            #expect(writer.bytes == wireUTF8("["))
            #expect(wireError { () throws in try WireFormat.encode(record) }?.code == .invalidValue)
        }
    }
}
