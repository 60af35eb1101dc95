import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A caller of `sync()` that gives up gets its answer at once.
@Suite("SyncEngine cancellation")
struct SyncEngineCancellationTests {
    /// Whether a task finished, polled in real time.
    final class Flag: @unchecked Sendable {
        // Safety: `value` is guarded by `lock`.
        private let lock = NSLock()
        private var value: String?
        func set(_ text: String) { lock.withLock { value = text } }
        var text: String? { lock.withLock { value } }
    }

    @Test("sync() cancelled while it waits for an automatic run returns at once; the change stays queued")
    func cancelledWhileWaitingForAnotherRun() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (engine, database, _) = try await devices.engine { $0.automaticSync = true }
        // Offline: the automatic run the upload starts waits in its backoff, on a clock nobody moves.
        database.inject(.networkFailure(), count: 1_000)
        try await engine.upload(Note(id: "n", title: "t"))
        await clock.waitForSleepers(count: 1)

        let flag = Flag()
        let caller = Task {
            do {
                try await engine.sync()
                flag.set("returned")
            } catch is CancellationError {
                flag.set("cancelled")
            } catch {
                flag.set("\(error)")
            }
        }
        // Let the call reach its wait for the automatic run.
        try await Task.sleep(for: .milliseconds(200))
        caller.cancel()
        let deadline = ContinuousClock.now + .seconds(5)
        while flag.text == nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(flag.text == "cancelled")
        #expect(await engine.pendingChangeCount == 1)
        // The automatic run is still there, waiting.
        #expect(clock.sleeperCount >= 1)
        await engine.close()
    }
}
