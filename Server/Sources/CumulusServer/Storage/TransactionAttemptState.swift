/// One attempt at a storage transaction racing its deadline: who answers
/// the caller, and whether the transaction may still commit.
///
/// The caller is answered exactly once: by the worker when it finishes, or
/// by the clock when it does not (or by the caller's cancellation while no
/// connection is lent; a running transaction is left to finish or to meet
/// its deadline, so that cancelled requests do not break connections). Once
/// the clock has answered, the worker's transaction is abandoned:
/// ``willCommit()`` refuses, so a transaction whose caller heard
/// `TRY_AGAIN_LATER` never commits afterwards; only a `COMMIT` already sent
/// stays in doubt.
///
/// A pure state machine: ``PostgresStorage`` carries out its actions, and
/// the tests drive it without tasks or sleeps.
struct TransactionAttemptState<Connection: Sendable>: Sendable {
    /// Where the worker is.
    enum Phase: Sendable {
        /// Waiting for the pool to lend a connection.
        case leasing
        /// Running the transaction's statements on the connection.
        case running(Connection)
        /// `COMMIT` is sent: the outcome is the server's.
        case committing(Connection)
        /// The worker finished (and gave the connection back).
        case finished
    }

    /// Why the caller was answered before the worker finished.
    enum Expiry: Sendable, Equatable {
        /// No connection came within the wait: nothing ran.
        case noConnection
        /// The deadline passed before `COMMIT` was sent: nothing committed.
        case abandoned
        /// The deadline passed after `COMMIT` was sent: it may have committed.
        case inDoubt
        /// The caller went away before a connection was lent.
        case cancelled
    }

    /// What to do when the clock or the caller ends the wait.
    enum ExpiryAction: Sendable {
        /// Nothing: the caller was answered already.
        case none
        /// Answer the caller with `expiry`; stop waiting for a connection.
        case answer(Expiry)
        /// Answer the caller with `expiry` and close the connection, which
        /// rolls back the transaction and ends the statements waiting on it.
        case answerAndClose(Expiry, Connection)
    }

    private(set) var phase = Phase.leasing
    /// Whether the caller has its answer.
    private(set) var isAnswered = false

    /// The pool lent a connection; `false` when the caller was answered
    /// meanwhile and the connection must go back unused.
    mutating func leased(_ connection: Connection) -> Bool {
        guard !isAnswered else { return false }
        phase = .running(connection)
        return true
    }

    /// The wait for a connection is over.
    mutating func leaseWaitEnded() -> ExpiryAction {
        guard !isAnswered, case .leasing = phase else { return .none }
        isAnswered = true
        return .answer(.noConnection)
    }

    /// The caller was cancelled: it stops waiting for a connection.
    mutating func cancelled() -> ExpiryAction {
        guard !isAnswered, case .leasing = phase else { return .none }
        isAnswered = true
        return .answer(.cancelled)
    }

    /// The transaction's deadline passed.
    mutating func deadlinePassed() -> ExpiryAction {
        guard !isAnswered else { return .none }
        switch phase {
        case .leasing:
            isAnswered = true
            return .answer(.noConnection)
        case .running(let connection):
            isAnswered = true
            return .answerAndClose(.abandoned, connection)
        case .committing(let connection):
            isAnswered = true
            return .answerAndClose(.inDoubt, connection)
        case .finished:
            preconditionFailure("Internal inconsistency: a finished worker left its caller unanswered")
        }
    }

    /// The worker is about to send `COMMIT`: `true` when it may, `false`
    /// when the caller was answered and the transaction must roll back.
    mutating func willCommit() -> Bool {
        guard !isAnswered, case .running(let connection) = phase else { return false }
        phase = .committing(connection)
        return true
    }

    /// The worker finished; `true` when its outcome is the caller's answer.
    mutating func workerFinished() -> Bool {
        phase = .finished
        guard !isAnswered else { return false }
        isAnswered = true
        return true
    }
}
