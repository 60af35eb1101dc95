import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("Console queries")
struct ConsoleQueryTests {
    /// The record names a console page lists, in its order.
    static func recordNames(_ body: String) -> [String] {
        let pattern = /href="\/console\/record\?[^"]*">([^<]*)<\/a>/
        return body.matches(of: pattern).map { unescaped(String($0.output.1)) }
    }

    /// The link of the page's "Next" link, as a browser would follow it.
    static func nextLink(_ body: String) -> String? {
        body.firstMatch(of: /<a href="(\/console\/query\?[^"]*)">Next/).map {
            unescaped(String($0.output.1))
        }
    }

    /// The request body the page shows, as the text it stands for.
    static func shownBody(_ body: String) -> String? {
        body.firstMatch(of: /<pre>([^<]*)<\/pre>/).map { unescaped(String($0.output.1)) }
    }

    static func unescaped(_ html: String) -> String {
        html.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// JSON text with its keys sorted and no layout, to compare two bodies' content.
    static func canonical(_ json: [UInt8]) throws -> Data {
        let object = try JSONSerialization.jsonObject(with: Data(json))
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// Every page of `query` as `caller`'s own `records/query` answers it, 50 a page.
    static func pages(_ query: RecordQuery, zoneID: ZoneID, as caller: Caller, service: CloudService) async throws
        -> [[String]]
    {
        var pages: [[String]] = []
        var marker: String?
        repeat {
            let request = CloudRequest.queryRecords(
                query, zoneID: zoneID, resultsLimit: 50, continuationMarker: marker, desiredKeys: nil)
            guard case .query(let result) = try await service.perform(request, as: caller) else {
                throw CloudError(.internalError, reason: "records/query answered something else")
            }
            pages.append(result.records.map(\.recordName))
            marker = result.continuationMarker
        } while marker != nil
        return pages
    }

    @Test(
        "a query with a name prefix, comparisons and a sort pages through what the user's own records/query returns",
        arguments: TestStore.single)
    func sameAsRecordsQuery(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            let records = (0..<130).map { index in
                Record(
                    recordType: "Note", recordName: String(format: index < 120 ? "n%03d" : "m%03d", index),
                    fields: ["count": .int64(Int64(index % 10)), "title": .string("t\(index % 7)")])
            }
            try await server.seed(user: "alice", zone: "Notes", records: Array(records[..<100]))
            try await server.seed(user: "alice", zone: "Notes", records: Array(records[100...]), creatingZone: false)
            let alice = try await server.server.user("alice").recordName
            let caller = Caller(container: server.container, environment: .development, scope: .private, user: alice)
            let since = Date(timeIntervalSince1970: 946_684_800)
            let query = RecordQuery(
                recordType: "Note",
                filters: [
                    QueryFilter("___recordID", .beginsWith, .string("n")),
                    QueryFilter("count", .greaterThanOrEquals, .int64(3)),
                    QueryFilter("title", .notEquals, .string("t2")),
                    QueryFilter("___createTime", .greaterThan, .timestamp(since)),
                ],
                sort: [QuerySort("count", ascending: false)])
            let zoneID = ZoneID(zoneName: "Notes")
            let expected = try await Self.pages(query, zoneID: zoneID, as: caller, service: server.service)
            #expect(expected.count == 2 && expected.allSatisfy { !$0.isEmpty })
            #expect(expected.joined().allSatisfy { $0.hasPrefix("n") })

            let session = try await server.signIn()
            let zone = try await server.zoneParameters(user: "alice", zone: "Notes")
            // The records page leads to the query form of its zone.
            let recordsPage = try await server.get(ConsoleTestServer.link("/console/records", zone), session: session)
            #expect(recordsPage.body.contains("href=\"/console/query?"))
            let form =
                zone + [
                    ("recordType", "Note"), ("prefix", "n"),
                    ("field1", "count"), ("comparator1", "GREATER_THAN_OR_EQUALS"), ("value1", "3"),
                    ("field2", "title"), ("comparator2", "NOT_EQUALS"), ("value2", "t2"), ("valueType2", "STRING"),
                    ("field3", "___createTime"), ("comparator3", "GREATER_THAN"), ("value3", "2000-01-01T00:00:00Z"),
                    ("sort", "count"), ("order", "descending"),
                ]
            var link: String? = ConsoleTestServer.link("/console/query", form)
            var seen: [[String]] = []
            var bodies: [String] = []
            while let next = link, seen.count < 5 {
                let page = try await server.get(next, session: session)
                #expect(page.status == 200)
                seen.append(Self.recordNames(page.body))
                bodies.append(try #require(Self.shownBody(page.body)))
                link = Self.nextLink(page.body)
            }
            #expect(seen == expected)

            // The body is what an app sends: the protocol's own encoding of the same request, laid out.
            for (index, shown) in bodies.enumerated() {
                let marker = index == 0 ? nil : "q\(index * 50)"
                let request = CloudRequest.queryRecords(
                    query, zoneID: zoneID, resultsLimit: 50, continuationMarker: marker, desiredKeys: nil)
                let sent = try #require(try request.encodedBody())
                #expect(try Self.canonical(Array(shown.utf8)) == Self.canonical(sent))
            }
            #expect(bodies[0].contains("\"comparator\": \"GREATER_THAN_OR_EQUALS\""))
            #expect(bodies[0].contains("\"fieldName\": \"___recordID\"") && bodies[0].contains("\n    "))
            #expect(bodies[1].contains("\"continuationMarker\": \"q50\""))
        }
    }

    @Test("bad input is an error on the page, never a 500")
    func badInput() async throws {
        try await ConsoleTestServer.with { server in
            try await server.seed(
                user: "alice", zone: "Notes",
                records: [Record(recordType: "Note", recordName: "n1", fields: ["count": .int64(1)])])
            let session = try await server.signIn()
            let zone = try await server.zoneParameters(user: "alice", zone: "Notes") + [("recordType", "Note")]
            let cases: [([(String, String)], String)] = [
                ([("field1", "count"), ("comparator1", "LIKE"), ("value1", "1")], "LIKE is not a comparator"),
                ([("field1", "count"), ("value1", "many")], "&#39;many&#39; is not a INT64 value for field count"),
                ([("field1", "x"), ("value1", "1.5"), ("valueType1", "DOUBLE"), ("comparator1", "IN")], ""),
                ([("field1", "x"), ("value1", "soon"), ("valueType1", "TIMESTAMP")], "is not a TIMESTAMP value"),
                (
                    [("field1", "x"), ("value1", "1"), ("valueType1", "LOCATION")],
                    "not a type the console types values as"
                ),
                (
                    [("field1", "count"), ("comparator1", "BEGINS_WITH"), ("value1", "1")],
                    "BAD_REQUEST: BEGINS_WITH cannot compare"
                ),
                ([("marker", "zzz")], "BAD_REQUEST: the continuation marker"),
            ]
            for (parameters, words) in cases {
                let answer = try await server.get(
                    ConsoleTestServer.link("/console/query", zone + parameters), session: session)
                if words.isEmpty {
                    #expect(answer.status == 200, "\(parameters)")
                } else {
                    #expect(answer.status == 400 && answer.body.contains(words), "\(parameters): \(answer.body)")
                }
                // The form stays filled in, to be corrected.
                #expect(answer.body.contains("name=\"recordType\" value=\"Note\""))
            }
            // A form without a record type only shows the form.
            let empty = try await server.get(
                ConsoleTestServer.link("/console/query", try await server.zoneParameters(user: "alice", zone: "Notes")),
                session: session)
            #expect(empty.status == 200 && !empty.body.contains("<pre>"))
        }
    }

    @Test("a participant's query in the shared database sees only what is shared with them")
    func participantSeesTheShare() async throws {
        try await ConsoleTestServer.with { server in
            let (alice, bob) = try await server.shareAlbum(rootType: "Photo")

            let session = try await server.signIn()
            let bobShared = [
                ("container", server.container), ("environment", "development"), ("scope", "shared"), ("user", bob),
                ("zone", "Albums"), ("owner", alice), ("recordType", "Photo"), ("field1", "t"),
                ("comparator1", "NOT_EQUALS"), ("value1", "zzz"),
            ]
            let page = try await server.get(ConsoleTestServer.link("/console/query", bobShared), session: session)
            #expect(page.status == 200)
            #expect(Self.recordNames(page.body) == ["album", "photo"])
            let bobCaller = Caller(container: server.container, environment: .development, scope: .shared, user: bob)
            let direct = try await Self.pages(
                RecordQuery(recordType: "Photo", filters: [QueryFilter("t", .notEquals, .string("zzz"))]),
                zoneID: ZoneID(zoneName: "Albums", ownerRecordName: alice), as: bobCaller, service: server.service)
            #expect(direct == [["album", "photo"]])
            // The owner's own query sees the whole zone.
            let aliceOwn = bobShared.map {
                $0.0 == "user" ? ("user", alice) : $0.0 == "scope" ? ("scope", "private") : $0
            }
            let own = try await server.get(ConsoleTestServer.link("/console/query", aliceOwn), session: session)
            #expect(Self.recordNames(own.body) == ["album", "photo", "unshared"])
        }
    }

    @Test("hostile record types, field names and values are escaped on the query page")
    func escaping() async throws {
        try await ConsoleTestServer.with { server in
            let recordType = "<script>alert(1)</script>"
            let field = "\"onmouseover=alert(1) x=\""
            let name = "<script>n</script>\"onmouseover=x\u{301}"
            try await server.seed(
                user: "alice", zone: "Notes",
                records: [
                    Record(recordType: recordType, recordName: name, fields: [field: .string("javascript:alert(3)")])
                ])
            let session = try await server.signIn()
            let form =
                try await server.zoneParameters(user: "alice", zone: "Notes") + [
                    ("recordType", recordType), ("prefix", "<script>"), ("field1", field),
                    ("value1", "javascript:alert(3)"),
                    ("sort", field),
                ]
            let link = ConsoleTestServer.link("/console/query", form)
            let page = try await server.get(link, session: session)
            #expect(page.status == 200)
            ConsoleEscapingTests.expectEscaped(page.body, page: link)
            #expect(Self.recordNames(page.body) == [name])
            #expect(
                Self.shownBody(page.body)?.contains("\"recordType\": \"<script>alert(1)<\\/script>\"") == true
                    || Self.shownBody(page.body)?.contains("\"recordType\": \"<script>alert(1)</script>\"") == true)
        }
    }
}
