import Foundation
import Logging
import PostgresNIO

/// Runs statements so that each one ends when its connection closes.
///
/// postgres-nio 1.33 drops a statement written to a connection whose
/// channel has just closed without failing it (its fix, postgres-nio#487,
/// was reverted in #501), and the caller waits forever: a `ROLLBACK` after
/// PostgreSQL went away hung requests that way. Here every statement waiting
/// on a connection fails with ``PostgresConnectionLost`` as soon as the
/// connection's `closeFuture` completes, so closing a connection always
/// ends what waits on it.
///
/// ```swift
/// let result = try await PostgresStatements.shared.run("SELECT 1", on: connection, logger: logger)
/// ```
final class PostgresStatements: Sendable {
    /// One registry for every storage and broadcaster of the process.
    static let shared = PostgresStatements()

    private struct State {
        var nextTicket: UInt64 = 0
        /// The statements waiting on each open connection that has run one.
        var waiting: [ObjectIdentifier: [UInt64: CheckedContinuation<PostgresQueryResult, any Error>]] = [:]
    }

    private let state = LockedState(State())

    /// Runs `query` on `connection` and collects its rows; throws
    /// ``PostgresConnectionLost`` if the connection closes first.
    func run(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws
        -> PostgresQueryResult
    {
        let key = ObjectIdentifier(connection)
        return try await withCheckedThrowingContinuation { continuation in
            let (ticket, isFirst) = state.withLock { state in
                state.nextTicket += 1
                let isFirst = state.waiting[key] == nil
                state.waiting[key, default: [:]][state.nextTicket] = continuation
                return (state.nextTicket, isFirst)
            }
            if isFirst {
                // Once per connection, so that callbacks do not pile up on a
                // long-lived connection; runs at once if it is already closed.
                connection.closeFuture.whenComplete { _ in self.closed(key) }
            }
            connection.query(query, logger: logger).whenComplete { result in
                let waiter = self.state.withLock { $0.waiting[key]?.removeValue(forKey: ticket) }
                waiter?.resume(with: result)
            }
        }
    }

    /// Fails every statement still waiting on a connection that closed.
    private func closed(_ key: ObjectIdentifier) {
        let waiters = state.withLock { $0.waiting.removeValue(forKey: key) } ?? [:]
        for waiter in waiters.values { waiter.resume(throwing: PostgresConnectionLost()) }
    }
}

/// The connection closed while a statement waited for its answer: the
/// statement may or may not have run.
struct PostgresConnectionLost: Error, Sendable {}
