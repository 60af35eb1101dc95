import CloudCodable
import Foundation

/// A cloud record database: one of a container's databases as seen by the
/// signed-in user.
///
/// Each requirement is one call of the CloudKit Web Services protocol, with
/// its semantics: `InMemoryCloudDatabase` (in `CumulusTesting`) is the
/// reference implementation, which any other implementation follows.
/// Requests that fail as a whole throw ``CloudError``; requests
/// about several items answer one result per item, in order, each of which
/// may be a ``CloudError`` of its own.
public protocol CloudDatabase: Sendable {
    /// Which of the container's databases this is.
    var scope: DatabaseScope { get }

    /// Whether an `update` may clear fields (``RecordOperation/clearedFields``,
    /// a field whose value is `null` on the wire): Cumulus's dialect, not
    /// CloudKit's. Where it is `false` (the default), an engine that must
    /// clear a field sends a `replace` of the whole record instead, carrying
    /// the fields its model does not know as the server had them.
    var supportsFieldClearing: Bool { get }

    /// `records/modify`: applies the operations in order. With `atomic`, one
    /// failed operation fails them all (the others answer `ATOMIC_ERROR`).
    /// At most 200 operations and one operation per record.
    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws
        -> [RecordResult]

    /// `records/lookup`: the records with these names (`NOT_FOUND` for missing ones).
    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws
        -> [RecordResult]

    /// `records/query`: a page of the records that match the query.
    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?,
        desiredKeys: [String]?
    ) async throws -> QueryResult

    /// `changes/zone`: what changed in each zone since its token, a page each.
    /// A zone's answer is `ZONE_NOT_FOUND` or `CHANGE_TOKEN_EXPIRED` when it
    /// cannot be answered; the other zones still are.
    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>]

    /// `changes/database`: which zones changed since the token.
    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges

    /// `zones/list`: every zone of the database.
    func listZones() async throws -> [RecordZone]

    /// `zones/lookup`: these zones (`ZONE_NOT_FOUND` for missing ones).
    func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult]

    /// `zones/modify`: creates and deletes zones.
    func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult]

    /// `subscriptions/modify`: saves and deletes subscriptions.
    func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult]

    /// `subscriptions/list`: every subscription of the user in this database.
    func listSubscriptions() async throws -> [Subscription]

    /// `subscriptions/lookup`: these subscriptions (`NOT_FOUND` for missing ones).
    func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult]

    /// `records/resolve` (on the public database's path, whatever this
    /// database is): what each share is, as an invitation shows it before
    /// the user accepts. A share the caller may not see answers
    /// `ACCESS_DENIED`; an unknown handle `NOT_FOUND`.
    func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult]

    /// `records/accept` (on the public database's path): makes the caller
    /// an accepted participant of each share, whose zone then appears in
    /// the caller's shared database.
    func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult]

    /// `users/lookup/email` (on the public database's path): the
    /// discoverable users with these email addresses.
    func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity]

    /// `users/lookup/id` (on the public database's path): the discoverable
    /// users with these record names.
    func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity]

    /// `users/discover` (on the public database's path): the discoverable
    /// users any of these lookup infos name.
    func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity]

    /// `users/current`: the signed-in user. Throws `AUTHENTICATION_REQUIRED`
    /// when nobody is signed in.
    func currentUser() async throws -> UserIdentity

    /// `users/current`, with the generation of the credentials it was asked
    /// with, to bind later requests to (``bound(to:)``). By default the
    /// generation is always 0: a database whose account never changes
    /// under it needs no binding.
    func checkAccount() async throws -> AccountCheck

    /// The generation of the credentials requests are sent with now: while
    /// it is that of an earlier ``checkAccount()``, the check still holds
    /// and need not be asked again. `nil` (the default) for a database that
    /// does not count its credentials' changes: every pass asks the server.
    var accountGeneration: UInt64? { get }

    /// This database with every request bound to the account `check`
    /// found: a request made after the credentials changed throws
    /// ``CloudError/Code/accountChanged`` without being sent, so that
    /// nothing checked as one user's is sent as another's. By default the
    /// database itself.
    func bound(to check: AccountCheck) -> any CloudDatabase

    /// The account's status, derived from ``currentUser()``: signed in,
    /// signed out, or unknown while the server cannot be reached.
    func accountStatus() async -> AccountStatus

    /// Notifications of changes on the server (`tokens/create` and the
    /// long poll that follows it): one new stream per call, ending when the
    /// reader stops reading.
    func notifications() -> AsyncStream<CloudNotification>

    /// A stream of ``notifications()`` read by `listener`, which writes with
    /// ``modifyRecords(_:zoneID:atomic:for:)``: where the database can, the
    /// zone changes only those writes made are not notified to it. By
    /// default, ``notifications()``.
    func notifications(for listener: NotificationListener) -> AsyncStream<CloudNotification>

    /// `records/modify` as ``modifyRecords(_:zoneID:atomic:)``, made by the
    /// reader of a stream of ``notifications(for:)``. By default, the same
    /// request naming no one: the stream hears the write.
    func modifyRecords(
        _ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, for listener: NotificationListener
    )
        async throws -> [RecordResult]

    /// Waits until every stream of ``notifications()`` opened so far
    /// listens, and returns whether any had to be waited for: a change made
    /// while it opened may have gone unnotified, so a caller that must not
    /// miss one fetches again. The default returns `false` at once, for
    /// databases whose streams listen as soon as they are returned.
    @discardableResult
    func notificationChannelsOpened() async -> Bool

    /// `assets/upload`: where to send the bytes of an asset for each record
    /// field, one target per request in order. The caller must be allowed
    /// to save each record as it would be saved (its own in the private
    /// database, a `READ_WRITE` share's in the shared database, any record
    /// it may change in the public one); otherwise the whole request throws
    /// (`ACCESS_DENIED`, `AUTHENTICATION_REQUIRED`, `ZONE_NOT_FOUND`).
    func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID) async throws
        -> [AssetUploadTarget]

    /// Sends the file's bytes to `target` (read from the file as they are
    /// sent, never whole into memory) and answers the asset to save in the
    /// target's field: its `fileChecksum`, `size` and `receipt`. Save the
    /// record before the receipt expires. A file over the server's asset
    /// size limit throws `LIMIT_EXCEEDED`; an expired target `EXPIRED`.
    func uploadAsset(contentsOf file: URL, to target: AssetUploadTarget) async throws -> Asset

    /// The bytes of an asset of a fetched record (its ``Asset/downloadURL``),
    /// all of them or `range` (`written..<assetSize` resumes a transfer).
    /// The URL is the credential and expires (`EXPIRED`): fetch the record
    /// again for a fresh one. A range outside the asset throws
    /// `RANGE_NOT_SATISFIABLE`; an asset without a URL `BAD_REQUEST`.
    func downloadAsset(_ asset: Asset, range: Range<Int64>?) async throws -> AssetDownload
}

