import Cumulus
import Foundation
import Logging
import PostgresNIO

/// ``ServerStorage`` in a PostgreSQL database, for several server processes
/// that behave as one.
///
/// Writes run in `READ COMMITTED` and lock the database's row first
/// (`SELECT … FOR NO KEY UPDATE`), then its zones' rows: every write to a
/// database waits for the one before it to commit, so the serials it reads
/// are the latest and each feed is gapless in commit order. Reads run in
/// `REPEATABLE READ READ ONLY`, so a zone's row and its records come from
/// one snapshot. A transaction that fails with a serialization failure or a
/// deadlock is run again from the start.
///
/// When PostgreSQL cannot be reached, a transaction fails within a few
/// seconds with ``CloudError`` `TRY_AGAIN_LATER` and a `retryAfter`; the pool
/// reconnects by itself once the server is back.
public final class PostgresStorage: ServerStorage {
    private let client: PostgresClient
    private let running: Task<Void, Never>
    private let logger: Logger
    private let closed = Locked(false)

    /// How long a transaction waits for a connection before it answers
    /// `TRY_AGAIN_LATER`, and the time within which a transaction whose
    /// connection broke before its commit is run again.
    static let connectionWait: Duration = .seconds(5)
    /// What `TRY_AGAIN_LATER` tells the client to wait.
    static let retryAfter: Duration = .seconds(2)
    /// How many times a transaction runs before a serialization failure or
    /// a deadlock is given up on.
    static let attempts = 5

    /// Connects to the database at `url` and creates or migrates its schema.
    ///
    /// - Parameters:
    ///   - maximumConnections: The most connections the pool opens.
    ///   - logger: Where failures of PostgreSQL are logged (never the password).
    /// - Throws: ``CloudError``: `TRY_AGAIN_LATER` when the server cannot be
    ///   reached, `INTERNAL_ERROR` when it refuses the login or the database
    ///   was written by a newer server.
    public init(url: PostgresURL, maximumConnections: Int = 20, logger: Logger = Logger(label: "cumulus.postgres"))
        async throws
    {
        guard maximumConnections > 0 else {
            throw CloudError(.badRequest, reason: "a PostgreSQL pool needs at least one connection")
        }
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = Self.connectionWait
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        running = Task { await client.run() }
        do {
            try await withConnection(waiting: Self.connectionWait * 2) { connection in
                try await PostgresSchema.migrate(connection, logger: logger)
            }
        } catch {
            running.cancel()
            await running.value
            let mapped = Self.cloudError(for: error, committing: false, logger: logger)
            if mapped.code == .tryAgainLater {
                throw CloudError(
                    .tryAgainLater, reason: "PostgreSQL at \(url) cannot be reached", retryAfter: Self.retryAfter)
            }
            throw mapped
        }
    }

    /// Runs `body` in a `READ COMMITTED` transaction whose reads of the
    /// database and zone rows lock them.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T)
        async throws -> T
    {
        try await transaction(readOnly: false, body)
    }

    /// Runs `body` in a `REPEATABLE READ READ ONLY` transaction: one snapshot.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T)
        async throws -> T
    {
        try await transaction(readOnly: true, body)
    }

    /// Closes the pool's connections; no transaction may start afterwards.
    public func close() async throws {
        let wasClosed = closed.withLock { closed in
            let was = closed
            closed = true
            return was
        }
        guard !wasClosed else { return }
        running.cancel()
        await running.value
    }

    // MARK: Transactions

    private func transaction<T: Sendable>(
        readOnly: Bool, _ body: @escaping @Sendable (any StorageTransaction) async throws -> T
    ) async throws -> T {
        guard !closed.withLock({ $0 }) else {
            throw CloudError(.internalError, reason: "the storage is closed")
        }
        let deadline = ContinuousClock.now + Self.connectionWait
        var attempt = 1
        while true {
            do {
                let wait = max(deadline - ContinuousClock.now, .milliseconds(500))
                return try await withConnection(waiting: wait) { connection in
                    try await Self.run(readOnly: readOnly, on: connection, logger: self.logger, body)
                }
            } catch let failure as TransactionFailure {
                if attempt < Self.attempts, failure.mayRetry(before: deadline) {
                    attempt += 1
                    // A short random pause, so that two retried writers do not collide again.
                    try? await Task.sleep(for: .milliseconds(Int.random(in: 1...5) * attempt))
                    continue
                }
                throw Self.cloudError(for: failure.error, committing: failure.committing, logger: logger)
            } catch let error as PSQLError {
                throw Self.cloudError(for: error, committing: false, logger: logger)
            } catch  where error is LeaseTimeout || Self.isPoolError(error) {
                throw Self.cloudError(for: error, committing: false, logger: logger)
            }
            // Any other error is the body's own, and goes to the service as it is.
        }
    }

    /// One run of a transaction on a leased connection.
    private static func run<T: Sendable>(
        readOnly: Bool, on connection: PostgresConnection, logger: Logger,
        _ body: @escaping @Sendable (any StorageTransaction) async throws -> T
    ) async throws -> T {
        let begin: PostgresQuery =
            readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED"
        do {
            try await connection.query(begin, logger: logger)
        } catch {
            throw TransactionFailure(error: error, committing: false)
        }
        let result: T
        do {
            result = try await body(PostgresTransaction(connection: connection, logger: logger, locking: !readOnly))
        } catch {
            do {
                try await connection.query("ROLLBACK", logger: logger)
            } catch {
                // A connection whose transaction may still be open must not go back to the pool.
                try? await connection.close()
            }
            if error is PSQLError { throw TransactionFailure(error: error, committing: false) }
            throw error
        }
        do {
            try await connection.query("COMMIT", logger: logger)
        } catch {
            throw TransactionFailure(error: error, committing: true)
        }
        return result
    }

