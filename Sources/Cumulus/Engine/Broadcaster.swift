import Foundation

/// Hands every value to every current subscriber, each with a buffer of its
/// own: the machinery under ``SyncStream``.
///
/// Each operation is one step under `lock`: a subscriber is registered
/// together with the replay of the latest value, and `yield` hands its value
/// to every subscriber before the next `yield` may. So one subscriber
/// receives values in the order of the `yield` calls, and a late subscriber
/// of a replaying broadcaster ends on the latest value whatever `yield`s race
/// with its subscription.
final class Broadcaster<Element: Sendable>: @unchecked Sendable {
    /// What a subscriber keeps of the values it has not read yet.
    enum Buffering {
        /// Every value, in order, however many.
        case unbounded
        /// The newest value only: a newer one replaces it.
        case newest
    }

    // Safety: `subscribers` (and the state inside each), `nextID`, `latest`
    // and `finished` are guarded by `lock`.
    private let lock = NSLock()
    private var subscribers: [Int: Subscriber] = [:]
    private var nextID = 0
    private var latest: Element?
    private var finished = false
    private let buffering: Buffering
    /// Whether a new subscriber first gets the latest value.
    private let replaysLatest: Bool
    /// Runs when `subscribe` has registered a subscriber, before it returns:
    /// tests yield there, as a racing `yield` could.
    private let afterRegistering: (@Sendable (Broadcaster) -> Void)?

    /// `initial` is the latest value before anything is yielded, replayed
    /// like one when the broadcaster replays its latest.
    init(
        replaysLatest: Bool = false, buffering: Buffering = .unbounded, initial: Element? = nil,
        afterRegistering: (@Sendable (Broadcaster) -> Void)? = nil
    ) {
        self.latest = replaysLatest ? initial : nil
        self.replaysLatest = replaysLatest
        self.buffering = buffering
        self.afterRegistering = afterRegistering
    }

    /// A new subscriber, which sees every value from now on, after the
    /// latest one if the broadcaster replays it. After `finish` it sees none.
    func subscribe() -> Subscription {
        lock.lock()
        let id = nextID
        nextID += 1
        if !finished {
            let subscriber = Subscriber()
            if let latest { subscriber.buffer.append(latest, buffering) }
            subscribers[id] = subscriber
        }
        lock.unlock()
        afterRegistering?(self)
        return Subscription(Hold(self, id: id, keeping: nil))
    }

    func yield(_ element: Element) {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        if replaysLatest { latest = element }
        for subscriber in subscribers.values {
            if let waiter = subscriber.waiter {
                // Resuming only schedules the reader, so it may happen under the lock.
                subscriber.waiter = nil
                waiter.resume(returning: element)
            } else {
                subscriber.buffer.append(element, buffering)
            }
        }
    }

    /// Ends every subscription once its reader has read what it holds.
    func finish() {
        lock.lock()
        finished = true
        latest = nil
        var waiters: [CheckedContinuation<Element?, Never>] = []
        for (id, subscriber) in subscribers where subscriber.buffer.isEmpty {
            if let waiter = subscriber.waiter { waiters.append(waiter) }
            subscribers[id] = nil
        }
        lock.unlock()
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// How many subscriptions have not ended.
    var subscriberCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return subscribers.count
    }

    /// The next value for subscriber `id`, waiting for one if need be; `nil`
    /// when the subscription ended. Cancelling the task ends it.
    fileprivate func next(_ id: Int, isolation: isolated (any Actor)?) async -> Element? {
        switch take(id) {
        case .value(let element): return element
        case .ended: return nil
        case .empty: break
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                lock.lock()
                defer { lock.unlock() }
                guard let subscriber = subscribers[id] else { return continuation.resume(returning: nil) }
                if let element = subscriber.buffer.removeFirst() { return continuation.resume(returning: element) }
                if finished {
                    subscribers[id] = nil
                    return continuation.resume(returning: nil)
                }
                precondition(
                    subscriber.waiter == nil,
                    "Two tasks iterate one subscription at once: read the engine's property again for each reader")
                subscriber.waiter = continuation
            }
        } onCancel: {
            end(id)
        }
    }

    /// What subscriber `id` gets without waiting.
    private func take(_ id: Int) -> Taken {
        if Task.isCancelled {
            end(id)
            return .ended
        }
        lock.lock()
        defer { lock.unlock() }
        guard let subscriber = subscribers[id] else { return .ended }
        if let element = subscriber.buffer.removeFirst() { return .value(element) }
        if finished {
            subscribers[id] = nil
            return .ended
        }
        return .empty
    }

    private enum Taken {
        case value(Element)
        case ended
        case empty
    }

    /// Ends subscription `id`: a reader waiting for it gets `nil`.
    fileprivate func end(_ id: Int) {
        lock.lock()
        let subscriber = subscribers.removeValue(forKey: id)
        let waiter = subscriber?.waiter
        subscriber?.waiter = nil
        lock.unlock()
        waiter?.resume(returning: nil)
        // `subscriber` and its buffer are released here, outside the lock.
    }
}

extension Broadcaster {
    /// One subscriber's values, as an async sequence to iterate once, in one
    /// task. The subscription ends when its iterator is dropped (the loop
    /// ended), when the reading task is cancelled, when the sequence is
    /// dropped without being iterated, or after `finish` once it is read.
    struct Subscription: AsyncSequence, Sendable {
        private let hold: Hold

        fileprivate init(_ hold: Hold) { self.hold = hold }

        func makeAsyncIterator() -> Iterator {
            Iterator(Hold(hold.broadcaster, id: hold.id, keeping: hold))
        }

        struct Iterator: AsyncIteratorProtocol {
            private let hold: Hold

            fileprivate init(_ hold: Hold) { self.hold = hold }

            mutating func next() async -> Element? {
                await hold.broadcaster.next(hold.id, isolation: nil)
            }

            @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
            mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
                await hold.broadcaster.next(hold.id, isolation: actor)
            }
        }
    }

    /// Ends a subscription when the last reference to it goes away. The
    /// sequence holds one and each of its iterators another, which keeps the
    /// sequence's alive, so that dropping the iterator ends the subscription
    /// even while the sequence lives on.
    fileprivate final class Hold: Sendable {
        let broadcaster: Broadcaster
        let id: Int
        private let kept: Hold?

        init(_ broadcaster: Broadcaster, id: Int, keeping kept: Hold?) {
            self.broadcaster = broadcaster
            self.id = id
            self.kept = kept
        }

        deinit { broadcaster.end(id) }
    }

    /// One subscriber's state; it lives in `subscribers`, under the lock.
    private final class Subscriber {
        var buffer = Buffer()
        /// The reader waiting in `next` while the buffer is empty.
        var waiter: CheckedContinuation<Element?, Never>?
    }

    /// A first-in, first-out queue of values.
    private struct Buffer {
        private var elements: [Element] = []
        private var head = 0

        var isEmpty: Bool { head == elements.count }

        mutating func append(_ element: Element, _ buffering: Buffering) {
            if buffering == .newest {
                elements.removeAll(keepingCapacity: true)
                head = 0
            }
            elements.append(element)
        }

        mutating func removeFirst() -> Element? {
            guard head < elements.count else { return nil }
            let element = elements[head]
            head += 1
            if head == elements.count {
                elements.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 32, head * 2 >= elements.count {
                // Drop the values already read once they are half the array.
                elements.removeFirst(head)
                head = 0
            }
            return element
        }
    }
}
