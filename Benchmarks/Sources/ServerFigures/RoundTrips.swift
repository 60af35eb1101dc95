import BenchmarkModels
@_spi(Testing) import Cumulus
import CumulusServer
import Foundation

/// What one upload and an idle poll cost a device: the protocol requests
/// its engine sends (counted by a `CloudDatabase` between the engine and
/// `RemoteCloudDatabase`, over HTTP to the server on SQLite) and the
/// `fsync`s of its journal.
enum RoundTrips {
    /// The figures measured when the goal was set, with the same app
    /// (automatic sync, `RemoteCloudDatabase`, `cumulus serve` on SQLite).
    static let before = (
        upload: "6 (users/current ×3, records/modify, changes/zone ×2), 5 fsyncs",
        poll: "2 (users/current, changes/zone), 1 fsync"
    )

    struct Counts: Sendable {
        var requests: [String: Int]
        var syncs: Int

        var total: Int { requests.values.reduce(0, +) }
        var described: String {
            let parts = requests.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }
            return "\(total) (\(parts.joined(separator: ", "))), \(syncs) fsyncs"
        }
    }

    /// One upload with automatic sync, then `polls` idle polls (totals), on
    /// a fresh engine that synced once before the counting starts.
    ///
    /// With `namingChannel` false the engine's uploads name no channel, as
    /// an engine did before #38 (its own write's notification sets off a fetch).
    ///
    /// The upload's and the idle polls' windows go to standard error (seconds
    /// since 1970), to match a trace of the process's `fsync`s against them.
    static func measure(_ deployment: Deployment, namingChannel: Bool) async throws
        -> (upload: Counts, poll: Counts, polls: Int)
    {
        func now() -> String { String(format: "%.6f", Date().timeIntervalSince1970) }
        let label = namingChannel ? "named" : "unnamed"
        let user = try await deployment.addUser(namingChannel ? "roundtrips" : "roundtrips-unnamed")
        let counting = CountingDatabase(base: deployment.database(user), namingChannel: namingChannel)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cumulus-roundtrips-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // No poll during the upload's count; then polls every half second.
        var engine = try await SyncEngine<Landmark>(
            database: counting, directory: directory,
            configuration: SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600)))
        try await engine.sync()
        // Let the notification channel open and the first runs end.
        try await Task.sleep(for: .seconds(1))

        var changes = engine.changes.makeAsyncIterator()
        let before = counting.snapshot(syncs: engine.journalSyncCount)
        let uploadStart = now()
        var landmark = Landmark.sample(7)
        landmark.name = "round trips"
        try await engine.upload(landmark)
        while let change = await changes.next() {
            if case .updated(let models) = change, models.contains(where: { $0.id == landmark.id }) { break }
        }
        // Whatever the upload sets off (the notification of its own write) happens in this second.
        try await Task.sleep(for: .seconds(1))
        let upload = counting.snapshot(syncs: engine.journalSyncCount).minus(before)
        FileHandle.standardError.write(Data("round trips window \(label) upload \(uploadStart) \(now())\n".utf8))
        await engine.close()

        let pollInterval = Duration.milliseconds(500)
        engine = try await SyncEngine<Landmark>(
            database: counting, directory: directory,
            configuration: SyncConfiguration(automaticSync: true, pollInterval: pollInterval))
        try await Task.sleep(for: .seconds(1))
        let idleStart = counting.snapshot(syncs: engine.journalSyncCount)
        let idleBegan = now()
        let polls = 6
        try await Task.sleep(for: pollInterval * polls)
        let idle = counting.snapshot(syncs: engine.journalSyncCount).minus(idleStart)
        FileHandle.standardError.write(Data("round trips window \(label) idle \(idleBegan) \(now())\n".utf8))
        await engine.close()
        return (upload, idle, polls)
    }
}

/// Forwards every call to `base` and counts the protocol requests by name;
/// a view bound to an account check counts into the same table.
final class CountingDatabase: CloudDatabase, Sendable {
    /// The counts, shared by the database and its bound views.
    final class Table: @unchecked Sendable {
        // Safety: `counts` is only touched under `lock`.
        private let lock = NSLock()
        private var counts: [String: Int] = [:]

        func add(_ name: String) { lock.withLock { counts[name, default: 0] += 1 } }
        var snapshot: [String: Int] { lock.withLock { counts } }
    }

