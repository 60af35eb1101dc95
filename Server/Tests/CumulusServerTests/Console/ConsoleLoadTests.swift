import Cumulus
import Foundation
import Testing

@testable import CumulusServer

@Suite("Console load")
struct ConsoleLoadTests {
    @Test("the tally keeps totals, latency bounds from its buckets, and only the last minute's slots")
    func tally() {
        var tally = LoadTally()
        for index in 0..<100 {
            // 90 fast answers, 9 at 40 ms, one failure at 3 s.
            let seconds = index < 90 ? 0.0005 : index < 99 ? 0.04 : 3
            tally.record(operation: "records/query", status: index == 99 ? 500 : 200, seconds: seconds, at: 10)
        }
        let query = tally.operations["records/query"]
        #expect(query?.requests == 100 && query?.serverErrors == 1 && query?.clientErrors == 0)
        #expect(query?.bound(ofQuantile: 0.5) == 0.001)
        #expect(query?.bound(ofQuantile: 0.95) == 0.05)
        #expect(query?.bound(ofQuantile: 1) == 5)

        let early = tally.reading(at: 69, uptime: 69)
        #expect(early.lastMinute["records/query"] == 100 && early.lastMinuteServerErrors == 1)
        // Second 70 takes the slot of second 10: its counts go.
        tally.record(operation: "records/modify", status: 409, seconds: 0.002, at: 70)
        tally.record(operation: MetricsMiddleware<CumulusRequestContext>.pollRoute, status: 200, seconds: 30, at: 70)
        let late = tally.reading(at: 70, uptime: 70)
        #expect(late.lastMinute["records/query"] == nil, "ten seconds in is more than a minute before 70")
        #expect(late.lastMinute["records/modify"] == 1 && late.lastMinuteServerErrors == 0)
        #expect(tally.overall.requests == 101, "the long poll is no latency")
        #expect(tally.overall.longest == 3)
        // A slot is reused a minute later: the old second's counts go.
        tally.record(operation: "records/query", status: 200, seconds: 0.001, at: 130)
        #expect(tally.reading(at: 130, uptime: 130).lastMinute["records/modify"] == nil)
        #expect(tally.reading(at: 130, uptime: 130).lastMinute["records/query"] == 1)
    }

    @Test("the load page shows requests by operation and what the store holds", arguments: TestStore.single)
    func loadPage(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            let session = try await server.signIn()
            for _ in 0..<3 { _ = try await server.get("/console/failures", session: session) }
            let missing = try await server.get("/console/no-such-page", session: session)
            #expect(missing.status == 404)
            let asset = StoredAsset(
                id: "asset-1", zone: 1, recordName: "r", fieldName: "f", user: "u", size: 1536, checksum: nil,
                created: 0, unheldSince: nil)
            try await server.service.storage.write { try await $0.saveAsset(asset) }

            let page = try await server.get("/console/load", session: session)
            #expect(page.status == 200)
            #expect(page.body.contains("<a href=\"/console/load\">Load</a>"))
            #expect(page.body.contains("<code>/console/failures</code></td><td>3</td><td>3</td><td>0</td>\n<td>0</td>"))
            #expect(page.body.contains("<code>/console/**</code></td><td>1</td><td>1</td><td>1</td>\n<td>0</td>"))
            #expect(page.body.contains("1 assets, 1.5 KiB (1536 bytes)"))
            #expect(page.body.contains("<dt>Database</dt><dd>") && !page.body.contains("not measured by this store"))
            #expect(page.body.range(of: "p95 ≤ [0-9.]+ ms", options: .regularExpression) != nil)
        }
    }
}
