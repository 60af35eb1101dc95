import Foundation
import Testing

@testable import Cumulus

@Suite("Broadcaster")
struct BroadcasterTests {
    @Test("every subscriber sees every value from when it subscribed")
    func fanOut() async {
        let broadcaster = Broadcaster<Int>()
        broadcaster.yield(0)
        let first = broadcaster.subscribe()
        let second = broadcaster.subscribe()
        broadcaster.yield(1)
        broadcaster.yield(2)
        broadcaster.finish()
        #expect(await Array(first) == [1, 2])
        #expect(await Array(second) == [1, 2])
    }

    @Test("a subscriber that goes away is removed")
    func cleanup() async {
        let broadcaster = Broadcaster<Int>()
        do {
            let stream = broadcaster.subscribe()
            #expect(broadcaster.subscriberCount == 1)
            _ = stream
        }
        // The stream was dropped: its termination handler ran.
        #expect(broadcaster.subscriberCount == 0)
    }

    @Test("a replaying broadcaster gives a new subscriber the latest value first")
    func replay() async {
        let broadcaster = Broadcaster<String>(replaysLatest: true)
        broadcaster.yield("old")
        broadcaster.yield("current")
        let stream = broadcaster.subscribe()
        broadcaster.yield("next")
        broadcaster.finish()
        #expect(await Array(stream) == ["current", "next"])
    }

    @Test("a value yielded while a late subscriber registers comes after the replayed one")
    func yieldDuringSubscription() async {
        // The yield lands between the registration and the return of `subscribe`.
        let broadcaster = Broadcaster<Int>(replaysLatest: true) { $0.yield(2) }
        broadcaster.yield(1)
        let subscription = broadcaster.subscribe()
        broadcaster.finish()
        let seen = await Array(subscription)
        #expect(seen == [1, 2])
    }

    @Test("late subscribers end on the latest value while yields race their subscriptions")
    func lateSubscribersEndOnLatest() async {
        for _ in 0..<10 {
            let counter = Counter()
            // While the threads run, each subscription also meets a yield
            // between its registration and its return.
            let broadcaster = Broadcaster<Int>(replaysLatest: true, buffering: .newest) { broadcaster in
                if let value = counter.nextWhileRacing() { broadcaster.yield(value) }
            }
            broadcaster.yield(0)
            let subscriptions = Gathered<Broadcaster<Int>.Subscription>()
            await onThreads(2) { _ in
                var mine: [Broadcaster<Int>.Subscription] = []
                for _ in 1...100 {
                    if let value = counter.nextWhileRacing() { broadcaster.yield(value) }
                    mine.append(broadcaster.subscribe())
                }
                subscriptions.append(contentsOf: mine)
            }
            counter.stopRacing()
            // With nothing racing it, a subscription replays the latest value.
            var settled = broadcaster.subscribe().makeAsyncIterator()
            let latest = await settled.next()
            broadcaster.finish()
            var stale = 0
            for subscription in subscriptions.items {
                let seen = await Array(subscription)
                if seen.last != latest { stale += 1 }
            }
            #expect(stale == 0, "\(stale) of \(subscriptions.items.count) subscribers did not end on \(latest ?? -1)")
        }
    }

    @Test("an unbounded subscriber keeps every value it has not read, in order")
    func unbounded() async {
        let broadcaster = Broadcaster<Int>()
        let subscription = broadcaster.subscribe()
        for value in 0..<1_000 { broadcaster.yield(value) }
        broadcaster.finish()
        #expect(await Array(subscription) == Array(0..<1_000))
    }

    @Test("a newest-only subscriber keeps only the newest value it has not read")
    func newest() async {
        let broadcaster = Broadcaster<Int>(replaysLatest: true, buffering: .newest)
        broadcaster.yield(1)
        let subscription = broadcaster.subscribe()
        var iterator = subscription.makeAsyncIterator()
        broadcaster.yield(2)
        broadcaster.yield(3)
        #expect(await iterator.next() == 3)
        broadcaster.yield(4)
        broadcaster.finish()
        #expect(await iterator.next() == 4)
        #expect(await iterator.next() == nil)
    }

    @Test("finishing lets each reader read what is waiting for it, then ends it")
    func finishDrains() async {
        let broadcaster = Broadcaster<Int>()
        let holding = broadcaster.subscribe()
        let empty = broadcaster.subscribe()
        broadcaster.yield(1)
        var emptyIterator = empty.makeAsyncIterator()
        #expect(await emptyIterator.next() == 1)
        broadcaster.finish()
        #expect(broadcaster.subscriberCount == 1)
        #expect(await Array(holding) == [1])
        #expect(await emptyIterator.next() == nil)
        #expect(broadcaster.subscriberCount == 0)
        #expect(await Array(broadcaster.subscribe()).isEmpty)
    }

