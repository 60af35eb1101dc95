import Foundation

/// Hands every value to every current subscriber; each subscription is a
/// new `AsyncStream` that is removed when its reader stops.
///
/// Subscribing, with the replay of the latest value, is one step under
/// `lock`, and so is handing a value to every subscriber: one subscriber
/// receives values in the order of the `yield` calls, and a late subscriber
/// ends on the latest value whatever `yield`s race with its subscription.
final class Broadcaster<Element: Sendable>: @unchecked Sendable {
    // Safety: `continuations`, `nextID`, `latest` and `finished` are guarded by `lock`.
    private let lock = NSLock()
    private var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
    private var nextID = 0
    private var latest: Element?
    private var finished = false
    /// Whether a new subscriber first gets the latest value.
    private let replaysLatest: Bool
    /// Runs when `subscribe` has registered a subscriber, before it returns:
    /// tests yield there, as a racing `yield` could.
    private let afterRegistering: (@Sendable (Broadcaster) -> Void)?

    init(replaysLatest: Bool = false, afterRegistering: (@Sendable (Broadcaster) -> Void)? = nil) {
        self.replaysLatest = replaysLatest
        self.afterRegistering = afterRegistering
    }

    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .unbounded)
        lock.lock()
        if finished {
            lock.unlock()
            continuation.finish()
            return stream
        }
        let id = nextID
        nextID += 1
        // The stream and its continuation are held here, so the handler
        // cannot run (and take the lock) before the lock is released.
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        continuations[id] = continuation
        if replaysLatest, let latest { continuation.yield(latest) }
        lock.unlock()
        afterRegistering?(self)
        return stream
    }

    func yield(_ element: Element) {
        lock.lock()
        defer { lock.unlock() }
        latest = element
        // Yielding to a continuation never calls back into this class.
        for continuation in continuations.values { continuation.yield(element) }
    }

    func finish() {
        lock.lock()
        finished = true
        let targets = Array(continuations.values)
        continuations.removeAll()
        lock.unlock()
        for continuation in targets { continuation.finish() }
    }

    var subscriberCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return continuations.count
    }

    private func remove(_ id: Int) {
        lock.lock()
        continuations.removeValue(forKey: id)
        lock.unlock()
    }
}
