import Foundation

/// A value guarded by a lock, for state that synchronous, nonisolated code
/// must reach: the service's caches, a manual clock's readings, and the
/// notification streams an in-memory handle hands out without awaiting, and
/// the record server's caches and counters.
///
/// (`Synchronization.Mutex` would do, but it needs macOS 15 and the package
/// supports macOS 13.)
public final class LockedState<State: Sendable>: @unchecked Sendable {
    // Safety: `state` is read and written only inside `withLock`, while
    // `lock` is held, so no two threads ever touch it at once.
    private let lock = NSLock()
    private var state: State

    /// Guards `state`.
    public init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state. `body` must not call
    /// back into the same `LockedState` (the lock is not recursive) and must
    /// not resume continuations: collect them and resume them afterwards.
    public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
