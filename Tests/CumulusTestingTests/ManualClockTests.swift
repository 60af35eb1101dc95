import CumulusTesting
import Testing

@Suite("ManualClock")
struct ManualClockTests {
    /// Whether a task has finished, without waiting for it.
    actor Flag {
        private(set) var isSet = false
        func set() { isSet = true }
    }

    @Test("time moves only when advanced")
    func advancing() {
        let clock = ManualClock()
        #expect(clock.now == .zero)
        clock.advance(by: .seconds(3))
        clock.advance(by: .milliseconds(500))
        #expect(clock.now == ManualClock.Instant(offset: .milliseconds(3500)))
        clock.advance(to: ManualClock.Instant(offset: .seconds(1)))  // the past: no change
        #expect(clock.now.offset == .milliseconds(3500))
        #expect(clock.minimumResolution == .zero)
        #expect(clock.now.advanced(by: .seconds(1)).duration(to: clock.now) == .seconds(-1))
    }

    @Test("a sleeper wakes when its deadline comes, not before")
    func sleeperWakesAtDeadline() async throws {
        let clock = ManualClock()
        let woke = Flag()
        let task = Task {
            try await clock.sleep(for: .seconds(10))
            await woke.set()
        }
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(10))])
        clock.advance(by: .seconds(9))
        #expect(clock.sleeperCount == 1)
        #expect(await !woke.isSet)
        clock.advance(by: .seconds(1))
        try await task.value
        #expect(await woke.isSet)
        #expect(clock.sleeperCount == 0)
    }

    @Test("sleeping until a moment already past returns at once")
    func pastDeadline() async throws {
        let clock = ManualClock(now: ManualClock.Instant(offset: .seconds(5)))
        try await clock.sleep(until: ManualClock.Instant(offset: .seconds(5)))
        try await clock.sleep(until: .zero)
        try await clock.sleep(for: .zero)
        #expect(clock.sleeperCount == 0)
    }

    @Test("sleepers are due in deadline order, equal deadlines first come first served")
    func deadlineOrder() async throws {
        let clock = ManualClock()
        let tasks = [3, 1, 2, 1].map { seconds in
            Task { try await clock.sleep(for: .seconds(seconds)) }
        }
        await clock.waitForSleepers(count: 4)
        #expect(clock.pendingDeadlines.map(\.offset) == [.seconds(1), .seconds(1), .seconds(2), .seconds(3)])

        #expect(clock.advanceToNextDeadline())
        try await tasks[1].value
        try await tasks[3].value
        #expect(clock.now.offset == .seconds(1))
        #expect(clock.pendingDeadlines.map(\.offset) == [.seconds(2), .seconds(3)])

        clock.advance(by: .seconds(5))
        try await tasks[0].value
        try await tasks[2].value
        #expect(clock.sleeperCount == 0)
        #expect(!clock.advanceToNextDeadline())
    }

    @Test("a cancelled sleeper throws CancellationError and leaves")
    func cancellation() async throws {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
        // Advancing afterwards resumes nothing twice.
        clock.advance(by: .seconds(60))
    }

    @Test("a task cancelled before it sleeps throws at once")
    func cancelledBeforeSleeping() async throws {
        let clock = ManualClock()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(1))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
        #expect(clock.pendingDeadlines.isEmpty)
    }

    @Test("waitForSleepers returns once enough tasks sleep")
    func waitingForSleepers() async throws {
        let clock = ManualClock()
        await clock.waitForSleepers(count: 0)
        let waiter = Task { await clock.waitForSleepers(count: 2) }
        let first = Task { try await clock.sleep(for: .seconds(1)) }
        let second = Task { try await clock.sleep(for: .seconds(2)) }
        await waiter.value
        #expect(clock.sleeperCount == 2)
        clock.advance(by: .seconds(2))
        try await first.value
        try await second.value

        // A cancelled wait returns.
        let cancelled = Task { await clock.waitForSleepers(count: 5) }
        cancelled.cancel()
        await cancelled.value
    }

    @Test("works through Task.sleep and as any Clock<Duration>")
    func asAnyClock() async throws {
        let clock = ManualClock()
        let erased: any Clock<Duration> = clock
        let task = Task {
            try await erased.sleep(for: .seconds(1))
            try await Task.sleep(for: .seconds(2), clock: clock)
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines.map(\.offset) == [.seconds(3)])
        clock.advance(by: .seconds(2))
        try await task.value
    }

    @Test("many sleepers and concurrent advances: nobody wakes early, everybody wakes")
    func stress() async throws {
        let clock = ManualClock()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    let deadline = ManualClock.Instant(offset: .milliseconds((index * 37) % 1000))
                    try await clock.sleep(until: deadline)
                    #expect(clock.now >= deadline)
                }
            }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<300 {
                        clock.advance(by: .milliseconds(1))
                        await Task.yield()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(clock.sleeperCount == 0)
        #expect(clock.now.offset == .milliseconds(1200))
    }
}
