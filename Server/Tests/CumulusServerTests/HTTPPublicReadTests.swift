import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP public reads with the API token alone")
struct HTTPPublicReadTests {
    static let note =
        #"{"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"hello","fields":{"title":{"value":"hi","type":"STRING"}}}}]}"#

    @Test(
        "the API token alone reads the public database (records/query and lookup, zones/list and lookup, its feed)")
    func reads() async throws {
        try await HTTPTestServer.with { server in
            let written = try await server.sendAsUser("records/modify", body: Self.note, scope: "public")
            #expect(written.status == 200)
            let anonymous = ["ckAPIToken": server.apiToken]
            let reads: [(operation: String, method: String, body: String)] = [
                ("records/query", "POST", #"{"query":{"recordType":"Note"}}"#),
                ("records/lookup", "POST", #"{"records":[{"recordName":"hello"}]}"#),
                ("zones/list", "GET", ""),
                ("zones/lookup", "POST", #"{"zones":[{"zoneName":"_defaultZone"}]}"#),
                ("changes/zone", "POST", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"}}]}"#),
                ("records/changes", "POST", #"{"zoneID":{"zoneName":"_defaultZone"}}"#),
            ]
            for (operation, method, body) in reads {
                let answer = try await server.send(
                    method, server.path(operation, scope: "public"), query: anonymous, body: Array(body.utf8))
                #expect(answer.status == 200, "\(operation): \(answer.status) \(answer.json)")
            }
            let query = try await server.send(
                "POST", server.path("records/query", scope: "public"), query: anonymous,
                body: Array(#"{"query":{"recordType":"Note"}}"#.utf8))
            let records = query.json["records"] as? [[String: Any]] ?? []
            #expect(records.compactMap { $0["recordName"] as? String } == ["hello"])
            let lookup = try await server.send(
                "POST", server.path("records/lookup", scope: "public"), query: anonymous,
                body: Array(#"{"records":[{"recordName":"hello"}]}"#.utf8))
            let found = lookup.json["records"] as? [[String: Any]] ?? []
            #expect(found.first?["recordName"] as? String == "hello")
            #expect(found.first?["serverErrorCode"] == nil)

            // The public feed (a Cumulus addition) carries the record as records/lookup does.
            let feed = try await server.send(
                "POST", server.path("records/changes", scope: "public"), query: anonymous,
                body: Array(#"{"zoneID":{"zoneName":"_defaultZone"}}"#.utf8))
            let changed = feed.json["records"] as? [[String: Any]] ?? []
            #expect(changed.compactMap { $0["recordName"] as? String } == ["hello"])
            #expect(feed.json["syncToken"] is String && feed.json["moreComing"] as? Bool == false)
            #expect(
                (changed.first?["created"] as? [String: Any])?["userRecordName"] as? String
                    == (found.first?["created"] as? [String: Any])?["userRecordName"] as? String)

            // Anything else still needs a user.
            let needUser: [(operation: String, method: String, body: String, scope: String)] = [
                ("records/modify", "POST", Self.note, "public"),
                ("zones/modify", "POST", #"{"operations":[]}"#, "public"),
                ("subscriptions/list", "GET", "", "public"),
                ("changes/database", "POST", "{}", "public"),
                ("tokens/create", "POST", "{}", "public"),
                ("users/current", "GET", "", "public"),
                ("records/query", "POST", #"{"query":{"recordType":"Note"}}"#, "private"),
                ("zones/list", "GET", "", "private"),
                ("zones/list", "GET", "", "shared"),
            ]
            for (operation, method, body, scope) in needUser {
                let answer = try await server.send(
                    method, server.path(operation, scope: scope), query: anonymous, body: Array(body.utf8))
                #expect(
                    answer.isError(.authenticationRequired, status: 421),
                    "\(scope) \(operation): \(answer.status) \(answer.json)")
            }
            let wrong = try await server.send(
                "GET", server.path("zones/list", scope: "public"),
                query: ["ckAPIToken": String(repeating: "0", count: 64)])
            #expect(wrong.isError(.authenticationFailed, status: 401))
            let none = try await server.send("GET", server.path("zones/list", scope: "public"))
            #expect(none.isError(.authenticationFailed, status: 401))
            #expect(try await server.sendAsUser("records/modify", body: Self.note, scope: "public").status == 200)
        }
    }
}
