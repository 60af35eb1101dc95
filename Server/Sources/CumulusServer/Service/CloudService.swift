import Cumulus
import Foundation

/// The record server's semantics over a ``ServerStorage``: the requests of
/// the CloudKit Web Services protocol carried out exactly as
/// `InMemoryCloudServer` does, the accounts, and the notification channels.
///
/// ```swift
/// let service = try await CloudService.open(path: "/var/lib/cumulus/cumulus.sqlite")
/// let token = try await service.addContainer(named: "iCloud.com.example.notes")
/// ```
///
/// A request is one storage transaction, answered only after it commits.
public final class CloudService: CloudServing {
    /// Where the service keeps its data.
    public let storage: any ServerStorage
    /// The largest record accepted, in bytes of its fields on the wire
    /// (`WireFormat.encodedSize(ofFields:)`); a larger one answers `BAD_REQUEST`.
    public let recordSizeLimit: Int
    /// What tells the other servers on the same storage about this one's
    /// writes, and this one about theirs; `nil` for a lone server.
    public let broadcaster: (any ChangeBroadcasting)?

    let hub: NotificationHub
    /// The databases known to exist, so that their first-use check costs no
    /// transaction (databases are never deleted).
    private let knownDatabases = Locked(Set<DatabaseKey>())
    /// Each environment's schema, loaded on first use and grown by writes.
    let schemas = Locked([SchemaKey: [String: [String: FieldType]]]())

    struct SchemaKey: Hashable, Sendable {
        var container: String
        var environment: CloudEnvironment
    }

    /// Creates a service over `storage`.
    ///
    /// - Parameters:
    ///   - recordSizeLimit: The largest record accepted, 1 MB by default.
    ///   - notificationIdleLimit: How long a notification channel that no
    ///     poll uses is kept (10 minutes by default); its client then gets
    ///     `NOT_FOUND` and opens a new one.
    ///   - broadcaster: For one of several servers on one storage: announces
    ///     this service's writes to the others and wakes this service's
    ///     polls for theirs. The service becomes its receiver and closes it.
    public init(
        storage: any ServerStorage, recordSizeLimit: Int = RecordEncoder.defaultSizeLimit,
        notificationIdleLimit: Duration = .seconds(600), broadcaster: (any ChangeBroadcasting)? = nil
    ) {
        self.storage = storage
        self.recordSizeLimit = recordSizeLimit
        self.broadcaster = broadcaster
        hub = NotificationHub(idleLimit: notificationIdleLimit)
        // Weak: the broadcaster keeps the receiver, and the service keeps the broadcaster.
        broadcaster?.setReceiver { [weak self] event in await self?.receive(event) }
    }

    /// Opens (creating if needed) a service on the SQLite file at `path`.
    public static func open(
        path: String, recordSizeLimit: Int = RecordEncoder.defaultSizeLimit,
        notificationIdleLimit: Duration = .seconds(600)
    ) async throws -> CloudService {
        CloudService(
            storage: try await SQLiteStorage(path: path), recordSizeLimit: recordSizeLimit,
            notificationIdleLimit: notificationIdleLimit)
    }

    /// Closes the storage and the broadcaster, and ends the notification
    /// polls waiting.
    public func close() async throws {
        hub.closeAll()
        await broadcaster?.close()
        try await storage.close()
    }

    // MARK: Requests

