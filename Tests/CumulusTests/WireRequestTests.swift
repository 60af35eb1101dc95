import Cumulus
import Foundation
import Testing

@Suite("The wire form of requests")
struct WireRequestTests {
    typealias F = WireFixtures

    /// Every request the client sends, with the optional parts set and not.
    static let requests: [CloudRequest] = [
        .modifyRecords(
            operations: [
                RecordOperation(.create, F.fullRecord()),
                RecordOperation(.update, F.note(1), desiredKeys: []),
                RecordOperation(.forceUpdate, F.note(2), desiredKeys: ["title", "count"]),
                RecordOperation(.replace, F.note(3)),
                RecordOperation(.update, F.note(4), clearedFields: ["gone", "caf\u{E9}"]),
                RecordOperation(
                    .forceUpdate, Record(recordType: "Note", recordName: "bare", zoneID: F.zone),
                    clearedFields: ["only"]),
                RecordOperation(.forceReplace, F.fullRecord("rec-2", zone: F.otherZone)),
                RecordOperation(
                    .delete,
                    Record(
                        recordType: "Note", recordName: "gone", zoneID: F.zone,
                        metadata: RecordMetadata(changeTag: "t9", zoneID: F.zone))),
                RecordOperation(.forceDelete, Record(recordType: "Note", recordName: "gone-2", zoneID: F.zone)),
            ], zoneID: F.zone, atomic: false),
        .modifyRecords(operations: [], zoneID: .defaultZone, atomic: true),
        .lookupRecords(recordNames: ["a", "ü"], zoneID: F.zone, desiredKeys: nil),
        .lookupRecords(recordNames: [], zoneID: .defaultZone, desiredKeys: []),
        .queryRecords(
            RecordQuery(
                recordType: "Note",
                filters: [
                    QueryFilter("title", .equals, .string("x")),
                    QueryFilter("count", .greaterThanOrEquals, .int64(3)),
                    QueryFilter("date", .lessThan, .timestamp(Date(timeIntervalSince1970: 12))),
                    QueryFilter("count", .in, .int64List([1, 2])),
                    QueryFilter("tags", .listContains, .string("b")),
                    QueryFilter("where", .notEquals, .location(Location(latitude: 1, longitude: 2))),
                ],
                sort: [QuerySort("count", ascending: false), QuerySort("title")]),
            zoneID: F.zone, resultsLimit: 50, continuationMarker: "m-1", desiredKeys: ["title"]),
        .queryRecords(
            RecordQuery(
                recordType: "Note",
                filters: [
                    QueryFilter("count", .notIn, .int64List([1, 2])),
                    QueryFilter("title", .notBeginsWith, .string("x")),
                    QueryFilter("tags", .notListContains, .string("b")),
                    QueryFilter("title", .containsAllTokens, .string("crème brûlée")),
                    QueryFilter("title", .containsAnyTokens, .string("a b")),
                    QueryFilter("___recordID", .in, .referenceList([Reference(recordName: "a", zoneID: F.zone)])),
                    QueryFilter("___recordID", .notEquals, .string("b")),
                    QueryFilter("___createTime", .greaterThan, .timestamp(Date(timeIntervalSince1970: 1.5))),
                    QueryFilter("___modTime", .lessThanOrEquals, .timestamp(Date(timeIntervalSince1970: 9))),
                    QueryFilter("___createdBy", .equals, .reference(Reference(recordName: "_u1"))),
                    QueryFilter("___modifiedBy", .notEquals, .string("_u2")),
                ],
                sort: [QuerySort("___createTime", ascending: false), QuerySort("___modTime"), QuerySort("___recordID")]),
            zoneID: F.zone, resultsLimit: nil, continuationMarker: nil, desiredKeys: nil),
        .queryRecords(
            RecordQuery(recordType: "Note"), zoneID: .defaultZone, resultsLimit: nil, continuationMarker: nil,
            desiredKeys: nil),
        .fetchZoneChanges([
            ZoneChangesRequest(zoneID: F.zone),
            ZoneChangesRequest(
                zoneID: F.otherZone, syncToken: SyncToken(rawValue: "tok"), resultsLimit: 200, desiredKeys: [],
                desiredRecordTypes: ["Note"]),
        ]),
        .fetchDatabaseChanges(syncToken: nil, resultsLimit: nil),
        .fetchDatabaseChanges(syncToken: SyncToken(rawValue: "db-1"), resultsLimit: 10),
        .listZones,
        .lookupZones([F.zone, .defaultZone]),
        .modifyZones([.create(F.zone), .delete(F.otherZone)]),
        .modifySubscriptions([.save(Subscription(subscriptionID: "s1", zoneID: F.zone)), .delete("s2")]),
        .modifySubscriptions([
            .save(
                Subscription(
                    subscriptionID: "q1",
                    query: RecordQuery(recordType: "Note", filters: [QueryFilter("title", .beginsWith, .string("a"))]),
                    firesOn: [.created, .deleted])),
            .save(Subscription(subscriptionID: "q2", query: RecordQuery(recordType: "Note"), zoneID: F.zone)),
        ]),
        .listSubscriptions,
        .lookupSubscriptions(["s1", "s2"]),
        .currentUser,
        .createToken(apnsEnvironment: .production),
        .createToken(apnsEnvironment: nil),
        .fetchRecordChanges(ZoneChangesRequest(zoneID: F.zone)),
        .fetchRecordChanges(
            ZoneChangesRequest(
                zoneID: F.otherZone, syncToken: SyncToken(rawValue: "tok"), resultsLimit: 5, desiredKeys: ["title"],
                desiredRecordTypes: ["Note"])),
        .fetchChangedZones(syncToken: nil),
        .fetchChangedZones(syncToken: SyncToken(rawValue: "db-2")),
        .requestAssetUploads(
            [
                AssetUploadRequest(recordName: "n1", recordType: "Note", fieldName: "photo"),
                AssetUploadRequest(recordName: nil, recordType: "Ünï", fieldName: "pages"),
            ], zoneID: F.zone),
        .requestAssetUploads([], zoneID: .defaultZone),
    ]

