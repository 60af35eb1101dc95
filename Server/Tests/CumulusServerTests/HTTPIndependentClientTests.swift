import Cumulus
import CumulusServer
import Foundation
import Testing

/// What an independent CloudKit Web Services client sends, answered as the
/// reference says (`../shared/reference/sharing-assets-users.md`).
@Suite("HTTP for independent clients")
struct HTTPIndependentClientTests {
    static func create(_ name: String, zone: String = "Notes") -> String {
        #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Note","fields":{"title":{"value":"\#(name)"}}}}"#
    }

    @Test("records/changes and zones/changes page a zone's records and the changed zones")
    func olderChangeEndpoints() async throws {
        try await HTTPTestServer.with { server in
            let zone = #"{"zoneName":"Notes"}"#
            _ = try await server.sendAsUser(
                "zones/modify", body: #"{"operations":[{"operationType":"create","zone":{"zoneID":\#(zone)}}]}"#)
            let created = try await server.sendAsUser(
                "records/modify",
                body:
                    #"{"zoneID":\#(zone),"operations":[\#(Self.create("a")),\#(Self.create("b")),\#(Self.create("c"))]}"#
            )
            #expect(created.status == 200)

            // A first page of two, then the rest from its token.
            let first = try await server.sendAsUser("records/changes", body: #"{"zoneID":\#(zone),"resultsLimit":2}"#)
            #expect(first.status == 200, "\(first.json)")
            #expect((first.json["zoneID"] as? [String: Any])?["zoneName"] as? String == "Notes")
            #expect(
                (first.json["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["a", "b"])
            #expect(first.json["moreComing"] as? Bool == true)
            let token = try #require(first.json["syncToken"] as? String)
            let rest = try await server.sendAsUser(
                "records/changes", body: #"{"zoneID":\#(zone),"syncToken":"\#(token)"}"#)
            #expect((rest.json["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["c"])
            #expect(rest.json["moreComing"] as? Bool == false)

            // A missing zone fails the request, as the one zone it names.
            let missing = try await server.sendAsUser("records/changes", body: #"{"zoneID":{"zoneName":"None"}}"#)
            #expect(missing.json["serverErrorCode"] as? String == "ZONE_NOT_FOUND", "\(missing.json)")
            #expect(missing.status != 200)

            // zones/changes: the zones changed since the token, each a zone dictionary.
            let zones = try await server.sendAsUser("zones/changes", body: "{}")
            #expect(zones.status == 200, "\(zones.json)")
            let names = (zones.json["zones"] as? [[String: Any]])?.compactMap {
                ($0["zoneID"] as? [String: Any])?["zoneName"] as? String
            }
            #expect(Set(names ?? []) == ["_defaultZone", "Notes"])
            let since = try #require(zones.json["syncToken"] as? String)
            let none = try await server.sendAsUser("zones/changes", body: #"{"syncToken":"\#(since)"}"#)
            #expect((none.json["zones"] as? [[String: Any]])?.isEmpty == true)
        }
    }

    @Test("per-record error entries carry a uuid, as whole-request errors do")
    func perRecordErrorsHaveUUIDs() async throws {
        try await HTTPTestServer.with { server in
            let lookup = try await server.sendAsUser("records/lookup", body: #"{"records":[{"recordName":"nope"}]}"#)
            let entry = try #require((lookup.json["records"] as? [[String: Any]])?.first)
            #expect(entry["serverErrorCode"] as? String == "NOT_FOUND")
            let uuid = try #require(entry["uuid"] as? String)
            #expect(UUID(uuidString: uuid) != nil)
            let twice = try await server.sendAsUser(
                "records/modify", body: #"{"operations":[\#(Self.create("x")),\#(Self.create("x"))]}"#)
            #expect(twice.json["uuid"] as? String != nil)
            let exists = try await server.sendAsUser(
                "records/modify", body: #"{"operations":[\#(Self.create("y"))]}"#)
            #expect(exists.status == 200)
            let again = try await server.sendAsUser("records/modify", body: #"{"operations":[\#(Self.create("y"))]}"#)
            let conflict = try #require((again.json["records"] as? [[String: Any]])?.first)
            #expect(conflict["serverErrorCode"] as? String == "EXISTS" && conflict["uuid"] is String)
        }
    }

    @Test("list comparators take untyped values: a single element for LIST_CONTAINS, a list for IN")
    func untypedListComparators() async throws {
        try await HTTPTestServer.with { server in
            let fields = #"{"tags":{"value":["a","b"],"type":"STRING_LIST"},"count":{"value":3,"type":"INT64"}}"#
            let save =
                #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":\#(fields)}}]}"#
            #expect(try await server.sendAsUser("records/modify", body: save).status == 200)
            let filters = [
                #"{"comparator":"LIST_CONTAINS","fieldName":"tags","fieldValue":{"value":"b"}}"#,
                #"{"comparator":"NOT_LIST_CONTAINS","fieldName":"tags","fieldValue":{"value":"z"}}"#,
                #"{"comparator":"IN","fieldName":"count","fieldValue":{"value":[1,3]}}"#,
                #"{"comparator":"NOT_IN","fieldName":"count","fieldValue":{"value":[1,2]}}"#,
            ]
            for filter in filters {
                let answer = try await server.sendAsUser(
                    "records/query", body: #"{"query":{"recordType":"Note","filterBy":[\#(filter)]}}"#)
                #expect(answer.status == 200, "\(filter): \(answer.json)")
                let names = (answer.json["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String }
                #expect(names == ["n"], "\(filter): \(answer.json)")
            }
        }
    }
}
