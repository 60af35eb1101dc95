import Logging
import PostgresNIO

extension PostgresStorage {
    /// Leases a connection and runs `work` on it in a task of its own,
    /// answering at the latest when the lease wait or the deadline ends,
    /// whatever PostgreSQL and postgres-nio do meanwhile.
    ///
    /// At the deadline the connection is closed: the server rolls back
    /// what was not committed, the statements waiting on it end, and the
    /// worker gives the closed connection back to the pool. `work` asks
    /// ``TransactionAttempt/willCommit()`` before its commit.
    func attempt<T: Sendable>(
        leaseWait: Duration, deadline: ContinuousClock.Instant?,
        _ work: @escaping @Sendable (PostgresTransactionConnection, TransactionAttempt<T>) async throws -> T
    ) async throws -> T {
        let attempt = TransactionAttempt<T>()
        let client = client
        let logger = logger
        let observer = observer
        // The wait for a connection never outlasts the deadline.
        let leaseEnd = min(ContinuousClock.now + leaseWait, deadline ?? .now + leaseWait)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                attempt.start(continuation)
                attempt.setWorker(
                    Task {
                        let lease = observer.requestConnection()
                        defer { lease.end() }
                        do {
                            let result = try await client.withConnection { connection in
                                lease.granted()
                                defer { lease.end() }
                                guard attempt.leased(connection) else { throw AttemptExpired(expiry: .noConnection) }
                                let transaction = PostgresTransactionConnection(connection: connection, logger: logger)
                                return try await work(transaction, attempt)
                            }
                            attempt.finished(.success(result))
                        } catch {
                            attempt.finished(.failure(error))
                        }
                    })
                attempt.setClock(
                    Task {
                        try? await Task.sleep(until: leaseEnd)
                        guard !Task.isCancelled else { return }
                        attempt.expire { $0.leaseWaitEnded() }
                        guard let deadline else { return }
                        try? await Task.sleep(until: deadline)
                        guard !Task.isCancelled else { return }
                        attempt.expire { $0.deadlinePassed() }
                    })
            }
        } onCancel: {
            attempt.expire { $0.cancelled() }
        }
    }
}

/// The worker, the clock and the caller of one attempt at a transaction,
/// around ``TransactionAttemptState``: whichever ends the attempt first
/// answers the caller, once.
final class TransactionAttempt<T: Sendable>: Sendable {
    typealias State = TransactionAttemptState<PostgresConnection>

    private struct Parts: Sendable {
        var state = State()
        var continuation: CheckedContinuation<T, any Error>?
        /// An answer given before the caller waited (a cancelled caller).
        var early: Result<T, any Error>?
        var worker: Task<Void, Never>?
        var clock: Task<Void, Never>?
    }

    private let parts = LockedState(Parts())

    /// The caller waits: it gets an answer given meanwhile at once.
    func start(_ continuation: CheckedContinuation<T, any Error>) {
        let early = parts.withLock { parts -> Result<T, any Error>? in
            guard let early = parts.early else {
                parts.continuation = continuation
                return nil
            }
            return early
        }
        if let early { continuation.resume(with: early) }
    }

    func setWorker(_ worker: Task<Void, Never>) {
        let answered = parts.withLock { parts in
            parts.worker = worker
            return parts.state.isAnswered
        }
        // The caller went away before the worker existed.
        if answered { worker.cancel() }
    }

    func setClock(_ clock: Task<Void, Never>) {
        let answered = parts.withLock { parts in
            parts.clock = clock
            return parts.state.isAnswered
        }
        if answered { clock.cancel() }
    }

    /// The pool lent `connection`; `false` when the caller has its answer.
    func leased(_ connection: PostgresConnection) -> Bool {
        parts.withLock { $0.state.leased(connection) }
    }

    /// Whether the transaction may commit: `false` once the caller has its
    /// answer, and then never again.
    func willCommit() -> Bool {
        parts.withLock { $0.state.willCommit() }
    }

    /// The worker's outcome, which answers the caller unless something else did.
    func finished(_ outcome: Result<T, any Error>) {
        let answers = parts.withLock { $0.state.workerFinished() }
        if answers { deliver(outcome) }
    }

    /// The clock or the caller's cancellation ends the attempt, if nothing did.
    func expire(_ event: (inout State) -> State.ExpiryAction) {
        let (action, worker) = parts.withLock { parts in (event(&parts.state), parts.worker) }
        switch action {
        case .none:
            return
        case .answer(let expiry):
            // Stops the lease request still waiting in the pool.
            worker?.cancel()
            deliver(.failure(Self.error(for: expiry)))
        case .answerAndClose(let expiry, let connection):
            // Closing rolls back, and ends every statement waiting on the connection.
            connection.close().whenComplete { _ in }
            deliver(.failure(Self.error(for: expiry)))
        }
    }

    private static func error(for expiry: State.Expiry) -> any Error {
        expiry == .cancelled ? CancellationError() : AttemptExpired(expiry: expiry)
    }

    private func deliver(_ result: Result<T, any Error>) {
        let (continuation, clock) = parts.withLock { parts in
            defer { parts.continuation = nil }
            if parts.continuation == nil { parts.early = result }
            return (parts.continuation, parts.clock)
        }
        clock?.cancel()
        continuation?.resume(with: result)
    }
}

/// A transaction attempt ended before its worker did.
struct AttemptExpired: Error, Sendable {
    var expiry: TransactionAttemptState<PostgresConnection>.Expiry
}
