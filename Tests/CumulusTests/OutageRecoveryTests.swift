import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A run that waits out an unreachable server tries again as soon as the
/// server shows it is back, not at the end of its wait.
@Suite("Recovering from an outage", .timeLimit(.minutes(1)))
struct OutageRecoveryTests {
    @Test("a notification ends a retry wait after a network failure")
    func notificationEndsTheWait() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, phoneDatabase, _) = try await devices.engine {
            $0.automaticSync = true
            $0.pollInterval = .seconds(3600)
            $0.retryPolicy = RetryPolicy(initialDelay: .seconds(60), maximumDelay: .seconds(60), jitter: 0)
        }
        let (laptop, _, _) = try await devices.engine()
        let events = Collected(phone.events)
        #expect(await waitUntil { await phone.hasCompletedFirstFetch })

        phoneDatabase.inject(.networkFailure(), count: 1)
        try await phone.upload(Note(id: "phone", title: "written during the outage"))
        #expect(
            await events.waitUntil {
                $0.contains { if case .retryScheduled = $0 { true } else { false } }
            })

        // The server is back: another device's write is notified, and the
        // phone sends its note and fetches the laptop's without the 60 s wait.
        try await laptop.upload(Note(id: "laptop", title: "written after"))
        try await laptop.sync()
        #expect(await waitUntil { await phone.model(withIdentifier: "laptop") != nil })
        #expect(await waitUntil { await phone.pendingChangeCount == 0 })
        try await laptop.sync()
        #expect(await laptop.model(withIdentifier: "phone") != nil)
        await phone.close()
        await laptop.close()
    }

    @Test("a wait the server asked for (throttled) is waited out")
    func serverAskedWaitIsKept() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, phoneDatabase, _) = try await devices.engine {
            $0.automaticSync = true
            $0.pollInterval = .seconds(3600)
            $0.retryPolicy = RetryPolicy(initialDelay: .seconds(60), maximumDelay: .seconds(60), jitter: 0)
        }
        let (laptop, _, _) = try await devices.engine()
        let events = Collected(phone.events)
        #expect(await waitUntil { await phone.hasCompletedFirstFetch })

        phoneDatabase.inject(.throttled(retryAfter: .seconds(30)), count: 1)
        try await phone.upload(Note(id: "phone", title: "written while throttled"))
        #expect(
            await events.waitUntil {
                $0.contains { if case .retryScheduled = $0 { true } else { false } }
            })
        try await laptop.upload(Note(id: "laptop", title: "written after"))
        try await laptop.sync()
        try await Task.sleep(for: .milliseconds(200))
        #expect(await phone.pendingChangeCount == 1)
        clock.advance(by: .seconds(60))
        #expect(await waitUntil { await phone.pendingChangeCount == 0 })
        await phone.close()
        await laptop.close()
    }

    /// Polls `condition` for up to five seconds of real time.
    private func waitUntil(_ condition: () async -> Bool) async -> Bool {
        for _ in 0..<500 {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return await condition()
    }
}
