import Foundation

/// Hands every value to every current subscriber; each subscription is a
/// new `AsyncStream` that is removed when its reader stops.
final class Broadcaster<Element: Sendable>: @unchecked Sendable {
    // Safety: `continuations`, `nextID`, `latest` and `finished` are guarded by `lock`.
    private let lock = NSLock()
    private var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
    private var nextID = 0
    private var latest: Element?
    private var finished = false
    /// Whether a new subscriber first gets the latest value.
    private let replaysLatest: Bool

    init(replaysLatest: Bool = false) {
        self.replaysLatest = replaysLatest
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
        continuations[id] = continuation
        let replay = replaysLatest ? latest : nil
        lock.unlock()
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        if let replay { continuation.yield(replay) }
        return stream
    }

    func yield(_ element: Element) {
        lock.lock()
        latest = element
        let targets = Array(continuations.values)
        lock.unlock()
        for continuation in targets { continuation.yield(element) }
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
