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
        let laptopDatabase = QuietDatabase(devices.server.database(signedInAs: "alice"))
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

/// A database whose notification streams never yield.
struct QuietDatabase: CloudDatabase {
    let base: InMemoryCloudDatabase
    init(_ base: InMemoryCloudDatabase) { self.base = base }
    var scope: DatabaseScope { base.scope }
    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
        try await base.modifyRecords(operations, zoneID: zoneID, atomic: atomic)
    }
    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws -> [RecordResult] {
        try await base.lookupRecords(recordNames, zoneID: zoneID, desiredKeys: desiredKeys)
    }
    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
    ) async throws -> QueryResult {
        try await base.queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: continuationMarker,
            desiredKeys: desiredKeys)
    }
    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        try await base.fetchZoneChanges(requests)
    }
    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        try await base.fetchDatabaseChanges(since: syncToken, resultsLimit: resultsLimit)
    }
    func listZones() async throws -> [RecordZone] { try await base.listZones() }
    func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] { try await base.lookupZones(zoneIDs) }
    func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        try await base.modifyZones(operations)
    }
    func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        try await base.modifySubscriptions(operations)
    }
    func listSubscriptions() async throws -> [Subscription] { try await base.listSubscriptions() }
    func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] {
        try await base.lookupSubscriptions(subscriptionIDs)
    }
    func currentUser() async throws -> UserIdentity { try await base.currentUser() }
    func notifications() -> AsyncStream<CloudNotification> { AsyncStream { _ in } }
}
