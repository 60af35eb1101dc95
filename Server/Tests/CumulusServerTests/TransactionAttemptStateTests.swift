import Testing

@testable import CumulusServer

/// The deadline of a PostgreSQL transaction, driven without tasks or
/// sleeps: the caller is answered once, and an abandoned transaction never
/// commits.
@Suite("Transaction attempt state")
struct TransactionAttemptStateTests {
    /// What happens to an attempt, and what each event returns, in words.
    enum Event {
        case leased, leaseWaitEnded, willCommit, deadlinePassed, cancelled, workerFinished
    }

    /// Applies `events` in order to a fresh attempt and describes each outcome.
    static func run(_ events: [Event]) -> [String] {
        var state = TransactionAttemptState<String>()
        return events.map { event in
            switch event {
            case .leased: state.leased("connection") ? "runs" : "gives back"
            case .willCommit: state.willCommit() ? "commits" : "rolls back"
            case .workerFinished: state.workerFinished() ? "answers" : "is dropped"
            case .leaseWaitEnded: describe(state.leaseWaitEnded())
            case .deadlinePassed: describe(state.deadlinePassed())
            case .cancelled: describe(state.cancelled())
            }
        }
    }

    static func describe(_ action: TransactionAttemptState<String>.ExpiryAction) -> String {
        switch action {
        case .none: "nothing"
        case .answer(let expiry): "answers \(expiry)"
        case .answerAndClose(let expiry, let connection): "answers \(expiry), closes \(connection)"
        }
    }

    @Test("a worker that finishes in time answers; the clock then does nothing")
    func finishesInTime() {
        #expect(
            Self.run([.leased, .willCommit, .workerFinished, .leaseWaitEnded, .deadlinePassed, .cancelled])
                == ["runs", "commits", "answers", "nothing", "nothing", "nothing"])
    }

    @Test("no connection within the wait: the caller is answered, a late connection goes back unused")
    func noConnection() {
        #expect(
            Self.run([.leaseWaitEnded, .leased, .willCommit, .workerFinished, .deadlinePassed])
                == ["answers noConnection", "gives back", "rolls back", "is dropped", "nothing"])
    }

    @Test("the deadline before COMMIT abandons the transaction: the connection closes and it never commits")
    func abandoned() {
        #expect(
            Self.run([.leased, .leaseWaitEnded, .deadlinePassed, .willCommit, .workerFinished, .deadlinePassed])
                == ["runs", "nothing", "answers abandoned, closes connection", "rolls back", "is dropped", "nothing"])
    }

    @Test("the deadline after COMMIT was sent leaves the outcome in doubt")
    func inDoubt() {
        #expect(
            Self.run([.leased, .willCommit, .deadlinePassed, .workerFinished])
                == ["runs", "commits", "answers inDoubt, closes connection", "is dropped"])
    }

    @Test("a deadline while still waiting for a connection answers like the end of the wait")
    func deadlineWhileLeasing() {
        #expect(Self.run([.deadlinePassed, .leased]) == ["answers noConnection", "gives back"])
    }

    @Test("a cancelled caller stops waiting for a connection, but a running transaction is left to its deadline")
    func cancellation() {
        #expect(Self.run([.cancelled, .leased]) == ["answers cancelled", "gives back"])
        #expect(
            Self.run([.leased, .cancelled, .willCommit, .workerFinished])
                == ["runs", "nothing", "commits", "answers"])
    }
}
