import Logging
import PostgresNIO

/// The connection of one transaction: runs its statements (through
/// ``PostgresStatements``, so that none outlives the connection) and keeps
/// the first failure.
///
/// PostgreSQL aborts a transaction at its first failed statement and then
/// answers `COMMIT` with a rollback, which postgres-nio reports as success;
/// a body that caught the failure and went on must therefore not commit:
/// ``PostgresStorage`` checks ``firstFailure`` before `COMMIT`.
final class PostgresTransactionConnection: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    private let failure = LockedState<(any Error)?>(nil)

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// The first statement's failure, if one failed.
    var firstFailure: (any Error)? { failure.withLock { $0 } }

    /// Runs one statement and collects its rows.
    @discardableResult
    func run(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        do {
            return try await PostgresStatements.shared.run(query, on: connection, logger: logger)
        } catch {
            failure.withLock { $0 = $0 ?? error }
            throw error
        }
    }
}