    @Test("every request reads back as it was written", arguments: requests)
    func roundTrip(_ request: CloudRequest) throws {
        let body = try request.encodedBody()
        if request.operation.httpMethod == "GET" {
            #expect(body == nil)
        }
        let back = try CloudRequest.decode(request.operation, body: body ?? [])
        #expect(back == request)
    }

    @Test("the bodyless operations accept an empty body, blanks and an object")
    func bodyless() throws {
        for operation in [CloudOperation.listZones, .listSubscriptions, .currentUser, .createToken] {
            for body in ["", "  \n", "{}", #"{"extra":[1,{"x":null}]}"#] {
                #expect(try CloudRequest.decode(operation, body: utf8(body)).operation == operation)
            }
        }
        #expect(
            try CloudRequest.decode(.createToken, body: utf8(#"{"apnsEnvironment":"development"}"#))
                == .createToken(apnsEnvironment: .development))
        #expect(try CloudRequest.decode(.createToken, body: utf8("{}")) == .createToken(apnsEnvironment: nil))
        let error = cloudError { try CloudRequest.decode(.createToken, body: utf8(#"{"apnsEnvironment":"staging"}"#)) }
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("staging") == true)
    }

    @Test("a modify request in CloudKit's own shape: other key order, unknown keys, typeless fields")
    func modifyInCloudKitShape() throws {
        let body = """
            {
              "numbersAsStrings": true,
              "operations": [
                {"record": {"fields": {"title": {"value": "Hi"}, "count": {"value": "12", "type": "INT64"},
                                       "ratio": {"value": 0.5}, "tags": {"value": ["a", "b"]},
                                       "gone": {"value": null}},
                            "recordType": "Note", "recordName": "n1", "extra": {"deep": [[[]]]}},
                 "operationType": "forceUpdate", "desiredKeys": null},
                {"operationType": "delete", "record": {"recordName": "n2", "recordChangeTag": "t2"}}
              ],
              "atomic": false,
              "zoneID": {"ownerRecordName": "_o", "zoneName": "Z"}
            }
            """
        let request = try CloudRequest.decode(.modifyRecords, body: utf8(body))
        let zone = ZoneID(zoneName: "Z", ownerRecordName: "_o")
        guard case .modifyRecords(let operations, let zoneID, let atomic) = request else {
            Issue.record("not a modify request: \(request)")
            return
        }
        #expect(zoneID == zone)
        #expect(atomic == false)
        #expect(operations.count == 2)
        #expect(operations[0].type == .forceUpdate)
        #expect(operations[0].desiredKeys == nil)
        let record = operations[0].record
        #expect(record.zoneID == zone)
        #expect(record["title"] == .string("Hi"))
        #expect(record["count"] == .int64(12))
        #expect(record["ratio"] == .double(0.5))
        #expect(record["tags"] == .stringList(["a", "b"]))
        #expect(record["gone"] == nil)
        #expect(operations[0].clearedFields == ["gone"])
        #expect(operations[1].type == .delete)
        #expect(operations[1].record.recordName == "n2")
        #expect(operations[1].record.changeTag == "t2")
        #expect(operations[1].record.zoneID == zone)
        #expect(operations[1].record.metadata?.zoneID == zone)
    }

    @Test("an update writes each cleared field as a null value inside fields; other operations write none")
    func clearedFieldsWritten() throws {
        var record = Record(recordType: "T", recordName: "a", fields: ["kept": .int64(1)])
        let written = { (operation: RecordOperation) throws -> String in
            let request = CloudRequest.modifyRecords(operations: [operation], zoneID: .defaultZone, atomic: true)
            return String(decoding: try #require(try request.encodedBody()), as: UTF8.self)
        }
        for type in [RecordOperationType.update, .forceUpdate] {
            let body = try written(RecordOperation(type, record, clearedFields: ["x", "y"]))
            #expect(
                body.contains(#""fields":{"kept":{"type":"INT64","value":1},"x":{"value":null},"y":{"value":null}}"#))
        }
        for type in [RecordOperationType.create, .replace, .forceReplace, .delete] {
            #expect(try !written(RecordOperation(type, record, clearedFields: ["x"])).contains("null"), "\(type)")
        }
        record.fields = [:]
        #expect(
            try written(RecordOperation(.update, record, clearedFields: ["x"])).contains(
                #""fields":{"x":{"value":null}}"#))
    }

    @Test("a null field clears it in an update or forceUpdate, and is no value in the other saves")
    func nullFieldsRead() throws {
        func operation(_ type: String, fields: String) throws -> RecordOperation {
            let body =
                #"{"operations":[{"operationType":"\#(type)","record":{"recordName":"a","recordType":"T","fields":\#(fields)}}]}"#
            guard case .modifyRecords(let operations, _, _) = try CloudRequest.decode(.modifyRecords, body: utf8(body))
            else { throw CloudError(.internalError, reason: "not a modify request") }
            return try #require(operations.first)
        }
        let fields =
            #"{"k":{"value":1},"u":{"value":null},"t":{"type":"STRING","value":null},"v":{"value":null,"type":"INT64"}}"#
        for type in ["update", "forceUpdate"] {
            let read = try operation(type, fields: fields)
            #expect(read.record.fields == ["k": .int64(1)])
            #expect(read.clearedFields == ["u", "t", "v"])
        }
        for type in ["create", "replace", "forceReplace"] {
            let read = try operation(type, fields: fields)
            #expect(read.record.fields == ["k": .int64(1)])
            #expect(read.clearedFields.isEmpty)
        }
        // Given twice, a name is cleared once; given a value as well, it is in both, for the server to refuse.
        let twice = try operation(
            "update", fields: #"{"u":{"value":null},"k":{"value":1},"u":{"value":null},"k":{"value":null}}"#)
        #expect(twice.record.fields == ["k": .int64(1)])
        #expect(twice.clearedFields == ["u", "k"])
        // Names are bytes: the precomposed and decomposed names are two fields.
        let names = try operation("update", fields: #"{"caf\u00e9":{"value":null},"cafe\u0301":{"value":1}}"#)
        #expect(names.clearedFields == ["caf\u{E9}"])
        #expect(names.record.fields.keys.count == 1)
        #expect(names.record.fields["caf\u{E9}"] == nil)
    }

    @Test("missing zoneID is the default zone, missing atomic is true")
    func defaults() throws {
        let body = #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T"}}]}"#
        let request = try CloudRequest.decode(.modifyRecords, body: utf8(body))
        #expect(
            request
                == .modifyRecords(
                    operations: [RecordOperation(.create, Record(recordType: "T", recordName: "a"))],
                    zoneID: .defaultZone, atomic: true))
    }

    @Test("a delete's record keeps its name, type, change tag and zone, so that it reads back as it was read")
    func deleteDropsFields() throws {
        // The round trip FuzzProtocol checks (Fuzz/Corpus/protocol/delete-with-fields).
        let body = """
            {"operations":[{"operationType":"delete","record":{"recordName":"n","recordType":"T",\
            "recordChangeTag":"t1","fields":{"a":{"value":1,"type":"INT64"}},\
            "created":{"timestamp":5},"modified":{"timestamp":6}}}]}
            """
        let request = try CloudRequest.decode(.modifyRecords, body: utf8(body))
        let record = Record(
            recordType: "T", recordName: "n", metadata: RecordMetadata(changeTag: "t1", zoneID: .defaultZone))
        #expect(
            request
                == .modifyRecords(operations: [RecordOperation(.delete, record)], zoneID: .defaultZone, atomic: true))
        let encoded = try #require(try request.encodedBody())
        #expect(try CloudRequest.decode(.modifyRecords, body: encoded) == request)
    }

    @Test("a delete's record may have an empty type, unlike a save's")
    func deleteWithEmptyType() throws {
        let body = #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"n","recordType":""}}]}"#
        let request = try CloudRequest.decode(.modifyRecords, body: utf8(body))
        guard case .modifyRecords(let operations, _, _) = request else {
            Issue.record("not a modify: \(request)")
            return
        }
        #expect(operations.map(\.record.recordName) == ["n"])
        #expect(operations.map(\.record.recordType) == [""])
    }

    @Test("a typeless field takes the schema's type before its JSON shape")
    func fieldTypesLookup() throws {
        let body = """
            {"operations":[{"operationType":"create","record":{
              "fields":{"when":{"value":1700000000000},"n":{"value":3},"s":{"value":"x"},"d":{"value":4}},
              "recordName":"a","recordType":"Event"}}]}
            """
        let lookup: FieldTypeLookup = { recordType, field in
            guard recordType == "Event" else { return nil }
            return ["when": .timestamp, "d": .double][field]
        }
        let request = try CloudRequest.decode(.modifyRecords, body: utf8(body), fieldTypes: lookup)
        guard case .modifyRecords(let operations, _, _) = request else {
            Issue.record("not a modify request")
            return
        }
        let record = operations[0].record
        #expect(record["when"] == .timestamp(Date(timeIntervalSince1970: 1_700_000_000)))
        #expect(record["n"] == .int64(3))
        #expect(record["s"] == .string("x"))
        #expect(record["d"] == .double(4))
    }

    @Test("a schema type the value does not fit, and a shape without a type, are BAD_REQUEST naming the field")
    func typelessErrors() {
        let lookup: FieldTypeLookup = { _, field in field == "when" ? .timestamp : nil }
        let wrong =
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"E","fields":{"when":{"value":"soon"}}}}]}"#
        let error = cloudError { try CloudRequest.decode(.modifyRecords, body: utf8(wrong), fieldTypes: lookup) }
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("when") == true)
        let shapeless =
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"E","fields":{"obj":{"value":{"a":1}}}}}]}"#
        let other = cloudError { try CloudRequest.decode(.modifyRecords, body: utf8(shapeless)) }
        #expect(other?.code == .badRequest)
        #expect(other?.reason.contains("obj") == true)
    }

    @Test("a query's typeless filter value takes the schema's type, whatever the key order")
    func typelessFilter() throws {
        let body = """
            {"zoneID":{"zoneName":"Z"},"resultsLimit":"20","query":{
              "filterBy":[{"fieldValue":{"value":1000},"fieldName":"when","comparator":"GREATER_THAN"},
                          {"comparator":"IN","fieldName":"n","fieldValue":{"value":[1,2]}}],
              "sortBy":[{"fieldName":"when"}],
              "recordType":"Event"}}
            """
        let lookup: FieldTypeLookup = { type, field in type == "Event" && field == "when" ? .timestamp : nil }
        let request = try CloudRequest.decode(.queryRecords, body: utf8(body), fieldTypes: lookup)
        let query = RecordQuery(
            recordType: "Event",
            filters: [
                QueryFilter("when", .greaterThan, .timestamp(Date(timeIntervalSince1970: 1))),
                QueryFilter("n", .in, .int64List([1, 2])),
            ], sort: [QuerySort("when")])
        #expect(
            request
                == .queryRecords(
                    query, zoneID: ZoneID(zoneName: "Z"), resultsLimit: 20, continuationMarker: nil, desiredKeys: nil))
    }

    @Test("changes/zone in CloudKit's shape, with a request-wide resultsLimit")
    func zoneChangesShape() throws {
        let body =
            #"{"resultsLimit":5,"zones":[{"syncToken":null,"zoneID":{"zoneName":"A"}},{"zoneID":{"zoneName":"B"},"resultsLimit":7,"syncToken":"t"}]}"#
        let request = try CloudRequest.decode(.fetchZoneChanges, body: utf8(body))
        #expect(
            request
                == .fetchZoneChanges([
                    ZoneChangesRequest(zoneID: ZoneID(zoneName: "A"), resultsLimit: 5),
                    ZoneChangesRequest(
                        zoneID: ZoneID(zoneName: "B"), syncToken: SyncToken(rawValue: "t"), resultsLimit: 7),
                ]))
    }

    @Test("subscription updates are saves")
    func subscriptionUpdate() throws {
        let body =
            #"{"operations":[{"subscription":{"zoneID":{"zoneName":"A"},"subscriptionID":"s"},"operationType":"update"}]}"#
        let request = try CloudRequest.decode(.modifySubscriptions, body: utf8(body))
        #expect(
            request == .modifySubscriptions([.save(Subscription(subscriptionID: "s", zoneID: ZoneID(zoneName: "A")))]))
    }

    /// Bodies that are not valid requests, with a word the reason must hold.
    static let badBodies: [(CloudOperation, String, String)] = [
        (.modifyRecords, "", "end of input"),
        (.modifyRecords, "{", "end of input"),
        (
            .modifyRecords, #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T"}}"#,
            "end of input"
        ),
        (.modifyRecords, "[]", "object"),
        (.modifyRecords, #"{"operations":{}}"#, "array"),
        (.modifyRecords, "{}", "operations"),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"upsert","record":{"recordName":"a","recordType":"T"}}]}"#, "upsert"
        ),
        (.modifyRecords, #"{"operations":[{"record":{"recordName":"a","recordType":"T"}}]}"#, "operationType"),
        (.modifyRecords, #"{"operations":[{"operationType":"create"}]}"#, "record"),
        (.modifyRecords, #"{"operations":[{"operationType":"create","record":{"recordName":"a"}}]}"#, "recordType"),
        (
            .modifyRecords, #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":""}}]}"#,
            "empty recordType"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"record":{"recordName":"a","recordType":""},"operationType":"forceReplace"}]}"#,
            "empty recordType"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"x":{"type":"BOOLEAN","value":true}}}}]}"#,
            "BOOLEAN"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"t":{"type":"TIMESTAMP_LIST","value":[9223372036854775806]}}}}]}"#,
            "range of dates"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"t":{"type":"TIMESTAMP","value":"9223372036854775806"}}}}]}"#,
            "range of dates"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"t":{"type":"TIMESTAMP","value":9223372036854775296}}}}]}"#,
            "range of dates"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"update","record":{"recordName":"a","recordType":"T","fields":{"f":{"type":"STRING"}}}}]}"#,
            "'value'"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"update","record":{"recordName":"a","recordType":"T","fields":{"f":{"type":"NOPE","value":null}}}}]}"#,
            "NOPE"
        ),
        (
            .modifyRecords,
            #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"a","recordType":"T","fields":{"f":null}}}]}"#,
            "field 'f'"
        ),
        (.modifyRecords, #"{"operations":[],"atomic":"yes"}"#, "boolean"),
        (.modifyRecords, #"{"operations":[]} x"#, "after the end"),
        (.modifyRecords, #"{"operations":[],}"#, "trailing comma"),
        (.lookupRecords, #"{"records":[{"name":"a"}]}"#, "recordName"),
        (.lookupRecords, #"{"records":[{"recordName":7}]}"#, "recordName"),
        (
            .queryRecords,
            #"{"query":{"recordType":"T","filterBy":[{"comparator":"NEARBY","fieldName":"l","fieldValue":{"value":1}}]}}"#,
            "NEARBY"
        ),
        (.queryRecords, #"{"query":{"filterBy":[]}}"#, "recordType"),
        (
            .queryRecords,
            #"{"query":{"recordType":"T","filterBy":[{"comparator":"EQUALS","fieldName":"f","fieldValue":{"value":null}}]}}"#,
            "null"
        ),
        (
            .queryRecords,
            #"{"query":{"recordType":"T","filterBy":[{"comparator":"EQUALS","fieldName":"f","fieldValue":{"type":"TIMESTAMP","value":9223372036854775807}}]}}"#,
            "range of dates"
        ),
        (.queryRecords, #"{"query":{"recordType":"T"},"resultsLimit":-1}"#, "negative"),
        (.queryRecords, #"{"query":{"recordType":"T"},"resultsLimit":1.5}"#, "integer"),
        (.fetchZoneChanges, #"{"zones":[{"syncToken":"t"}]}"#, "zoneID"),
        (.fetchZoneChanges, #"{"zones":[{"zoneID":{"ownerRecordName":"o"}}]}"#, "zoneName"),
        (.modifyZones, #"{"operations":[{"operationType":"rename","zone":{"zoneID":{"zoneName":"a"}}}]}"#, "rename"),
        (.modifyZones, #"{"operations":[{"operationType":"create","zone":{}}]}"#, "zoneID"),
        (
            .modifySubscriptions,
            #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s","subscriptionType":"query","zoneID":{"zoneName":"a"}}}]}"#,
            "query"
        ),
        (
            .modifySubscriptions, #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s"}}]}"#,
            "zoneID"
        ),
        (
            .modifySubscriptions,
            #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s","subscriptionType":"query","query":{"recordType":"T"},"firesOn":["move"]}}]}"#,
            "move"
        ),
        (
            .modifySubscriptions,
            #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s","subscriptionType":"record","zoneID":{"zoneName":"a"}}}]}"#,
            "record"
        ),
        (.lookupSubscriptions, #"{"subscriptions":[{}]}"#, "subscriptionID"),
        (.lookupZones, #"{"zones":[{"zoneName":"\ud800"}]}"#, "surrogate"),
        (.currentUser, "nope", "object"),
        (.requestAssetUploads, #"{"zoneID":{"zoneName":"A"}}"#, "tokens"),
        (.requestAssetUploads, #"{"tokens":[{"recordName":"a","fieldName":"f"}]}"#, "recordType"),
        (.requestAssetUploads, #"{"tokens":[{"recordType":"T"}]}"#, "fieldName"),
    ]

    @Test("a body that is not a valid request is BAD_REQUEST saying what and where", arguments: badBodies.indices)
    func badRequest(_ index: Int) {
        let (operation, body, word) = Self.badBodies[index]
        let error = cloudError { try CloudRequest.decode(operation, body: utf8(body)) }
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains(word) == true, "\(error?.reason ?? "")")
        #expect(error?.reason.contains(operation.rawValue) == true)
    }

    @Test("every truncation of a valid request is BAD_REQUEST, never a trap")
    func truncations() throws {
        let request = Self.requests[0]
        let body = try #require(try request.encodedBody())
        for count in stride(from: 0, to: body.count, by: 7) {
            let error = cloudError { try CloudRequest.decode(.modifyRecords, body: Array(body.prefix(count))) }
            #expect(error?.code == .badRequest)
        }
    }

    @Test("100,000 levels of nesting are BAD_REQUEST, wherever they are")
    func deepNesting() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let deepObject = String(repeating: #"{"a":"#, count: 100_000) + "1" + String(repeating: "}", count: 100_000)
        let bodies = [
            deep,
            #"{"operations":"# + deep + "}",
            #"{"extra":"# + deep + #","operations":[]}"#,
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","x":"# + deepObject
                + "}}]}",
            #"{"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"f":{"value":"#
                + deep + "}}}}]}",
        ]
        for body in bodies {
            let error = cloudError { try CloudRequest.decode(.modifyRecords, body: utf8(body)) }
            #expect(error?.code == .badRequest)
        }
    }

    @Test("a record JSON cannot hold is BAD_REQUEST when the request is written")
    func unwritable() {
        var record = Record(recordType: "T", recordName: "a")
        record["x"] = .double(.nan)
        let request = CloudRequest.modifyRecords(
            operations: [RecordOperation(.create, record)], zoneID: .defaultZone, atomic: true)
        let error = cloudError { try request.encodedBody() }
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("'x'") == true)
    }
}