    @Test("a loop that breaks removes its subscriber, though the sequence lives on")
    func loopBreaks() async {
        let broadcaster = Broadcaster<Int>()
        let subscription = broadcaster.subscribe()
        broadcaster.yield(1)
        broadcaster.yield(2)
        for await value in subscription where value == 1 { break }
        #expect(broadcaster.subscriberCount == 0)
        // The sequence is still here, and its subscription over.
        #expect(await Array(subscription).isEmpty)
    }

    @Test("a dropped iterator removes its subscriber")
    func droppedIterator() async {
        let broadcaster = Broadcaster<Int>()
        let subscription = broadcaster.subscribe()
        do {
            var iterator = subscription.makeAsyncIterator()
            broadcaster.yield(1)
            #expect(await iterator.next() == 1)
            #expect(broadcaster.subscriberCount == 1)
        }
        #expect(broadcaster.subscriberCount == 0)
    }

    @Test("cancelling a reader that waits removes its subscriber and ends its loop")
    func cancelledWhileWaiting() async {
        let broadcaster = Broadcaster<Int>()
        let subscription = broadcaster.subscribe()
        let (received, receivedContinuation) = AsyncStream.makeStream(of: Int.self)
        let reader = Task {
            for await value in subscription { receivedContinuation.yield(value) }
            return broadcaster.subscriberCount
        }
        broadcaster.yield(1)
        var receivedIterator = received.makeAsyncIterator()
        #expect(await receivedIterator.next() == 1)
        // Give the reader the time to wait for its next value.
        try? await Task.sleep(for: .milliseconds(20))
        reader.cancel()
        #expect(await reader.value == 0)
        #expect(broadcaster.subscriberCount == 0)
    }

    @Test("a cancelled reader reads nothing more, even what is waiting for it")
    func cancelledWithValuesWaiting() async {
        let broadcaster = Broadcaster<Int>()
        let subscription = broadcaster.subscribe()
        broadcaster.yield(1)
        broadcaster.yield(2)
        let reader = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Array(subscription)
        }
        #expect(await reader.value.isEmpty)
        #expect(broadcaster.subscriberCount == 0)
    }
}

/// Runs `work` on `count` threads of their own, let go at once so that
/// they overlap; returns when all are done.
private func onThreads(_ count: Int, _ work: @escaping @Sendable (Int) -> Void) async {
    let gate = Gate(count)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        for index in 0..<count {
            Thread {
                gate.arriveAndWait()
                work(index)
                if gate.leave() { continuation.resume() }
            }.start()
        }
    }
}

/// Lets threads go once all have arrived, and tells the last one to leave.
private final class Gate: @unchecked Sendable {
    // Safety: `arrived` and `left` are guarded by `lock`.
    private let lock = NSLock()
    private var arrived = 0
    private var left = 0
    private let count: Int

    init(_ count: Int) { self.count = count }

    func arriveAndWait() {
        lock.withLock { arrived += 1 }
        while lock.withLock({ arrived < count }) {}
    }

    /// Whether the calling thread is the last to leave.
    func leave() -> Bool {
        lock.withLock {
            left += 1
            return left == count
        }
    }
}

/// Numbers for values that threads yield, until the race is over.
private final class Counter: @unchecked Sendable {
    // Safety: `last` and `racing` are guarded by `lock`.
    private let lock = NSLock()
    private var last = 0
    private var racing = true

    func nextWhileRacing() -> Int? {
        lock.withLock {
            guard racing else { return nil }
            last += 1
            return last
        }
    }

    func stopRacing() { lock.withLock { racing = false } }
}

/// Values appended from several threads.
private final class Gathered<Item>: @unchecked Sendable {
    // Safety: `gathered` is guarded by `lock`.
    private let lock = NSLock()
    private var gathered: [Item] = []

    func append(contentsOf items: [Item]) { lock.withLock { gathered += items } }

    var items: [Item] { lock.withLock { gathered } }
}

extension Array {
    /// Collects an async sequence that finishes.
    init<S: AsyncSequence>(_ sequence: S) async where S.Element == Element {
        var result: [Element] = []
        do {
            for try await element in sequence { result.append(element) }
        } catch {}
        self = result
    }
}
