import Foundation

/// A value behind a lock, for state that synchronous code reaches.
final class Locked<State: Sendable>: @unchecked Sendable {
    // Safety: `state` is read and written only inside `withLock`.
    private let lock = NSLock()
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access; `body` must not resume continuations.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
