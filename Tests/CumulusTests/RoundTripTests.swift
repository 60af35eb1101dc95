import CumulusTesting
import Foundation
import Synchronization
import Testing

@_spi(Testing) @testable import Cumulus

/// Counts the requests an engine makes of an in-memory handle.
struct CountedDatabase: CloudDatabase {
    final class Counts: Sendable {
        let counts = Mutex<[String: Int]>([:])
        func add(_ name: String) { counts.withLock { $0[name, default: 0] += 1 } }
        var snapshot: [String: Int] { counts.withLock { $0 } }
    }

    let base: any CloudDatabase
    let handle: InMemoryCloudDatabase
    let counts: Counts
    /// Whether the notification stream yields what the server sends.
    let notifies: Bool
    /// Whether it leaves out `.databaseChanged`.
    var zonesOnly = false

    init(_ handle: InMemoryCloudDatabase, notifies: Bool = true) {
        base = handle
        self.handle = handle
        counts = Counts()
        self.notifies = notifies
    }

    private init(base: any CloudDatabase, handle: InMemoryCloudDatabase, counts: Counts, notifies: Bool) {
        self.base = base
        self.handle = handle
        self.counts = counts
        self.notifies = notifies
    }

    var scope: DatabaseScope { base.scope }

    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
        counts.add("records/modify")
        return try await base.modifyRecords(operations, zoneID: zoneID, atomic: atomic)
    }

    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws -> [RecordResult] {
        counts.add("records/lookup")
        return try await base.lookupRecords(recordNames, zoneID: zoneID, desiredKeys: desiredKeys)
    }

    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
    ) async throws -> QueryResult {
        counts.add("records/query")
        return try await base.queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: continuationMarker,
            desiredKeys: desiredKeys)
    }

    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        counts.add("changes/zone")
        return try await base.fetchZoneChanges(requests)
    }

    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        counts.add("changes/database")
        return try await base.fetchDatabaseChanges(since: syncToken, resultsLimit: resultsLimit)
    }

    func listZones() async throws -> [RecordZone] { try await base.listZones() }
    func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] { try await base.lookupZones(zoneIDs) }

    func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        counts.add("zones/modify")
        return try await base.modifyZones(operations)
    }

    func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        try await base.modifySubscriptions(operations)
    }

    func listSubscriptions() async throws -> [Subscription] { try await base.listSubscriptions() }

    func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] {
        try await base.lookupSubscriptions(subscriptionIDs)
    }

    func currentUser() async throws -> UserIdentity {
        counts.add("users/current")
        return try await base.currentUser()
    }
    func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { try await base.resolveShares(shares) }
    func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { try await base.acceptShares(shares) }
    func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] {
        try await base.lookupUsers(emailAddresses: emailAddresses)
    }
    func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] {
        try await base.lookupUsers(userRecordNames: userRecordNames)
    }
    func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] {
        try await base.discoverUsers(lookupInfos)
    }

    func checkAccount() async throws -> AccountCheck {
        counts.add("users/current")
        return try await handle.checkAccount()
    }

    var accountGeneration: UInt64? { handle.accountGeneration }

    func bound(to check: AccountCheck) -> any CloudDatabase {
        CountedDatabase(base: handle.bound(to: check), handle: handle, counts: counts, notifies: notifies)
    }

    func notifications() -> AsyncStream<CloudNotification> {
        guard notifies else { return AsyncStream { _ in } }
        guard zonesOnly else { return handle.notifications() }
        let all = handle.notifications()
        return AsyncStream { continuation in
            let task = Task {
                for await notification in all where notification != .databaseChanged {
                    continuation.yield(notification)
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// What an upload and an idle poll cost: requests and journal `fsync`s.
@Suite("Round trips")
struct RoundTripTests {
    func engine(_ devices: Devices, user: String = "alice") async throws -> (SyncEngine<Note>, CountedDatabase) {
        let database = CountedDatabase(devices.server.database(signedInAs: user))
        let engine = try await SyncEngine<Note>(
            database: database, directory: temporaryDirectory("round-trips"),
            configuration: SyncConfiguration(automaticSync: false, retryPolicy: RetryPolicy(jitter: 0)))
        return (engine, database)
    }

    @Test("an idle poll is one request and no fsync: the account check is reused while the credentials stay")
    func idlePoll() async throws {
        let (phone, database) = try await engine(Devices())
        try await phone.sync()
        let before = database.counts.snapshot
        let syncs = phone.journalSyncCount
        try await phone.sync()
        let after = database.counts.snapshot
        #expect(after["users/current"] == before["users/current"])
        #expect(after["changes/zone"] == (before["changes/zone"] ?? 0) + 1)
        #expect(phone.journalSyncCount == syncs)
    }

    @Test("credentials changed since the check are checked again, and the other user is found")
    func changedCredentialsAreChecked() async throws {
        let (phone, database) = try await engine(Devices())
        try await phone.upload(Note(id: "n", title: "alice's"))
        try await phone.sync()
        let before = database.counts.snapshot["users/current"] ?? 0
        database.handle.signIn(as: "bob")
        try await phone.sync()
        #expect((database.counts.snapshot["users/current"] ?? 0) > before)
        #expect(await phone.models.isEmpty, "alice's data is gone")
    }

    @Test("an upload on a synced engine: one records/modify, one fetch, two fsyncs (the change, its answer)")
    func upload() async throws {
        let (phone, database) = try await engine(Devices())
        try await phone.sync()
        let before = database.counts.snapshot
        let syncs = phone.journalSyncCount
        try await phone.upload(Note(id: "n", title: "t"))
        try await phone.sync()
        let after = database.counts.snapshot
        #expect(after["users/current"] == before["users/current"])
        #expect(after["records/modify"] == (before["records/modify"] ?? 0) + 1)
        #expect(after["changes/zone"] == (before["changes/zone"] ?? 0) + 1)
        #expect(phone.journalSyncCount - syncs == 2)
    }

    func hasUpdate(_ title: String) -> ([ModelChange<Note>]) -> Bool {
        { values in
            values.contains {
                if case .updated(let notes) = $0 { notes.contains { $0.title == title } } else { false }
            }
        }
    }

    @Test("an upload's automatic run sends and does not fetch: the notification of the write sets off the fetch")
    func uploadRunDoesNotFetch() async throws {
        let devices = Devices()
        // No notifications: what the upload's own run asks for is all there is.
        let database = CountedDatabase(devices.server.database(signedInAs: "alice"), notifies: false)
        let phone = try await SyncEngine<Note>(
            database: database, directory: temporaryDirectory("upload-run"),
            configuration: SyncConfiguration(
                automaticSync: true, pollInterval: .seconds(3600), retryPolicy: RetryPolicy(jitter: 0),
                clock: ManualClock()))
        try await phone.sync()
        let before = database.counts.snapshot
        let acknowledged = Collected(phone.changes)
        try await phone.upload(Note(id: "n", title: "sent"))
        #expect(await acknowledged.waitUntil(hasUpdate("sent")))
        await phone.close()
        let after = database.counts.snapshot
        #expect(after["records/modify"] == (before["records/modify"] ?? 0) + 1)
        #expect(after["changes/zone"] == before["changes/zone"], "no fetch of its own write")
        #expect(after["users/current"] == before["users/current"])
    }

    @Test("another device's write arriving right after an upload is still fetched")
    func otherWriteAfterOursIsFetched() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine { $0.automaticSync = true }
        let (laptop, _, _) = try await devices.engine()
        try await phone.sync()
        try await laptop.sync()
        let arrivals = Collected(phone.changes)
        try await phone.upload(Note(id: "mine", title: "phone's"))
        try await laptop.upload(Note(id: "theirs", title: "laptop's"))
        try await laptop.sync()
        #expect(await arrivals.waitUntil(hasUpdate("laptop's")))
        #expect(await arrivals.waitUntil(hasUpdate("phone's")))
    }

    @Test("the notification of the device's own write costs one fetch, whether it comes during the send or after")
    func ownWriteNotificationFetchesOnce() async throws {
        let devices = Devices()
        // Its zone's notification only: the database's, handled a moment
        // later, may find the fetch under way (a second fetch, the safe side).
        var database = CountedDatabase(devices.server.database(signedInAs: "alice"))
        database.zonesOnly = true
        let phone = try await SyncEngine<Note>(
            database: database, directory: temporaryDirectory("own-notifications"),
            configuration: SyncConfiguration(
                automaticSync: true, pollInterval: .seconds(3600), retryPolicy: RetryPolicy(jitter: 0),
                clock: ManualClock()))
        try await phone.sync()
        let before = database.counts.snapshot
        let acknowledged = Collected(phone.changes)
        try await phone.upload(Note(id: "n", title: "sent"))
        #expect(await acknowledged.waitUntil(hasUpdate("sent")))
        let fetched = (before["changes/zone"] ?? 0) + 1
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while (database.counts.snapshot["changes/zone"] ?? 0) < fetched, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        // Whatever else the notifications set off happens in this while.
        try await Task.sleep(for: .milliseconds(300))
        await phone.close()
        let after = database.counts.snapshot
        #expect(after["changes/zone"] == fetched)
        #expect(after["records/modify"] == (before["records/modify"] ?? 0) + 1)
        #expect(after["users/current"] == before["users/current"])
    }
}
