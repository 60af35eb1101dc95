import CloudCodable
import CloudProtocol
import Foundation

/// A database that encrypts a model's encrypted fields
/// (``CloudCodable/cloudEncryptedFields``) on their way to the
/// server and decrypts them on their way back, so the server stores and
/// serves ciphertext only.
///
/// A ``SyncEngine`` of a model with encrypted fields puts its database in one
/// (``SyncConfiguration/fieldEncryption``); an app that queries the same
/// database itself goes through one too, which refuses, before sending, a
/// query or a query subscription that names an encrypted field.
///
/// A value this device cannot open (its key is missing, or it does not
/// open) stays sealed in the record it answers, and goes back sealed
/// rather than being encrypted again.
public struct EncryptedFieldsDatabase: CloudDatabase {
    /// The database requests go to.
    public let base: any CloudDatabase
    let fields: EncryptedFields

    /// Encrypts the fields `Model` declares encrypted with `encryption`.
    public init<Model: CloudCodable>(_ base: any CloudDatabase, model: Model.Type, encryption: FieldEncryption) {
        self.init(
            base,
            fields: EncryptedFields(
                recordType: Model.cloudRecordType, names: Model.cloudEncryptedFields, encryption: encryption))
    }

    init(_ base: any CloudDatabase, fields: EncryptedFields) {
        self.base = base
        self.fields = fields
    }

    private func opened(_ record: Record) -> Record { fields.open(record).record }

    private func opened(_ result: RecordResult) -> RecordResult {
        switch result {
        case .record(let record):
            return .record(opened(record))
        case .failure(var error):
            if let record = error.serverRecord { error.serverRecord = opened(record) }
            return .failure(error)
        case .deleted:
            return result
        }
    }

    // MARK: Records

    /// The database's scope.
    public var scope: DatabaseScope { base.scope }
    /// Whether the database clears the fields an `update` names.
    public var supportsFieldClearing: Bool { base.supportsFieldClearing }

    /// Seals the saves' encrypted fields, and opens the records answered.
    public func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws
        -> [RecordResult]
    {
        try await base.modifyRecords(try sealed(operations), zoneID: zoneID, atomic: atomic).map(opened)
    }

    /// Seals the saves' encrypted fields, and opens the records answered;
    /// the listener is passed to ``base``.
    public func modifyRecords(
        _ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, for listener: NotificationListener
    ) async throws -> [RecordResult] {
        try await base.modifyRecords(try sealed(operations), zoneID: zoneID, atomic: atomic, for: listener)
            .map(opened)
    }

    private func sealed(_ operations: [RecordOperation]) throws -> [RecordOperation] {
        try operations.map { operation in
            guard !operation.type.isDelete else { return operation }
            var sealed = operation
            sealed.record = try fields.seal(operation.record)
            return sealed
        }
    }

    /// The records, opened.
    public func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws
        -> [RecordResult]
    {
        try await base.lookupRecords(recordNames, zoneID: zoneID, desiredKeys: desiredKeys).map(opened)
    }

    /// The page, opened; a query naming an encrypted field is refused
    /// before it is sent (``FieldEncryptionError/Code/encryptedFieldInQuery``).
    public func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?,
        desiredKeys: [String]?
    ) async throws -> QueryResult {
        try fields.check(query)
        var result = try await base.queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: continuationMarker,
            desiredKeys: desiredKeys)
        result.records = result.records.map(opened)
        return result
    }

    /// Each zone's changes, opened.
    public func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        try await base.fetchZoneChanges(requests).map { result in
            result.map { changes in
                var changes = changes
                changes.records = changes.records.map(opened)
                return changes
            }
        }
    }

    // MARK: Passed through

    /// Passed to ``base``.
    public func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        try await base.fetchDatabaseChanges(since: syncToken, resultsLimit: resultsLimit)
    }

    /// Passed to ``base``.
    public func listZones() async throws -> [RecordZone] { try await base.listZones() }

    /// Passed to ``base``.
    public func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] {
        try await base.lookupZones(zoneIDs)
    }

    /// Passed to ``base``.
    public func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        try await base.modifyZones(operations)
    }

    /// Passed to ``base``; a query subscription naming an encrypted field is
    /// refused before it is sent.
    public func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        for operation in operations {
            if case .save(let subscription) = operation, case .query(let query, _) = subscription.kind {
                try fields.check(query)
            }
        }
        return try await base.modifySubscriptions(operations)
    }

    /// Passed to ``base``.
    public func listSubscriptions() async throws -> [Subscription] { try await base.listSubscriptions() }

    /// Passed to ``base``.
    public func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] {
        try await base.lookupSubscriptions(subscriptionIDs)
    }

    /// Passed to ``base``.
    public func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        try await base.resolveShares(shares)
    }

    /// Passed to ``base``.
    public func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        try await base.acceptShares(shares)
    }

    /// Passed to ``base``.
    public func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] {
        try await base.lookupUsers(emailAddresses: emailAddresses)
    }

    /// Passed to ``base``.
    public func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] {
        try await base.lookupUsers(userRecordNames: userRecordNames)
    }

    /// Passed to ``base``.
    public func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] {
        try await base.discoverUsers(lookupInfos)
    }

    /// Passed to ``base``.
    public func currentUser() async throws -> UserIdentity { try await base.currentUser() }

    /// Passed to ``base``.
    public func checkAccount() async throws -> AccountCheck { try await base.checkAccount() }

    /// Passed to ``base``.
    public var accountGeneration: UInt64? { base.accountGeneration }

    /// ``base`` bound to `check`, still encrypting.
    public func bound(to check: AccountCheck) -> any CloudDatabase {
        EncryptedFieldsDatabase(base.bound(to: check), fields: fields)
    }

    /// Passed to ``base``.
    public func accountStatus() async -> AccountStatus { await base.accountStatus() }

    /// Passed to ``base``.
    public func notifications() -> AsyncStream<CloudNotification> { base.notifications() }

    /// Passed to ``base``.
    public func notifications(for listener: NotificationListener) -> AsyncStream<CloudNotification> {
        base.notifications(for: listener)
    }

    /// Passed to ``base``.
    public func notificationChannelsOpened() async -> Bool { await base.notificationChannelsOpened() }

    /// Passed to ``base``.
    public func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID) async throws
        -> [AssetUploadTarget]
    {
        try await base.requestAssetUploads(requests, zoneID: zoneID)
    }

    /// Passed to ``base``.
    public func uploadAsset(contentsOf file: URL, to target: AssetUploadTarget) async throws -> Asset {
        try await base.uploadAsset(contentsOf: file, to: target)
    }

    /// Passed to ``base``.
    public func downloadAsset(_ asset: Asset, range: Range<Int64>?) async throws -> AssetDownload {
        try await base.downloadAsset(asset, range: range)
    }
}
