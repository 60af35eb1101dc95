import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("Console browsing")
struct ConsoleBrowsingTests {
    /// Names whose byte order differs from a case-blind or locale order.
    static let names =
        (0..<112).map { String(format: "note-%03d", $0) } + [
            "Zeta", "alpha", "Ärger", "日本", "a b", "%2F", "note-050\u{301}", "😀",
        ]

    @Test(
        "a zone's records come 50 to a page in byte order of their names, each page a bounded read",
        arguments: TestStore.single)
    func pagesByName(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            let records = Self.names.map { Record(recordType: "Note", recordName: $0, fields: ["n": .int64(1)]) }
            for chunk in stride(from: 0, to: records.count, by: 100) {
                try await server.seed(
                    user: "alice", zone: "Many", records: Array(records[chunk..<min(chunk + 100, records.count)]),
                    creatingZone: chunk == 0)
            }
            let deleted = "note-007"
            let alice = try await server.server.user("alice").recordName
            let caller = Caller(container: server.container, environment: .development, scope: .private, user: alice)
            let many = ZoneID(zoneName: "Many")
            let deletion = RecordOperation(.forceDelete, Record(recordType: "Note", recordName: deleted, zoneID: many))
            guard
                case .records(let results) = try await server.service.perform(
                    .modifyRecords(operations: [deletion], zoneID: many, atomic: true), as: caller)
            else { throw CloudError(.internalError, reason: "records/modify answered something else") }
            #expect(results.first?.error == nil)
            let expected = Self.names.filter { $0 != deleted }.sorted {
                Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8))
            }

            var seen: [String] = []
            var after: String?
            repeat {
                let page = try await server.service.rules.browseRecords(
                    in: many, after: after, limit: 50, as: caller)
                #expect(page.records.count == min(50, expected.count - seen.count))
                seen += page.records.map(\.recordName)
                after = page.nextAfter
            } while after != nil
            #expect(seen == expected)

            // The console's pages follow the same order, with a link to the next.
            let session = try await server.signIn()
            let zone = try await server.zoneParameters(user: "alice", zone: "Many")
            var link: String? = ConsoleTestServer.link("/console/records", zone)
            var pages = 0
            var rows = 0
            while let next = link {
                let page = try await server.get(next.replacingOccurrences(of: "&amp;", with: "&"), session: session)
                #expect(page.status == 200)
                rows += page.body.components(separatedBy: "href=\"/console/record?").count - 1
                link = page.body.range(of: "<a href=\"(/console/records\\?[^\"]*)\">Next", options: .regularExpression)
                    .map { String(page.body[$0].dropFirst(9).dropLast(6)) }
                pages += 1
            }
            #expect(pages == 3 && rows == expected.count)
        }
    }
}