    /// Leases a connection for `body`, waiting at most `wait` for it: the
    /// pool would otherwise keep a request waiting as long as PostgreSQL is away.
    private func withConnection<T: Sendable>(
        waiting wait: Duration, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let state = Locked(LeaseState.waiting)
        let client = client
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    let leased = state.withLock { state in
                        guard state == .waiting else { return false }
                        state = .leased
                        return true
                    }
                    guard leased else { throw LeaseTimeout() }
                    return try await body(connection)
                }
            }
            group.addTask {
                try? await Task.sleep(for: wait)
                let expired = state.withLock { state in
                    guard state == .waiting else { return false }
                    state = .expired
                    return true
                }
                // Throwing cancels the lease request still waiting in the pool.
                if expired { throw LeaseTimeout() }
                return nil
            }
            while let result = try await group.next() {
                if let result {
                    group.cancelAll()
                    return result
                }
            }
            preconditionFailure("Internal inconsistency: the lease task ended without a result")
        }
    }

    private enum LeaseState: Sendable {
        case waiting, leased, expired
    }

    /// No connection came within the wait.
    private struct LeaseTimeout: Error {}

    /// A PostgreSQL failure of one run of a transaction.
    private struct TransactionFailure: Error {
        var error: any Error
        /// Whether it happened during `COMMIT` (so the outcome may be unknown).
        var committing: Bool

        /// Whether running the transaction again is safe and may succeed.
        func mayRetry(before deadline: ContinuousClock.Instant) -> Bool {
            guard let error = error as? PSQLError else { return false }
            if PostgresStorage.isSerializationFailure(error) { return true }
            // A connection that broke before the commit left nothing behind:
            // a new one may work (a pooled connection the server closed).
            return !committing && PostgresStorage.isConnectionFailure(error) && ContinuousClock.now < deadline
        }
    }

    // MARK: Errors

    /// The pool's own failures (its circuit breaker open after connections
    /// kept failing), whose type the pool's module does not export to us.
    static func isPoolError(_ error: any Error) -> Bool {
        String(reflecting: type(of: error)).hasSuffix("ConnectionPoolError")
    }

    static func isSerializationFailure(_ error: PSQLError) -> Bool {
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40001" || state == "40P01"
    }

    static func isConnectionFailure(_ error: PSQLError) -> Bool {
        [.connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed]
            .contains(error.code)
    }

    /// SQLSTATEs that say the server is away or busy, not that the
    /// statement is wrong: connection exceptions, shutdowns, exhausted
    /// resources, a lock or statement timeout, a read-only standby.
    private static func isTransient(sqlState state: String) -> Bool {
        state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state.hasPrefix("40")
            || ["55P03", "57014", "25006"].contains(state)
    }

    /// The ``CloudError`` a failure of PostgreSQL answers: `TRY_AGAIN_LATER`
    /// when the server is away or busy, `INTERNAL_ERROR` (logged) for a
    /// failure that means a bug.
    static func cloudError(for error: any Error, committing: Bool, logger: Logger) -> CloudError {
        if let error = error as? CloudError { return error }
        let unavailable = CloudError(
            .tryAgainLater,
            reason: committing
                ? "the connection to the database broke during the commit; the request's outcome is unknown"
                : "the database is unavailable", retryAfter: retryAfter)
        if error is LeaseTimeout || isPoolError(error) {
            return unavailable
        }
        guard let error = error as? PSQLError else {
            logger.error("storage failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            return CloudError(.internalError, reason: "the storage failed")
        }
        if error.code == .server {
            let state = error.serverInfo?[.sqlState] ?? ""
            if isTransient(sqlState: state) { return unavailable }
            let message = error.serverInfo?[.message] ?? ""
            logger.error("PostgreSQL failed", metadata: ["sqlstate": "\(state)", "message": "\(message)"])
            if state.hasPrefix("28") {
                return CloudError(.internalError, reason: "PostgreSQL refused the login (\(state)): \(message)")
            }
            if state == "3D000" { return CloudError(.internalError, reason: "PostgreSQL: \(message)") }
            return CloudError(.internalError, reason: "the storage failed (SQLSTATE \(state))")
        }
        if isConnectionFailure(error) || error.code == .queryCancelled { return unavailable }
        logger.error("PostgreSQL failed", metadata: ["code": "\(error.code)"])
        return CloudError(.internalError, reason: "the storage failed (\(error.code))")
    }
}

extension CloudService {
    /// Opens a service on the PostgreSQL database at `url`, creating or
    /// migrating its schema; several services on one database behave as one:
    /// each announces its writes with `NOTIFY` (``PostgresChangeBroadcaster``)
    /// so that the others' long polls hear them.
    public static func open(
        postgres url: PostgresURL, recordSizeLimit: Int = RecordEncoder.defaultSizeLimit,
        notificationIdleLimit: Duration = .seconds(600), logger: Logger = Logger(label: "cumulus.postgres")
    ) async throws -> CloudService {
        let storage = try await PostgresStorage(url: url, logger: logger)
        let broadcaster: PostgresChangeBroadcaster
        do {
            broadcaster = try await PostgresChangeBroadcaster(url: url, logger: logger)
        } catch {
            try? await storage.close()
            throw error
        }
        return CloudService(
            storage: storage, recordSizeLimit: recordSizeLimit, notificationIdleLimit: notificationIdleLimit,
            broadcaster: broadcaster)
    }
}
