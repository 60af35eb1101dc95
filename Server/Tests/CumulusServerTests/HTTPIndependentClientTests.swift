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

    @Test("a create without recordName gets a UUID from the server, answered with the record")
    func createWithoutName() async throws {
        try await HTTPTestServer.with { server in
            let save =
                #"{"operations":[{"operationType":"create","record":{"recordType":"Note","fields":{"t":{"value":"x"}}}}]}"#
            let answer = try await server.sendAsUser("records/modify", body: save)
            #expect(answer.status == 200, "\(answer.json)")
            let record = try #require((answer.json["records"] as? [[String: Any]])?.first)
            let name = try #require(record["recordName"] as? String)
            #expect(UUID(uuidString: name) != nil && record["recordChangeTag"] is String, "\(record)")
            let lookup = try await server.sendAsUser(
                "records/lookup", body: #"{"records":[{"recordName":"\#(name)"}]}"#)
            #expect((lookup.json["records"] as? [[String: Any]])?.first?["recordType"] as? String == "Note")
            // Only a create may leave the name out.
            let update =
                #"{"operations":[{"operationType":"forceUpdate","record":{"recordType":"Note","fields":{}}}]}"#
            #expect(try await server.sendAsUser("records/modify", body: update).status == 400)
        }
    }

    @Test("NEAR, sorts by distance and the list comparators answer as the reference says")
    func placeAndListComparators() async throws {
        try await HTTPTestServer.with { server in
            func note(_ name: String, _ latitude: Double, _ longitude: Double, _ tags: String) -> String {
                let place = #"{"value":{"latitude":\#(latitude),"longitude":\#(longitude)},"type":"LOCATION"}"#
                return #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Place","fields":"#
                    + #"{"at":\#(place),"tags":{"value":\#(tags),"type":"STRING_LIST"}}}}"#
            }
            let save = [
                note("louvre", 48.8606, 2.3376, #"["museum","paris"]"#), note("tour", 48.8584, 2.2945, #"["tower"]"#),
                note("london", 51.5074, -0.1278, #"["museum"]"#),
            ]
            #expect(
                try await server.sendAsUser(
                    "records/modify", body: #"{"operations":[\#(save.joined(separator: ","))]}"#
                )
                .status == 200)
            let paris = #"{"latitude":48.8566,"longitude":2.3522}"#
            let cases: [(String, String, [String])] = [
                (
                    #"{"comparator":"NEAR","fieldName":"at","fieldValue":{"value":\#(paris)},"distance":5000}"#, "",
                    ["louvre", "tour"]
                ),
                (
                    #"{"comparator":"NEAR","fieldName":"at","fieldValue":{"value":\#(paris)},"distance":400000}"#,
                    #","sortBy":[{"fieldName":"at","relativeLocation":\#(paris),"ascending":false}]"#,
                    ["london", "tour", "louvre"]
                ),
                (
                    #"{"comparator":"LIST_MEMBER_BEGINS_WITH","fieldName":"tags","fieldValue":{"value":"mus"}}"#, "",
                    ["london", "louvre"]
                ),
                (
                    #"{"comparator":"NOT_LIST_MEMBER_BEGINS_WITH","fieldName":"tags","fieldValue":{"value":"mus"}}"#,
                    "",
                    ["tour"]
                ),
                (
                    #"{"comparator":"LIST_CONTAINS_ANY","fieldName":"tags","fieldValue":{"value":["tower","paris"]}}"#,
                    "",
                    ["louvre", "tour"]
                ),
                (
                    #"{"comparator":"LIST_CONTAINS_ALL","fieldName":"tags","fieldValue":{"value":["museum","paris"]}}"#,
                    "",
                    ["louvre"]
                ),
            ]
            for (filter, sort, expected) in cases {
                let answer = try await server.sendAsUser(
                    "records/query", body: #"{"query":{"recordType":"Place","filterBy":[\#(filter)]\#(sort)}}"#)
                #expect(answer.status == 200, "\(filter): \(answer.json)")
                let names = (answer.json["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String }
                #expect(names == expected, "\(filter): \(answer.json)")
            }
            let noDistance = #"{"comparator":"NEAR","fieldName":"at","fieldValue":{"value":\#(paris)}}"#
            let refused = try await server.sendAsUser(
                "records/query", body: #"{"query":{"recordType":"Place","filterBy":[\#(noDistance)]}}"#)
            #expect(refused.isError(.badRequest, status: 400), "\(refused.json)")
        }
    }

    @Test("upload and poll URLs are absolute on the listening address, whatever the Host header says")
    func absoluteURLs() async throws {
        try await HTTPTestServer.with { server in
            _ = try await server.sendAsUser(
                "zones/modify",
                body: #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Photos"}}}]}"#)
            let body =
                #"{"zoneID":{"zoneName":"Photos"},"tokens":[{"recordName":"p","recordType":"Photo","fieldName":"image"}]}"#
            let base = "http://127.0.0.1:\(server.port)"
            for (operation, text) in [
                ("assets/upload", body), ("tokens/create", #"{"apnsEnvironment":"development"}"#),
            ] {
                let connection = try await RawHTTPConnection.connect(port: server.port)
                let query = "ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.webAuthToken)"
                try await connection.send(
                    "POST \(server.path(operation))?\(query) HTTP/1.1\r\nHost: evil.example.com\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(text.utf8.count)\r\n\r\n\(text)")
                let answer = try #require(try await connection.response(within: .seconds(10)))
                await connection.close()
                #expect(answer.status == 200, "\(operation): \(answer.json)")
                let url =
                    (answer.json["tokens"] as? [[String: Any]])?.first?["url"] as? String
                    ?? answer.json["webcourierURL"] as? String
                #expect(url?.hasPrefix(base + "/") == true, "\(operation): \(answer.json)")
            }
        }
    }
}
