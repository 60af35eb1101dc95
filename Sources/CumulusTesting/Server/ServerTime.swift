import CumulusServerCore
import Foundation

/// The server's view of an injected clock: the wall-clock date of its
/// timestamps, and waits for injected latency.
struct ServerTime: Sendable {
    private let elapsed: @Sendable () -> Duration
    /// How far ``skip(_:)`` has moved the dates.
    private let skipped = LockedState(Duration.zero)
    private let sleepFor: @Sendable (Duration) async throws -> Void
    /// The date the clock's reading at creation stands for.
    let startDate: Date

    init<C: Clock>(clock: C, startDate: Date) where C.Duration == Duration {
        let start = clock.now
        self.startDate = startDate
        elapsed = { start.duration(to: clock.now) }
        sleepFor = { try await clock.sleep(until: clock.now.advanced(by: $0), tolerance: nil) }
    }

    /// The server's current date: the start date plus the time the clock has moved.
    func now() -> Date {
        let components = (elapsed() + skipped.withLock { $0 }).components
        return startDate.addingTimeInterval(Double(components.seconds) + Double(components.attoseconds) / 1e18)
    }

    /// Moves the dates forward by `duration`, without waking sleepers.
    func skip(_ duration: Duration) {
        skipped.withLock { $0 += duration }
    }

    /// Waits `duration` on the clock.
    func sleep(for duration: Duration) async throws {
        try await sleepFor(duration)
    }
}
