import Cumulus
import Foundation
import Prometheus
import Testing

@testable import CumulusServer

/// The metrics only PostgreSQL has: the pool's use and the announcements
/// between servers; and `/readyz` while PostgreSQL is down.
@Suite("PostgreSQL metrics and readiness", .enabled(if: PostgresTestDatabase.isEnabled))
struct PostgresObservabilityTests {
    let alice = caller("alice")

    @Test("the pool's use and the announcements sent and received between two servers are counted")
    func poolAndBroadcasts() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-\(UUID().uuidString)")
        let stores = try await TestStore.twoPostgresServers.makeServices(directory: directory)
        let registries = [PrometheusCollectorRegistry(), PrometheusCollectorRegistry()]
        for (service, registry) in zip(stores.services, registries) {
            service.attachMetrics(ServerMetrics(factory: PrometheusMetricsFactory(registry: registry)))
        }
        let (reader, writer) = (stores.services[0], stores.services[1])
        do {
            try await writer.createZone(as: alice)
            _ = try await writer.modify([RecordOperation(.create, note("a"))], as: alice)
            var heard = Scrape(text: registries[0].emitToString())
            for _ in 0..<100 where (heard.value("cumulus_broadcast_announcements_received_total") ?? 0) < 2 {
                try await Task.sleep(for: .milliseconds(100))
                heard = Scrape(text: registries[0].emitToString())
            }
            // The zone's creation and the record's save, each announced once.
            #expect(heard.value("cumulus_broadcast_announcements_received_total") == 2)
            #expect(heard.value("cumulus_broadcast_announcements_sent_total") == 0)
            #expect(heard.value("cumulus_broadcast_connected") == 1)
            _ = try await reader.lookup(["a"], as: alice)

            let told = Scrape(text: registries[1].emitToString())
            #expect(told.value("cumulus_broadcast_announcements_sent_total") == 2)
            #expect(told.value("cumulus_broadcast_announcements_dropped_total") == 0)
            for scrape in [Scrape(text: registries[0].emitToString()), told] {
                #expect(scrape.value("cumulus_postgres_connections_max") == 4)
                #expect(scrape.value("cumulus_postgres_connections_in_use") == 0)
                #expect(scrape.value("cumulus_postgres_connection_requests_waiting") == 0)
                #expect((scrape.value("cumulus_postgres_connection_wait_seconds_count") ?? 0) >= 1)
                #expect(scrape.value("cumulus_storage_errors_total", ["kind": "unavailable"]) == 0)
            }
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }

    @Test("a statement PostgreSQL ends at its statement timeout counts as a storage timeout")
    func statementTimeout() async throws {
        try await PostgresTestDatabase.with { url in
            let limits = PostgresStorage.Limits(statementTimeout: .seconds(1), transactionTimeout: .seconds(20))
            let storage = try await PostgresStorage(
                url: url, maximumConnections: 2, limits: limits, logger: quietLogger)
            let service = CloudService(storage: storage)
            let registry = PrometheusCollectorRegistry()
            service.attachMetrics(ServerMetrics(factory: PrometheusMetricsFactory(registry: registry)))
            do {
                try await service.createZone(as: alice)
                let (locked, lockTaken) = AsyncStream<Void>.makeStream()
                // Another session holds every database row, as a stuck server would.
                let holder = Task {
                    try await PostgresTestDatabase.connect(to: url) { connection, logger in
                        try await connection.query("BEGIN", logger: logger)
                        try await connection.query("LOCK TABLE databases IN ACCESS EXCLUSIVE MODE", logger: logger)
                        lockTaken.yield()
                        try await connection.query("SELECT pg_sleep(3)", logger: logger)
                        try await connection.query("ROLLBACK", logger: logger)
                    }
                }
                var iterator = locked.makeAsyncIterator()
                await iterator.next()
                await #expect(throws: CloudError.self) { _ = try await service.lookup(["a"], as: alice) }
                try await holder.value
                let scrape = Scrape(text: registry.emitToString())
                #expect(scrape.value("cumulus_storage_errors_total", ["kind": "timeout"]) == 1)
                #expect(scrape.value("cumulus_storage_errors_total", ["kind": "unavailable"]) == 0)
                #expect(scrape.value("cumulus_storage_errors_total", ["kind": "other"]) == 0)
            } catch {
                try? await service.close()
                throw error
            }
            try await service.close()
        }
    }

    @Test(
        "while PostgreSQL is down /readyz answers 503 and storage errors are counted; once back, 200",
        .enabled(if: PostgresCluster.binaries != nil))
    func outage() async throws {
        let cluster = try await PostgresCluster.start()
        let limits = PostgresStorage.Limits(
            connectionWait: .seconds(1), statementTimeout: .seconds(2), transactionTimeout: .seconds(3))
        let service: CloudService
        do {
            // The schema first, under the default limits: its migrations may take longer
            // than the tight limits below on a loaded machine.
            try await CloudService.open(postgres: cluster.url, logger: quietLogger).close()
            service = try await CloudService.open(postgres: cluster.url, limits: limits, logger: quietLogger)
        } catch {
            await cluster.remove()
            throw error
        }
        let token = HTTPObservabilityTests.token
        let configuration = metricsConfiguration { .bearerToken(token, registry: $0) }
        do {
            try await serving(service, configuration: configuration) { server in
                #expect(try await server.send("GET", "/readyz").status == 200)
                try await cluster.stop()
                let down = try await server.readyz(until: 503)
                #expect(down.status == 503 && down.json["status"] as? String == "not ready", "\(down.json)")
                let scrape = try await server.scrape(token: token)
                #expect((scrape.value("cumulus_storage_errors_total", ["kind": "unavailable"]) ?? 0) >= 1)
                #expect(scrape.value("cumulus_storage_errors_total", ["kind": "other"]) == 0)
                // /healthz never asks PostgreSQL.
                #expect(try await server.send("GET", "/healthz").status == 200)

                try await cluster.startAgain()
                // The pool reconnects by itself; until it has, /readyz may still say 503.
                var back = try await server.readyz(until: 200)
                for _ in 0..<5 where back.status != 200 { back = try await server.readyz(until: 200) }
                #expect(back.status == 200, "\(back.json)")
            }
        } catch {
            try? await service.close()
            await cluster.remove()
            throw error
        }
        try await service.close()
        await cluster.remove()
    }
}
