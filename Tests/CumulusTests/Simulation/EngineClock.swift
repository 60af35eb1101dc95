import CumulusTesting
import Foundation

/// The history's manual clock as one engine sees it: it counts that
/// engine's sleepers, so that the simulator knows whose sleep it is and
/// moves time only when every engine is asleep or done. Without it, an
/// engine woken by one advance could still be running while the next
/// operation is drawn, and a seed would not replay.
struct EngineClock: Clock {
    typealias Instant = ManualClock.Instant

    let base: ManualClock
    let sleepers = SleeperCount()

    var now: Instant { base.now }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        sleepers.add(1)
        defer { sleepers.add(-1) }
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
}

/// How many tasks are inside one ``EngineClock``'s `sleep`.
final class SleeperCount: @unchecked Sendable {
    // Safety: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0

    func add(_ delta: Int) {
        lock.withLock { count += delta }
    }

    var value: Int { lock.withLock { count } }
}

/// An engine that was dropped while its sync waited: its run may go on,
/// and the simulator waits for it as for any engine before moving on.
struct Zombie {
    let sleepers: SleeperCount
    let completion: Completion

    /// Asleep on the clock or finished: it will not act until time moves.
    var isIdle: Bool { sleepers.value > 0 || completion.outcome != nil }
}
