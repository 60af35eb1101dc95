import CumulusTesting
import Foundation

@testable import Cumulus

/// An in-memory handle with a test standing between it and the engine: it
/// can run a step before each `modifyRecords` request arrives, and silence
/// the notification stream.
struct InterposedDatabase: CloudDatabase {
    /// The handle, or a view of it bound to an account check.
    private(set) var base: any CloudDatabase
    /// Runs before each `modifyRecords` request reaches the server.
    var beforeModifyRecords: (@Sendable ([RecordOperation], ZoneID) async throws -> Void)?
    /// Runs after each `fetchZoneChanges` request is answered, before the
    /// answer reaches the engine.
    var afterFetchZoneChanges: (@Sendable ([ZoneChangesRequest]) async -> Void)?
    /// Whether the notification stream yields what the server sends.
    var notifies = true
    /// Whether the engine may send field deltas that clear fields: the
    /// handle's answer unless a test says otherwise (a plain CloudKit server).
    var supportsFieldClearing: Bool
    /// Whether `changes/zone` is refused as a plain CloudKit server refuses
    /// it in the public database (`BAD_REQUEST`), without reaching the server.
    var refusesZoneChanges = false
    /// Runs before each `changes/zone` request (before it is refused, too).
    var beforeFetchZoneChanges: (@Sendable ([ZoneChangesRequest]) async -> Void)?
    /// Runs before each `records/query` request reaches the server.
    var beforeQuery: (@Sendable (RecordQuery, _ desiredKeys: [String]?) async -> Void)?
    /// Runs before each chunk of a download reaches the engine, with the
    /// number of chunks of that download before it.
    var beforeDownloadChunk: (@Sendable (Int) async throws -> Void)?

    init(
        _ base: InMemoryCloudDatabase, notifies: Bool = true,
        beforeModifyRecords: (@Sendable ([RecordOperation], ZoneID) async throws -> Void)? = nil
    ) {
        self.base = base
        self.notifies = notifies
        supportsFieldClearing = base.supportsFieldClearing
        self.beforeModifyRecords = beforeModifyRecords
    }

    var scope: DatabaseScope { base.scope }

    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
        try await beforeModifyRecords?(operations, zoneID)
        return try await base.modifyRecords(operations, zoneID: zoneID, atomic: atomic)
    }

    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws -> [RecordResult] {
        try await base.lookupRecords(recordNames, zoneID: zoneID, desiredKeys: desiredKeys)
    }

    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
    ) async throws -> QueryResult {
        await beforeQuery?(query, desiredKeys)
        return try await base.queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: continuationMarker,
            desiredKeys: desiredKeys)
    }

    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        await beforeFetchZoneChanges?(requests)
        if refusesZoneChanges {
            throw CloudError(.badRequest, reason: "changes/zone is not available in the public database")
        }
        let answer = try await base.fetchZoneChanges(requests)
        await afterFetchZoneChanges?(requests)
        return answer
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

    func checkAccount() async throws -> AccountCheck { try await base.checkAccount() }

    func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID) async throws -> [AssetUploadTarget] {
        try await base.requestAssetUploads(requests, zoneID: zoneID)
    }

    func uploadAsset(contentsOf file: URL, to target: AssetUploadTarget) async throws -> Asset {
        try await base.uploadAsset(contentsOf: file, to: target)
    }

    func downloadAsset(_ asset: Asset, range: Range<Int64>?) async throws -> AssetDownload {
        let download = try await base.downloadAsset(asset, range: range)
        guard let hook = beforeDownloadChunk else { return download }
        let counter = ChunkCounter()
        let chunks = download.map { chunk in
            try await hook(counter.next())
            return chunk
        }
        return AssetDownload(assetSize: download.assetSize, range: download.range, chunks: chunks)
    }

    /// The same test in between, before the handle's bound view.
    func bound(to check: AccountCheck) -> any CloudDatabase {
        var bound = self
        bound.base = base.bound(to: check)
        return bound
    }

    func notifications() -> AsyncStream<CloudNotification> {
        notifies ? base.notifications() : AsyncStream { _ in }
    }
}

/// Numbers the chunks of one download.
private final class ChunkCounter: @unchecked Sendable {
    // Safety: `count` is guarded by `lock`.
    private let lock = NSLock()
    private var count = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += 1
        return count - 1
    }
}
