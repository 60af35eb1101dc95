import Foundation

/// Long polls waiting for a database's next write.
///
/// Each database has a generation that every write (this server's, or
/// another's announced through a broadcaster) moves on. A poll reads the
/// generation, then storage, and waits only while the generation is the one
/// it read: a write that commits between the read and the wait is never
/// missed.
final class DatabaseWaiters: Sendable {
    fileprivate struct State: Sendable {
        var generations: [DatabaseKey: UInt64] = [:]
        /// Moved on by ``wakeAll()``: part of every database's generation,
        /// so that a poll between its read and its wait is not missed either.
        var everyGeneration: UInt64 = 0
        var waiters: [DatabaseKey: [Int: CheckedContinuation<Void, Never>]] = [:]
        var nextWaiter = 0
        var closed = false
    }

    private let state = LockedState(State())

    /// The database's generation now.
    func generation(of key: DatabaseKey) -> UInt64 {
        state.withLock { $0.generation(of: key) }
    }

    /// Whether a poll waits on the database: another server's write to a
    /// database nobody here polls costs nothing.
    func hasWaiters(for key: DatabaseKey) -> Bool {
        state.withLock { !($0.waiters[key]?.isEmpty ?? true) }
    }

    /// Every database some poll waits on.
    func waitedDatabases() -> [DatabaseKey] {
        state.withLock { $0.waiters.filter { !$0.value.isEmpty }.map(\.key) }
    }

    /// Moves the database's generation on and wakes its polls.
    func wake(_ key: DatabaseKey) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.generations[key, default: 0] &+= 1
            return Array((state.waiters.removeValue(forKey: key) ?? [:]).values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Wakes every poll (a broadcaster may have lost announcements, or a
    /// credential may have been taken away).
    func wakeAll() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.everyGeneration &+= 1
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap(\.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Ends every waiting poll and makes later waits return at once (the server is closing).
    func close() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap(\.values)
        }
        for waiter in woken { waiter.resume() }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Waits until the database's generation moves past `generation`, or
    /// `timeout` passes, or the task is cancelled.
    func wait(_ key: DatabaseKey, after generation: UInt64, timeout: Duration) async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.remove(key, id)?.resume()
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let registered = state.withLock { state -> Bool in
                    guard !state.closed, !Task.isCancelled, state.generation(of: key) == generation else {
                        return false
                    }
                    state.waiters[key, default: [:]][id] = continuation
                    return true
                }
                if !registered { continuation.resume() }
            }
        } onCancel: {
            self.remove(key, id)?.resume()
        }
        timer.cancel()
    }

    private func remove(_ key: DatabaseKey, _ id: Int) -> CheckedContinuation<Void, Never>? {
        state.withLock { $0.waiters[key]?.removeValue(forKey: id) }
    }
}

extension DatabaseWaiters.State {
    func generation(of key: DatabaseKey) -> UInt64 {
        (generations[key] ?? 0) &+ everyGeneration
    }
}
