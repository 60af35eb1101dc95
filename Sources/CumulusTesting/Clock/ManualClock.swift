import CumulusServerCore

/// A clock that moves only when a test tells it to.
///
/// Code under test sleeps on it as on any `Clock<Duration>`; the test moves
/// time forward with ``advance(by:)`` and the sleepers whose deadline has
/// come are resumed, in deadline order. Nothing waits for real time, so a
/// test of a five-minute backoff runs in microseconds.
///
/// ```swift
/// let clock = ManualClock()
/// let task = Task { try await clock.sleep(for: .seconds(30)) }
/// await clock.waitForSleepers(count: 1)   // the task is now asleep
/// clock.advance(by: .seconds(30))         // and now it is awake
/// try await task.value
/// ```
///
/// A sleeping task that is cancelled throws `CancellationError` at once, as
/// with the system clocks. `advance` may be called from any task or thread.
public final class ManualClock: Clock, Sendable {
    /// A moment on a ``ManualClock``: how far it is from the clock's start.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable, CustomStringConvertible {
        /// The time between the clock's start and this moment.
        public var offset: Duration

        /// The moment `offset` after the clock's start.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The clock's start.
        public static var zero: Instant { Instant(offset: .zero) }

        /// The moment `duration` after this one.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// The time from this moment to `other` (negative if `other` is earlier).
        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        /// The offset from the clock's start, e.g. `"+30.0 seconds"`.
        public var description: String { "+\(offset)" }
    }

    private struct Sleeper: Sendable {
        var deadline: Instant
        /// The order `sleep` was called in, to resume equal deadlines first come, first served.
        var sequence: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    /// Where one call of `sleep` stands: its cancellation handler may run
    /// before, while or after the sleeper is registered.
    private enum SleepState: Sendable {
        case starting
        case cancelledBeforeRegistering
        case sleeping(Sleeper)
    }

    private struct SleeperWaiter: Sendable {
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State: Sendable {
        var now: Instant
        var nextID = 0
        var sleeps: [Int: SleepState] = [:]
        var sleeperCount = 0
        var waiters: [Int: SleeperWaiter] = [:]
        var cancelledWaiters: Set<Int> = []

        mutating func makeID() -> Int {
            nextID += 1
            return nextID
        }

        /// Takes the waiters that `sleeperCount` now satisfies.
        mutating func satisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
            var ready: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in waiters where waiter.count <= sleeperCount {
                waiters.removeValue(forKey: id)
                ready.append(waiter.continuation)
            }
            return ready
        }
    }

    private let state: LockedState<State>

    /// Creates a clock that reads `now`, ``Instant/zero`` by default.
    public init(now: Instant = .zero) {
        state = LockedState(State(now: now))
    }

    /// The current moment: where the last ``advance(by:)`` left the clock.
    public var now: Instant {
        state.withLock { $0.now }
    }

    /// The clock's resolution: it has none, every duration is exact.
    public var minimumResolution: Duration { .zero }

    /// The number of tasks asleep on the clock now.
    public var sleeperCount: Int {
        state.withLock { $0.sleeperCount }
    }

    /// The deadlines of the tasks asleep on the clock, earliest first.
    public var pendingDeadlines: [Instant] {
        state.withLock { state in
            state.sleeps.values.compactMap { sleep -> Sleeper? in
                if case .sleeping(let sleeper) = sleep { return sleeper }
                return nil
            }
            .sorted { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
            .map(\.deadline)
        }
    }

    /// Suspends until the clock reaches `deadline`, returning at once if it
    /// already has. Throws `CancellationError` if the task is (or gets) cancelled.
    /// The tolerance is ignored: a manual clock is always exact.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state in
            let id = state.makeID()
            state.sleeps[id] = .starting
            return id
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome {
                    case resume
                    case cancel
                    case sleep([CheckedContinuation<Void, Never>])
                }
                let outcome = state.withLock { state -> Outcome in
                    if case .cancelledBeforeRegistering = state.sleeps[id] {
                        state.sleeps.removeValue(forKey: id)
                        return .cancel
                    }
                    if deadline <= state.now {
                        state.sleeps.removeValue(forKey: id)
                        return .resume
                    }
                    state.sleeps[id] = .sleeping(Sleeper(deadline: deadline, sequence: id, continuation: continuation))
                    state.sleeperCount += 1
                    return .sleep(state.satisfiedWaiters())
                }
                switch outcome {
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                case .sleep(let waiters): for waiter in waiters { waiter.resume() }
                }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                switch state.sleeps[id] {
                case .starting:
                    state.sleeps[id] = .cancelledBeforeRegistering
                    return nil
                case .sleeping(let sleeper):
                    state.sleeps.removeValue(forKey: id)
                    state.sleeperCount -= 1
                    return sleeper.continuation
                case .cancelledBeforeRegistering, nil:
                    // Already cancelled, or already resumed by `advance`.
                    return nil
                }
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward by `duration` and resumes every sleeper whose
    /// deadline has come, earliest deadline first.
    ///
    /// The clock reads its new time before any sleeper resumes. A sleeper
    /// that goes back to sleep until a moment already past returns at once.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "A ManualClock cannot go back in time (advance by \(duration))")
        advance { $0.advanced(by: duration) }
    }

    /// Moves the clock forward to `instant` (if it is later than ``now``) and
    /// resumes every sleeper whose deadline has come, earliest deadline first.
    public func advance(to instant: Instant) {
        advance { _ in instant }
    }

    /// Moves the clock to the target computed from the current time, in one
    /// step so that concurrent advances add up.
    private func advance(_ target: (Instant) -> Instant) {
        let due = state.withLock { state -> [Sleeper] in
            let instant = target(state.now)
            if instant > state.now { state.now = instant }
            var due: [Sleeper] = []
            for (id, sleep) in state.sleeps {
                if case .sleeping(let sleeper) = sleep, sleeper.deadline <= state.now {
                    state.sleeps.removeValue(forKey: id)
                    due.append(sleeper)
                }
            }
            state.sleeperCount -= due.count
            return due.sorted { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the clock to the earliest pending deadline and resumes the
    /// sleepers due then. Returns `false`, leaving the clock alone, when
    /// nobody is asleep.
    @discardableResult
    public func advanceToNextDeadline() -> Bool {
        guard let next = pendingDeadlines.first else { return false }
        advance(to: next)
        return true
    }

    /// Suspends until at least `count` tasks are asleep on the clock, so
    /// that a test can advance time knowing the code under test is waiting.
    /// Returns at once if they already are, and when the waiting task is cancelled.
    public func waitForSleepers(count: Int) async {
        let id = state.withLock { $0.makeID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.cancelledWaiters.remove(id) != nil || state.sleeperCount >= count { return true }
                    state.waiters[id] = SleeperWaiter(count: count, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter.continuation }
                state.cancelledWaiters.insert(id)
                return nil
            }
            continuation?.resume()
        }
        // A cancellation that came after the waiter was resumed left a mark; drop it.
        state.withLock { _ = $0.cancelledWaiters.remove(id) }
    }
}