    /// Carries out one request for `caller`, with the semantics of
    /// `InMemoryCloudServer`; a server-to-server caller (`user == nil`) may
    /// use the public database only.
    public func perform(_ request: CloudRequest, as caller: Caller) async throws -> CloudResponse {
        switch request {
        case .currentUser:
            guard let user = caller.user else {
                throw CloudError(.authenticationRequired, reason: "a server-to-server key has no user")
            }
            return .user(UserIdentity(userRecordName: user))
        case .createToken:
            let token = try await createNotificationToken(for: caller)
            return .token(
                NotificationToken(
                    apnsEnvironment: caller.environment.rawValue, apnsToken: token,
                    webcourierURL: Self.webcourierPath(forToken: token)))
        default:
            break
        }
        let context = try RequestContext(caller)
        try await ensureDatabase(context.key)
        switch request {
        case .modifyRecords(let operations, let zoneID, let atomic):
            return .records(try await modifyRecords(operations, zoneID: zoneID, atomic: atomic, context: context))
        case .lookupRecords(let names, let zoneID, let desiredKeys):
            return .records(try await lookupRecords(names, zoneID: zoneID, desiredKeys: desiredKeys, context: context))
        case .queryRecords(let query, let zoneID, let resultsLimit, let marker, let desiredKeys):
            return .query(
                try await queryRecords(
                    query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: marker,
                    desiredKeys: desiredKeys, context: context))
        case .fetchZoneChanges(let requests):
            return .zoneChanges(try await fetchZoneChanges(requests, context: context))
        case .fetchDatabaseChanges(let syncToken, let resultsLimit):
            return .databaseChanges(
                try await fetchDatabaseChanges(since: syncToken, resultsLimit: resultsLimit, context: context))
        case .listZones:
            return .zones(try await listZones(context: context))
        case .lookupZones(let zoneIDs):
            return .zoneResults(try await lookupZones(zoneIDs, context: context))
        case .modifyZones(let operations):
            return .zoneResults(try await modifyZones(operations, context: context))
        case .modifySubscriptions(let operations):
            return .subscriptionResults(try await modifySubscriptions(operations, context: context))
        case .listSubscriptions:
            return .subscriptions(try await listSubscriptions(context: context))
        case .lookupSubscriptions(let identifiers):
            return .subscriptionResults(try await lookupSubscriptions(identifiers, context: context))
        case .currentUser, .createToken:
            preconditionFailure("Internal inconsistency: answered above")
        }
    }

    /// The path of a notification channel's long poll, the `webcourierURL`
    /// of `tokens/create` (the HTTP layer may answer with a full URL instead).
    public static func webcourierPath(forToken token: String) -> String {
        "/notifications/\(token)"
    }

    /// Creates a database's row and default zone on its first use.
    private func ensureDatabase(_ key: DatabaseKey) async throws {
        guard !knownDatabases.withLock({ $0.contains(key) }) else { return }
        try await storage.write { transaction in
            var database = try await transaction.createDatabase(
                key, incarnation: ServerChangeToken.makeIncarnation())
            guard key.scope != .shared, database.serial == 0,
                try await transaction.zones(inDatabase: database.id, named: [ZoneID.defaultZone.zoneName]).isEmpty
            else { return }
            _ = try await transaction.createZone(
                named: ZoneID.defaultZone.zoneName, inDatabase: database.id,
                incarnation: ServerChangeToken.makeIncarnation())
            database.serial += 1
            try await transaction.logZoneChanges(
                [ZoneLogEntry(zoneName: ZoneID.defaultZone.zoneName, serial: database.serial, deleted: false)],
                inDatabase: database.id)
            try await transaction.updateDatabase(database)
        }
        knownDatabases.withLock { _ = $0.insert(key) }
    }

    /// Publishes the notifications of a committed write that changed zones,
    /// then announces the write to the other servers.
    func notify(_ key: DatabaseKey, changedZones: [String], subscriptions: [StoredSubscription]) {
        guard !changedZones.isEmpty else { return }
        hub.publish(key: key, changedZones: changedZones, subscriptions: subscriptions)
        broadcaster?.announce(ChangeAnnouncement(key: key, zoneNames: changedZones))
    }

    // MARK: Admin controls

