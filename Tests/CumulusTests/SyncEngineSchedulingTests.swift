import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

@Suite("SyncEngine scheduling")
struct SyncEngineSchedulingTests {
    @Test("an automatic engine sends on its own, and notifications bring changes to the other device")
    func automatic() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine { $0.automaticSync = true }
        let (laptop, _, _) = try await devices.engine { $0.automaticSync = true }
        let arrivals = Collected(laptop.changes)
        // Let both engines create the zone and subscribe before the edit.
        try await phone.sync()
        try await laptop.sync()
        try await phone.upload(Note(id: "n", title: "pushed"))
        let arrived = await arrivals.waitUntil { values in
            values.contains {
                if case .updated(let notes) = $0 { notes.contains { $0.title == "pushed" } } else { false }
            }
        }
        #expect(arrived)
        #expect(await phone.pendingChangeCount == 0)
    }

    @Test("without notifications, an automatic engine polls on its clock")
    func polling() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, _, _) = try await devices.engine()
        // The laptop's handle gets no notifications: polling is its only news.
        let laptopDatabase = InterposedDatabase(devices.server.database(signedInAs: "alice"), notifies: false)
        let laptop = try await SyncEngine<Note>(
            database: laptopDatabase, directory: temporaryDirectory("polling"),
            configuration: SyncConfiguration(automaticSync: true, pollInterval: .seconds(60), clock: clock))
        let arrivals = Collected(laptop.changes)
        try await phone.upload(Note(id: "n", title: "polled"))
        try await phone.sync()
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(60))
        let arrived = await arrivals.waitUntil { values in
            values.contains {
                if case .updated(let notes) = $0 { notes.contains { $0.title == "polled" } } else { false }
            }
        }
        #expect(arrived)
    }
}
