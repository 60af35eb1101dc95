import Cumulus
import Foundation
import PostgresNIO
import Testing

@testable import CumulusServer

/// PostgreSQL's own bounds on each session of ``PostgresStorage``: a
/// statement stuck behind a lock ends at the statement timeout, and a
/// transaction its client left open ends as well.
@Suite("PostgreSQL statement timeouts", .enabled(if: PostgresTestDatabase.isEnabled))
struct PostgresTimeoutTests {
    let alice = caller("alice")

    @Test("a request stuck behind another session's lock answers TRY_AGAIN_LATER at the statement timeout")
    func statementBehindALock() async throws {
        try await PostgresTestDatabase.with { url in
            let limits = PostgresStorage.Limits(statementTimeout: .seconds(1), transactionTimeout: .seconds(20))
            let storage = try await PostgresStorage(
                url: url, maximumConnections: 2, limits: limits, logger: quietLogger)
            let service = CloudService(storage: storage)
            do {
                try await service.createZone(as: alice)
                let (locked, lockTaken) = AsyncStream<Void>.makeStream()
                // Another session holds every database row for 6 s, as a stuck server would.
                let holder = Task {
                    try await PostgresTestDatabase.connect(to: url) { connection, logger in
                        try await connection.query("BEGIN", logger: logger)
                        try await connection.query("LOCK TABLE databases IN ACCESS EXCLUSIVE MODE", logger: logger)
                        lockTaken.yield()
                        try await connection.query("SELECT pg_sleep(6)", logger: logger)
                        try await connection.query("ROLLBACK", logger: logger)
                    }
                }
                var iterator = locked.makeAsyncIterator()
                await iterator.next()
                let start = ContinuousClock.now
                do {
                    _ = try await service.lookup(["a"], as: alice)
                    Issue.record("a request waited out the lock")
                } catch let error as CloudError {
                    #expect(error.code == .tryAgainLater && error.retryAfter != nil, "\(error)")
                }
                let waited = ContinuousClock.now - start
                #expect(waited < .seconds(3), "answered after \(waited)")
                try await holder.value
            } catch {
                try? await service.close()
                throw error
            }
            try await service.close()
        }
    }

    @Test("each session starts with the statement and idle-transaction timeouts of the storage's limits")
    func sessionSettings() async throws {
        try await PostgresTestDatabase.with { url in
            let limits = PostgresStorage.Limits(statementTimeout: .milliseconds(2500))
            let storage = try await PostgresStorage(
                url: url, maximumConnections: 1, limits: limits, logger: quietLogger)
            var settings: [String] = []
            do {
                settings = try await storage.client.withConnection { connection in
                    var values: [String] = []
                    for setting in ["statement_timeout", "idle_in_transaction_session_timeout"] {
                        let rows = try await connection.query(
                            PostgresQuery(unsafeSQL: "SELECT current_setting('\(setting)')"), logger: quietLogger)
                        for try await value in rows.decode(String.self) { values.append(value) }
                    }
                    return values
                }
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
            #expect(settings == ["2500ms", "2500ms"])
        }
    }
}