    /// Makes every sync token of a zone of a user's private database
    /// expired. Returns `false` when there is no such zone.
    @discardableResult
    public func expireChangeTokens(
        in zoneID: ZoneID, ownedBy user: String, container: String, environment: CloudEnvironment
    ) async throws -> Bool {
        let key = DatabaseKey(container: container, environment: environment, scope: .private, owner: user)
        guard let name = RequestContext.ownZoneName(zoneID, user: user) else { return false }
        return try await storage.write { transaction in
            guard let database = try await transaction.database(key),
                var zone = try await transaction.zones(inDatabase: database.id, named: [name]).first
            else { return false }
            zone.incarnation = ServerChangeToken.makeIncarnation()
            try await transaction.updateZone(zone)
            return true
        }
    }

    /// Makes every database sync token of a user's private database expired.
    public func expireDatabaseChangeTokens(ownedBy user: String, container: String, environment: CloudEnvironment)
        async throws
    {
        let key = DatabaseKey(container: container, environment: environment, scope: .private, owner: user)
        try await ensureDatabase(key)
        try await storage.write { transaction in
            guard var database = try await transaction.database(key) else { return }
            database.incarnation = ServerChangeToken.makeIncarnation()
            try await transaction.updateDatabase(database)
        }
    }

    /// Fills (or empties) a user's storage: while full, every record the
    /// user saves answers `QUOTA_EXCEEDED`; deletes still work.
    public func setQuotaExceeded(
        _ exceeded: Bool, forUser user: String, container: String, environment: CloudEnvironment
    ) async throws {
        try await storage.write { transaction in
            try await transaction.setQuotaExceeded(
                exceeded, user: user, container: container, environment: environment)
        }
    }
}

/// Who asks, in which database.
struct RequestContext: Sendable {
    var key: DatabaseKey
    /// The user, or `nil` for a server-to-server key.
    var user: String?

    init(_ caller: Caller) throws {
        guard caller.user != nil || caller.scope == .public else {
            throw CloudError(
                .authenticationRequired, reason: "a server-to-server key reaches the public database only")
        }
        key = DatabaseKey(
            container: caller.container, environment: caller.environment, scope: caller.scope,
            owner: caller.user ?? "")
        user = caller.user
    }

    /// Subscriptions of a server-to-server key are kept under the empty user.
    var subscriber: String { user ?? "" }

    func ownZoneName(_ zoneID: ZoneID) -> String? {
        Self.ownZoneName(zoneID, user: user)
    }

    /// The name of the zone `zoneID` designates for `user`: `nil` when it
    /// names another owner. The caller's own zones may be named with no
    /// owner, the user's record name, or CloudKit's `__defaultOwner__`.
    static func ownZoneName(_ zoneID: ZoneID, user: String?) -> String? {
        switch zoneID.ownerRecordName {
        case nil, "__defaultOwner__": zoneID.zoneName
        case let owner? where owner == user: zoneID.zoneName
        default: nil
        }
    }
}

/// The limits of the CloudKit Web Services reference.
enum ServerLimits {
    /// The most operations (or items) in one request.
    static let operationsPerRequest = 200
    /// The most records (or zones) in one answer, and the default page size.
    static let resultsPerResponse = 200

    /// Throws `BAD_REQUEST` for a request over the 200-item limit.
    static func checkItemCount(_ count: Int, of items: String) throws {
        guard count <= operationsPerRequest else {
            throw CloudError(
                .badRequest, reason: "the request has \(count) \(items), over the limit of \(operationsPerRequest)")
        }
    }

    /// The page size a `resultsLimit` asks for: 200 when absent, at most 200.
    static func pageSize(_ resultsLimit: Int?) throws(CloudError) -> Int {
        guard let resultsLimit else { return resultsPerResponse }
        guard resultsLimit > 0 else {
            throw CloudError(.badRequest, reason: "resultsLimit must be at least 1, not \(resultsLimit)")
        }
        return min(resultsLimit, resultsPerResponse)
    }

    static func zoneNotFound(_ zoneID: ZoneID, recordName: String?) -> CloudError {
        CloudError(
            .zoneNotFound, reason: "the zone '\(zoneID.zoneName)' does not exist", recordName: recordName,
            zoneID: zoneID)
    }
}
