import CloudCodable
import CloudProtocol
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
/// Every transaction is bounded (``Limits``): when PostgreSQL cannot be
/// reached, or goes away under a transaction, the transaction fails within
/// ``Limits/connectionWait`` with ``CloudError`` `TRY_AGAIN_LATER` and a
/// `retryAfter`; when PostgreSQL stops answering without closing the
/// connection, it fails at ``Limits/transactionTimeout`` and is closed
/// without a commit. The pool reconnects by itself once the server is back.
public final class PostgresStorage: ServerStorage {
    /// The bounds on every transaction.
    public let limits: Limits
    /// The assets' bytes, in chunks in the database.
    public var assetBytes: any AssetByteStore { PostgresAssetStore(storage: self) }
    let client: PostgresClient
    private let running: Task<Void, Never>
    let logger: Logger
    private let closed = LockedState(false)
    /// Where failures and the pool's use are reported, for a server's metrics.
    let observer = StorageObserver()

    /// How many times a transaction runs before a serialization failure or
    /// a deadlock is given up on.
    static let attempts = 5

    /// Connects to the database at `url` and creates or migrates its schema.
    ///
    /// - Parameters:
    ///   - maximumConnections: The most connections the pool opens.
    ///   - limits: The bounds on every transaction.
    ///   - logger: Where failures of PostgreSQL are logged (never the password).
    /// - Throws: ``CloudError``: `TRY_AGAIN_LATER` when the server cannot be
    ///   reached, `INTERNAL_ERROR` when it refuses the login or the database
    ///   was written by a newer server.
    public init(
        url: PostgresURL, maximumConnections: Int = 20, limits: Limits = Limits(), logger: Logger
    ) async throws {
        guard maximumConnections > 0 else {
            throw CloudError(.badRequest, reason: "a PostgreSQL pool needs at least one connection")
        }
        guard limits.connectionWait > .zero, limits.statementTimeout > .zero, limits.transactionTimeout > .zero,
            limits.retryAfter > .zero
        else {
            throw CloudError(.badRequest, reason: "every limit of a PostgreSQL storage must be positive")
        }
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = limits.connectionWait
        configuration.options.additionalStartupParameters = limits.startupParameters
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.limits = limits
        self.logger = logger
        observer.setMaximumConnections(maximumConnections)
        running = Task { await client.run() }
        do {
            // No deadline: a migration may rewrite big tables.
            try await attempt(leaseWait: limits.connectionWait * 2, deadline: nil) { transaction, _ in
                try await PostgresSchema.migrate(transaction)
            }
            let identity = try await databaseIdentity()
            let renewed = try await write { transaction in
                try await StoreRestores.takeNotice(of: identity, in: transaction)
            }
            if renewed {
                logger.notice("the database is not the one last written (restored or copied): sync tokens renewed")
            }
        } catch {
            running.cancel()
            await running.value
            let mapped = Self.cloudError(for: error, limits: limits, logger: logger)
            if mapped.code == .tryAgainLater {
                throw CloudError(
                    .tryAgainLater, reason: "PostgreSQL at \(url) cannot be reached", retryAfter: limits.retryAfter)
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
        let start = ContinuousClock.now
        let deadline = start + limits.transactionTimeout
        // Waits for a connection, and runs again after a broken one, only
        // within the connection wait: past it, PostgreSQL is taken as away.
        let retryBefore = start + min(limits.connectionWait, limits.transactionTimeout)
        var attempt = 1
        while true {
            do {
                let wait = max(retryBefore - ContinuousClock.now, .milliseconds(500))
                return try await self.attempt(leaseWait: wait, deadline: deadline) { transaction, attempt in
                    try await Self.run(readOnly: readOnly, on: transaction, attempt: attempt, body)
                }
            } catch let failure as TransactionFailure {
                if attempt < Self.attempts, failure.mayRetry(before: retryBefore) {
                    attempt += 1
                    // A short random pause, so that two retried writers do not collide again.
                    try? await Task.sleep(for: .milliseconds(Int.random(in: 1...5) * attempt))
                    continue
                }
                throw reportedError(for: failure.error, committing: failure.committing)
            } catch let error as PSQLError {
                throw reportedError(for: error)
            } catch  where error is AttemptExpired || Self.isPoolError(error) {
                throw reportedError(for: error)
            } catch let error as CloudError where error.code == .internalError {
                // The body's own failure to read a row.
                observer.failed(.other)
                throw error
            }
            // Any other error is the body's own, and goes to the service as it is.
        }
    }

    /// One run of a transaction on a leased connection. It commits only
    /// if every statement succeeded and the caller is still waiting.
    private static func run<T: Sendable>(
        readOnly: Bool, on transaction: PostgresTransactionConnection, attempt: TransactionAttempt<T>,
        _ body: @escaping @Sendable (any StorageTransaction) async throws -> T
    ) async throws -> T {
        let begin: PostgresQuery =
            readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED"
        do {
            try await transaction.run(begin)
        } catch {
            throw TransactionFailure(error: error, committing: false)
        }
        let result: T
        do {
            result = try await body(PostgresTransaction(connection: transaction, locking: !readOnly))
            // PostgreSQL would answer COMMIT with a rollback after a failed statement.
            if let failure = transaction.firstFailure { throw failure }
        } catch {
            await rollBack(transaction)
            if isPostgresFailure(error) { throw TransactionFailure(error: error, committing: false) }
            throw error
        }
        guard attempt.willCommit() else {
            // The caller has been answered: this transaction must never commit.
            await rollBack(transaction)
            throw AttemptExpired(expiry: .abandoned)
        }
        let answer: PostgresQueryResult
        do {
            answer = try await transaction.run("COMMIT")
        } catch {
            throw TransactionFailure(error: error, committing: true)
        }
        guard answer.metadata.command == "COMMIT" else {
            throw TransactionFailure(error: RolledBackAtCommit(), committing: false)
        }
        return result
    }

    /// Rolls back, or closes a connection whose transaction may still be
    /// open, so that it never goes back to the pool.
    private static func rollBack(_ transaction: PostgresTransactionConnection) async {
        guard !transaction.connection.isClosed else { return }
        do {
            try await transaction.run("ROLLBACK")
        } catch {
            try? await transaction.connection.close()
        }
    }

    /// A PostgreSQL failure of one run of a transaction.
    struct TransactionFailure: Error {
        var error: any Error
        /// Whether it happened during `COMMIT` (so the outcome may be unknown).
        var committing: Bool

        /// Whether running the transaction again is safe and may succeed.
        func mayRetry(before deadline: ContinuousClock.Instant) -> Bool {
            if let error = error as? PSQLError, PostgresStorage.isSerializationFailure(error) { return true }
            // A connection that broke before the commit left nothing behind:
            // a new one may work (a pooled connection the server closed).
            return !committing && PostgresStorage.isConnectionFailure(error) && ContinuousClock.now < deadline
        }
    }

    /// PostgreSQL answered `COMMIT` with a rollback: a statement failed
    /// without the storage seeing it.
    struct RolledBackAtCommit: Error {}

    static func isPostgresFailure(_ error: any Error) -> Bool {
        error is PSQLError || error is PostgresConnectionLost || error is RolledBackAtCommit
    }
}

extension CloudService {
    /// Opens a service on the PostgreSQL database at `url`, creating or
    /// migrating its schema; several services on one database behave as one:
    /// each announces its writes with `NOTIFY` (``PostgresChangeBroadcaster``)
    /// so that the others' long polls hear them.
    ///
    /// - Parameters:
    ///   - limits: The bounds on every storage transaction.
    ///   - publicURL: The base of share and asset URLs, if any.
    ///   - assetSettings: The size limit and lifetimes of assets.
    ///   - logger: Where the storage and the broadcaster log.
    public static func open(
        postgres url: PostgresURL, recordSizeLimit: Int = RecordEncoder.defaultSizeLimit,
        notificationIdleLimit: Duration = .seconds(600), limits: PostgresStorage.Limits = PostgresStorage.Limits(),
        publicURL: String? = nil, assetSettings: AssetSettings = AssetSettings(), logger: Logger
    ) async throws -> CloudService {
        let storage = try await PostgresStorage(url: url, limits: limits, logger: logger)
        let broadcaster: PostgresChangeBroadcaster
        do {
            broadcaster = try await PostgresChangeBroadcaster(url: url, logger: logger)
        } catch {
            try? await storage.close()
            throw error
        }
        return CloudService(
            storage: storage, recordSizeLimit: recordSizeLimit, notificationIdleLimit: notificationIdleLimit,
            broadcaster: broadcaster, publicURL: publicURL, assetSettings: assetSettings)
    }
}
