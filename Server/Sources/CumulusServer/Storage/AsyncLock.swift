import Foundation

/// A lock that suspends waiting tasks instead of blocking threads, so that
/// one SQLite connection runs one transaction at a time across `await`s.
final class AsyncLock: @unchecked Sendable {
    // Safety: `locked` and `waiters` are touched only while `lock` is held.
    private let lock = NSLock()
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Waits for the lock (first come, first served) and takes it.
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if locked {
                waiters.append(continuation)
                lock.unlock()
            } else {
                locked = true
                lock.unlock()
                continuation.resume()
            }
        }
    }

    /// Hands the lock to the next waiter, or frees it.
    func release() {
        lock.lock()
        if waiters.isEmpty {
            locked = false
            lock.unlock()
        } else {
            let next = waiters.removeFirst()
            lock.unlock()
            next.resume()
        }
    }

    /// Runs `body` holding the lock.
    func withLock<T>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }
}

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