    let remote: RemoteCloudDatabase
    /// `remote`, or a view of it bound to an account check.
    let base: any CloudDatabase
    let table: Table
    /// Whether the engine's uploads name its notification channel: `false`
    /// sends them as a database that knows no listener does.
    let namingChannel: Bool

    init(base: RemoteCloudDatabase, namingChannel: Bool = true) {
        remote = base
        self.base = base
        table = Table()
        self.namingChannel = namingChannel
    }

    private init(remote: RemoteCloudDatabase, bound: any CloudDatabase, table: Table, namingChannel: Bool) {
        self.remote = remote
        base = bound
        self.table = table
        self.namingChannel = namingChannel
    }

    var scope: DatabaseScope { base.scope }

    private func count(_ name: String) { table.add(name) }

    func snapshot(syncs: Int) -> RoundTrips.Counts {
        RoundTrips.Counts(requests: table.snapshot, syncs: syncs)
    }

    func checkAccount() async throws -> AccountCheck {
        count("users/current")
        return try await remote.checkAccount()
    }

    var accountGeneration: UInt64? { remote.accountGeneration }

    func bound(to check: AccountCheck) -> any CloudDatabase {
        CountingDatabase(remote: remote, bound: remote.bound(to: check), table: table, namingChannel: namingChannel)
    }

    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
        count("records/modify")
        return try await base.modifyRecords(operations, zoneID: zoneID, atomic: atomic)
    }

    func modifyRecords(
        _ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, for listener: NotificationListener
    ) async throws -> [RecordResult] {
        guard namingChannel else { return try await modifyRecords(operations, zoneID: zoneID, atomic: atomic) }
        count("records/modify")
        return try await base.modifyRecords(operations, zoneID: zoneID, atomic: atomic, for: listener)
    }

    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws
        -> [RecordResult]
    {
        count("records/lookup")
        return try await base.lookupRecords(recordNames, zoneID: zoneID, desiredKeys: desiredKeys)
    }

    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
    ) async throws -> QueryResult {
        count("records/query")
        return try await base.queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: continuationMarker,
            desiredKeys: desiredKeys)
    }

    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        count("changes/zone")
        return try await base.fetchZoneChanges(requests)
    }

    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        count("changes/database")
        return try await base.fetchDatabaseChanges(since: syncToken, resultsLimit: resultsLimit)
    }

    func listZones() async throws -> [RecordZone] {
        count("zones/list")
        return try await base.listZones()
    }

    func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] {
        count("zones/lookup")
        return try await base.lookupZones(zoneIDs)
    }

    func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        count("zones/modify")
        return try await base.modifyZones(operations)
    }

    func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        count("subscriptions/modify")
        return try await base.modifySubscriptions(operations)
    }

    func listSubscriptions() async throws -> [Subscription] {
        count("subscriptions/list")
        return try await base.listSubscriptions()
    }

    func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] {
        count("subscriptions/lookup")
        return try await base.lookupSubscriptions(subscriptionIDs)
    }

    func currentUser() async throws -> UserIdentity {
        count("users/current")
        return try await base.currentUser()
    }

    func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        count("records/resolve")
        return try await base.resolveShares(shares)
    }

    func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        count("records/accept")
        return try await base.acceptShares(shares)
    }

    func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] {
        count("users/lookup/email")
        return try await base.lookupUsers(emailAddresses: emailAddresses)
    }

    func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] {
        count("users/lookup/id")
        return try await base.lookupUsers(userRecordNames: userRecordNames)
    }

    func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] {
        count("users/discover")
        return try await base.discoverUsers(lookupInfos)
    }

    func notifications() -> AsyncStream<CloudNotification> { remote.notifications() }

    func notifications(for listener: NotificationListener) -> AsyncStream<CloudNotification> {
        namingChannel ? remote.notifications(for: listener) : remote.notifications()
    }

    @discardableResult
    func notificationChannelsOpened() async -> Bool { await remote.notificationChannelsOpened() }
}

extension RoundTrips.Counts {
    func minus(_ earlier: RoundTrips.Counts) -> RoundTrips.Counts {
        var requests = self.requests
        for (name, value) in earlier.requests { requests[name, default: 0] -= value }
        return RoundTrips.Counts(requests: requests.filter { $0.value != 0 }, syncs: syncs - earlier.syncs)
    }
}
