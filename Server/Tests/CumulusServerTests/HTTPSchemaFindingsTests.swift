import Cumulus
import CumulusServer
import Foundation
import Testing

/// What schemathesis found when it ran Server/openapi.yaml against the
/// server: the server fixes, and the answers the document now describes.
@Suite("HTTP answers the OpenAPI document describes")
struct HTTPSchemaFindingsTests {
    static func create(_ name: String, type: String, fields: String = "{}") -> String {
        #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"\#(type)","fields":\#(fields)}}"#
    }

    @Test("a save of a record with an empty type is 400 for the whole request, and stores nothing")
    func emptyRecordType() async throws {
        try await HTTPTestServer.with { server in
            for operation in ["create", "update", "forceUpdate", "replace", "forceReplace"] {
                let body =
                    #"{"operations":[\#(Self.create("ok", type: "Note")),{"operationType":"\#(operation)","record":{"recordName":"n","recordType":""}}]}"#
                let answer = try await server.sendAsUser("records/modify", body: body)
                #expect(answer.isError(.badRequest, status: 400), "\(operation): \(answer.status) \(answer.json)")
                #expect(answer.reason?.contains("empty recordType") == true, "\(answer.reason ?? "")")
            }
            let lookup = try await server.sendAsUser("records/lookup", body: #"{"records":[{"recordName":"ok"}]}"#)
            let records = lookup.json["records"] as? [[String: Any]]
            #expect(records?.first?["serverErrorCode"] as? String == "NOT_FOUND")
            // A delete needs only the name: its record may have an empty type.
            _ = try await server.sendAsUser(
                "records/modify", body: #"{"operations":[\#(Self.create("d", type: "Note"))]}"#)
            let delete = try await server.sendAsUser(
                "records/modify",
                body: #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"d","recordType":""}}]}"#)
            #expect(delete.status == 200)
            #expect((delete.json["records"] as? [[String: Any]])?.first?["deleted"] as? Bool == true)
        }
    }

    @Test("a typed field with a null value is no value")
    func typedNullField() async throws {
        try await HTTPTestServer.with { server in
            let fields = #"{"gone":{"type":"LOCATION_LIST","value":null},"kept":{"type":"STRING","value":"x"}}"#
            let answer = try await server.sendAsUser(
                "records/modify", body: #"{"operations":[\#(Self.create("n", type: "Note", fields: fields))]}"#)
            #expect(answer.status == 200)
            let record = (answer.json["records"] as? [[String: Any]])?.first
            #expect((record?["fields"] as? [String: Any])?.keys.sorted() == ["kept"])
        }
    }

    @Test("a forceUpdate clears a field sent with a null value, typed or not, and keeps the fields not sent")
    func nullFieldClearsInUpdate() async throws {
        try await HTTPTestServer.with { server in
            let fields = #"{"a":{"type":"STRING","value":"x"},"b":{"type":"INT64","value":1},"c":{"value":2}}"#
            _ = try await server.sendAsUser(
                "records/modify", body: #"{"operations":[\#(Self.create("n", type: "Note", fields: fields))]}"#)
            let clears = [#"{"a":{"value":null}}"#, #"{"b":{"type":"INT64","value":null},"d":{"value":null}}"#]
            var kept = ["a", "b", "c"]
            for clear in clears {
                let body =
                    #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"n","recordType":"Note","fields":\#(clear)}}]}"#
                let answer = try await server.sendAsUser("records/modify", body: body)
                kept.removeFirst()
                let record = (answer.json["records"] as? [[String: Any]])?.first
                #expect((record?["fields"] as? [String: Any])?.keys.sorted() == kept, "\(answer.json)")
            }
            let both = #"{"c":{"value":3},"c":{"value":null}}"#
            let refused = try await server.sendAsUser(
                "records/modify",
                body:
                    #"{"operations":[{"operationType":"forceUpdate","record":{"recordName":"n","recordType":"Note","fields":\#(both)}}]}"#
            )
            let entry = (refused.json["records"] as? [[String: Any]])?.first
            #expect(entry?["serverErrorCode"] as? String == "BAD_REQUEST", "\(refused.json)")
        }
    }

    @Test("a timestamp a date cannot hold is 400, not a server error, and stores nothing")
    func timestampOutOfRange() async throws {
        try await HTTPTestServer.with { server in
            let fields = [
                #"{"t":{"type":"TIMESTAMP_LIST","value":[9223372036854775806]}}"#,
                #"{"t":{"type":"TIMESTAMP","value":"9223372036854775806"}}"#,
                #"{"t":{"type":"TIMESTAMP","value":9223372036854775296}}"#,
            ]
            for field in fields {
                let answer = try await server.sendAsUser(
                    "records/modify", body: #"{"operations":[\#(Self.create("n", type: "Note", fields: field))]}"#)
                #expect(answer.isError(.badRequest, status: 400), "\(field): \(answer.status) \(answer.json)")
            }
            let lookup = try await server.sendAsUser("records/lookup", body: #"{"records":[{"recordName":"n"}]}"#)
            #expect((lookup.json["records"] as? [[String: Any]])?.first?["serverErrorCode"] as? String == "NOT_FOUND")
            let largest = #"{"t":{"type":"TIMESTAMP_LIST","value":["9223372036854775295",-9223372036854775808]}}"#
            let saved = try await server.sendAsUser(
                "records/modify", body: #"{"operations":[\#(Self.create("n", type: "Note", fields: largest))]}"#)
            #expect(saved.status == 200, "\(saved.json)")
        }
    }

    @Test("a filter's value is required and never null; a comparator takes only its kinds of value")
    func filterValues() async throws {
        try await HTTPTestServer.with { server in
            let bad = [
                #"{"comparator":"EQUALS","fieldName":"f","fieldValue":{"value":null}}"#,
                #"{"comparator":"EQUALS","fieldName":"f"}"#,
                #"{"comparator":"NOT_IN","fieldName":"f","fieldValue":{"type":"STRING","value":""}}"#,
                #"{"comparator":"LIST_CONTAINS","fieldName":"f","fieldValue":{"value":["a"]}}"#,
                #"{"comparator":"BEGINS_WITH","fieldName":"f","fieldValue":{"value":1}}"#,
                #"{"comparator":"CONTAINS_ALL_TOKENS","fieldName":"f","fieldValue":{"value":" ?! "}}"#,
            ]
            for filter in bad {
                let answer = try await server.sendAsUser(
                    "records/query", body: #"{"query":{"recordType":"Note","filterBy":[\#(filter)]}}"#)
                #expect(answer.isError(.badRequest, status: 400), "\(filter): \(answer.status) \(answer.json)")
            }
            let good = #"{"comparator":"CONTAINS_ANY_TOKENS","fieldName":"f","fieldValue":{"value":"a b"}}"#
            let answer = try await server.sendAsUser(
                "records/query", body: #"{"query":{"recordType":"Note","filterBy":[\#(good)]}}"#)
            #expect(answer.status == 200)
        }
    }

    @Test("the same record, zone or subscription in two operations of a request is 400")
    func duplicateItems() async throws {
        try await HTTPTestServer.with { server in
            let zone = #"{"operationType":"create","zone":{"zoneID":{"zoneName":"z"}}}"#
            let subscription =
                #"{"operationType":"create","subscription":{"subscriptionID":"s","subscriptionType":"zone","zoneID":{"zoneName":"z"}}}"#
            let requests = [
                (
                    "records/modify",
                    #"{"operations":[\#(Self.create("n", type: "T")),\#(Self.create("n", type: "T"))]}"#
                ),
                ("zones/modify", #"{"operations":[\#(zone),\#(zone)]}"#),
                (
                    "subscriptions/modify",
                    #"{"operations":[\#(subscription),{"operationType":"delete","subscription":{"subscriptionID":"s"}}]}"#
                ),
            ]
            for (operation, body) in requests {
                let answer = try await server.sendAsUser(operation, body: body)
                #expect(answer.isError(.badRequest, status: 400), "\(operation): \(answer.status) \(answer.json)")
                #expect(answer.reason?.contains("more than one operation") == true, "\(answer.reason ?? "")")
            }
        }
    }

    @Test("more than 200 items in a request is 400")
    func tooManyItems() async throws {
        try await HTTPTestServer.with { server in
            let zones = (0...200).map { #"{"zoneName":"z\#($0)"}"# }.joined(separator: ",")
            let answer = try await server.sendAsUser("zones/lookup", body: #"{"zones":[\#(zones)]}"#)
            #expect(answer.isError(.badRequest, status: 400), "\(answer.status) \(answer.json)")
        }
    }

    @Test("sync tokens: a zone's bad token fails that zone; a database's is 400, or 410 when well-formed")
    func syncTokens() async throws {
        try await HTTPTestServer.with { server in
            let created = try await server.sendAsUser(
                "zones/modify", body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"z"}}}]}"#
            )
            #expect(created.status == 200)
            let zones = try await server.sendAsUser(
                "changes/zone",
                body: #"{"zones":[{"zoneID":{"zoneName":"z"},"syncToken":"AAA"},{"zoneID":{"zoneName":"z"}}]}"#)
            #expect(zones.status == 200)
            let entries = zones.json["zones"] as? [[String: Any]] ?? []
            #expect(entries.map { $0["serverErrorCode"] as? String } == ["BAD_REQUEST", nil])
            let malformed = try await server.sendAsUser("changes/database", body: #"{"syncToken":"AAA"}"#)
            #expect(malformed.isError(.badRequest, status: 400), "\(malformed.status) \(malformed.json)")
            let expired = try await server.sendAsUser("changes/database", body: #"{"syncToken":"d0-0"}"#)
            #expect(expired.isError(.changeTokenExpired, status: 410), "\(expired.status) \(expired.json)")
        }
    }

    @Test("a method an operation does not take is 404, as the document says (the server sends no 405)")
    func otherMethods() async throws {
        try await HTTPTestServer.with { server in
            for method in ["PUT", "DELETE", "PATCH", "GET"] {
                let answer = try await server.send(
                    method, server.path("records/modify"), query: server.userQuery, body: Array("{}".utf8))
                #expect(answer.isError(.notFound, status: 404), "\(method): \(answer.status) \(answer.json)")
            }
        }
    }
}