extension CloudDatabase {
    /// ``notifications()``: this database notifies every write.
    public func notifications(for listener: NotificationListener) -> AsyncStream<CloudNotification> {
        notifications()
    }

    /// ``modifyRecords(_:zoneID:atomic:)``: the listener's stream hears the write.
    public func modifyRecords(
        _ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, for listener: NotificationListener
    ) async throws -> [RecordResult] {
        try await modifyRecords(operations, zoneID: zoneID, atomic: atomic)
    }

    /// Throws ``CloudError/Code/unsupported``: a database without assets.
    public func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID) async throws
        -> [AssetUploadTarget]
    {
        throw CloudError.assetsUnsupported(by: Self.self)
    }

    /// Throws ``CloudError/Code/unsupported``: a database without assets.
    public func uploadAsset(contentsOf file: URL, to target: AssetUploadTarget) async throws -> Asset {
        throw CloudError.assetsUnsupported(by: Self.self)
    }

    /// Throws ``CloudError/Code/unsupported``: a database without assets.
    public func downloadAsset(_ asset: Asset, range: Range<Int64>?) async throws -> AssetDownload {
        throw CloudError.assetsUnsupported(by: Self.self)
    }

    /// Returns `false` at once: streams that listen as soon as they are returned.
    @discardableResult
    public func notificationChannelsOpened() async -> Bool { false }

    /// `users/current` with generation 0.
    public func checkAccount() async throws -> AccountCheck {
        AccountCheck(user: try await currentUser(), generation: 0)
    }

    /// `false`: a field is cleared by replacing the whole record.
    public var supportsFieldClearing: Bool { false }

    /// `nil`: the account is asked for on every pass.
    public var accountGeneration: UInt64? { nil }

    /// The database itself: its requests are not bound to a check.
    public func bound(to check: AccountCheck) -> any CloudDatabase { self }

    /// The status the server's answer to ``currentUser()`` implies.
    public func accountStatus() async -> AccountStatus {
        do {
            _ = try await currentUser()
            return .available
        } catch let error as CloudError {
            return AccountStatus(after: error)
        } catch {
            return .couldNotDetermine
        }
    }
}
