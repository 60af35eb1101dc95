import Foundation

/// A lock that suspends waiting tasks instead of blocking threads, so that a
/// storage runs one transaction at a time across `await`s (one SQLite
/// connection; the in-memory store).
public final class AsyncLock: @unchecked Sendable {
    // Safety: `locked` and `waiters` are touched only while `lock` is held.
    private let lock = NSLock()
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Creates an unlocked lock.
    public init() {}

    /// Waits for the lock (first come, first served) and takes it.
    public func acquire() async {
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
    public func release() {
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
    public func withLock<T>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }
}
