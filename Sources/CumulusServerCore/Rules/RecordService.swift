import CloudCodable
import CloudProtocol
import Foundation

/// The protocol's rules, written once: every request of the CloudKit Web
/// Services dialect carried out over a ``ServerStorage``.
///
/// The in-memory server of `CumulusTesting` runs it over memory; the record
/// server runs it over SQLite or PostgreSQL and adds accounts, sign-in and
/// HTTP, but no rule of its own.
///
/// ```swift
/// let service = RecordService(storage: storage, now: { Date() }, publish: { notice in hub.publish(notice) })
/// let caller = Caller(container: "iCloud.com.example.notes", environment: .development, scope: .private, user: "_a1")
/// let response = try await service.perform(.listZones, as: caller)
/// ```
///
/// A request is one storage transaction, answered only after it commits;
/// ``ChangeNotice``s of committed writes go to `publish` before the answer
/// returns.
public final class RecordService: Sendable {
    /// Where the service keeps its data.
    public let storage: any ServerStorage
    /// The largest record accepted, in bytes of its fields on the wire
    /// (`WireFormat.encodedSize(ofFields:)`); a larger one answers `BAD_REQUEST`.
    public let recordSizeLimit: Int

    /// How long a notification channel that no poll uses is kept; its
    /// client then gets `NOT_FOUND` and opens a new one.
    public let channelIdleLimit: Duration

    /// The server's public address, without a trailing slash: a share's
    /// URL is `publicURL/share/<shortGUID>`, an asset's upload URL
    /// `publicURL/assets/1/upload/<ticket>` and its download URL
    /// `publicURL/assets/1/download/<token>/${f}`. `nil` leaves shares without
    /// a URL and builds the other URLs on the listening address (see
    /// ``absoluteURL(_:)``).
    public let publicURL: String?
    /// The address the server listens on, once bound: the base of absolute
    /// URLs when no public URL is configured.
    private let listeningURL = LockedState<String?>(nil)

    /// The limits and lifetimes of assets.
    public let assetSettings: AssetSettings
    /// Makes the SHA-256 of an asset upload.
    let uploadDigest: @Sendable () -> any UploadDigest

    let now: @Sendable () -> Date
    private let publish: @Sendable (ChangeNotice) -> Void
    let waiters = DatabaseWaiters()
    /// How many times the host said a credential may have been taken away
    /// (``credentialsChanged()``): a poll checks its channel's credential
    /// again when this moved on.
    let credentialChanges = LockedState(UInt64(0))
    /// The databases known to exist, so that their first-use check costs no
    /// transaction (databases are never deleted).
    private let knownDatabases = LockedState(Set<DatabaseKey>())
    /// Each environment's schema, loaded on first use and grown by writes in `development`.
    let schemas = LockedState([SchemaKey: Schema]())
    /// The storage's secret of download URLs, read on first use (it never changes).
    let assetSecret = LockedState<[UInt8]?>(nil)

    /// Creates a service over `storage`.
    ///
    /// - Parameters:
    ///   - recordSizeLimit: The largest record accepted, 1 MB by default.
    ///   - channelIdleLimit: How long a notification channel that no poll
    ///     uses is kept, 10 minutes by default.
    ///   - publicURL: The base of share and asset URLs, if any.
    ///   - assetSettings: The limits and lifetimes of assets.
    ///   - uploadDigest: The SHA-256 that hashes asset uploads as they
    ///     arrive: the core's own unless the host has a faster one.
    ///   - now: The date of record timestamps and channel use: the caller's clock.
    ///   - publish: Receives the notice of every committed write that
    ///     changed zones, before the write's answer returns.
    public init(
        storage: any ServerStorage, recordSizeLimit: Int = RecordEncoder.defaultSizeLimit,
        channelIdleLimit: Duration = .seconds(600), publicURL: String? = nil,
        assetSettings: AssetSettings = AssetSettings(),
        uploadDigest: @escaping @Sendable () -> any UploadDigest = { CoreUploadDigest() },
        now: @escaping @Sendable () -> Date, publish: @escaping @Sendable (ChangeNotice) -> Void
    ) {
        self.storage = storage
        self.assetSettings = assetSettings
        self.uploadDigest = uploadDigest
        self.recordSizeLimit = recordSizeLimit
        self.channelIdleLimit = channelIdleLimit
        var base = publicURL
        while base?.hasSuffix("/") == true { base?.removeLast() }
        self.publicURL = base
        self.now = now
        self.publish = publish
    }

    /// Tells the service the address it is reached at when no public URL
    /// is configured (`scheme://host:port`, known once the server is bound).
    /// A client's `Host` header never is: it is the client's to choose.
    public func useListeningAddress(_ url: String) {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        listeningURL.withLock { $0 = base }
    }

    /// The one place the service's URLs are made: `path` (starting with
    /// `/`) on the configured public URL, else on the listening address,
    /// else (a service no HTTP server carries, as the in-memory one) the
    /// path alone. Upload and download URLs and `tokens/create`'s
    /// `webcourierURL` all come from here.
    public func absoluteURL(_ path: String) -> String {
        (publicURL ?? listeningURL.withLock { $0 } ?? "") + path
    }

    // MARK: Requests

    /// Carries out one request for `caller`.
    ///
    /// `tokens/create` opens a channel (``openChannel(for:)``) and answers
    /// the path of its poll.
    ///
    /// - Throws: ``CloudError`` for what the protocol answers with an error
    ///   dictionary; anything else is a failure of the storage.
    public func perform(_ request: CloudRequest, as caller: Caller) async throws -> CloudResponse {
        try await answer(request, as: caller).response()
    }

    /// Carries out one request for `caller`, like ``perform(_:as:)``, and
    /// answers it before it is written: a host that writes the answer's
    /// JSON (``ServiceAnswer/encodedBody()``) writes the stored records of a
    /// page of changes without decoding them.
    ///
    /// - Parameters:
    ///   - credential: The credential the request carries, in the host's
    ///     terms, which a channel that `tokens/create` opens keeps (see
    ///     ``openChannel(for:credential:)``).
    ///   - channel: The token of the notification channel whose reader
    ///     makes this request (a Cumulus addition, the header
    ///     ``CloudRequest/writingChannelHeader``): that channel's polls
    ///     leave out the zone changes only this `records/modify` made.
    ///     Ignored unless it is the caller's own channel on this database.
    public func answer(
        _ request: CloudRequest, as caller: Caller, credential: String? = nil, channel: String? = nil
    ) async throws -> ServiceAnswer {
        try NameRules.check(caller)
        try NameRules.check(request)
        switch request {
        case .currentUser:
            guard let user = caller.user else {
                throw CloudError(.authenticationRequired, reason: "a request without a user has no current user")
            }
            return ServiceAnswer(.user(UserIdentity(userRecordName: user)))
        case .createToken:
            let token = try await openChannel(for: caller, credential: credential)
            return ServiceAnswer(
                .token(
                    NotificationToken(
                        apnsEnvironment: caller.environment.rawValue, apnsToken: token,
                        webcourierURL: absoluteURL("/notifications/1/\(token)"))))
        default:
            break
        }
        var context = try RequestContext(caller, request: request)
        // A token is 64 characters: a longer value names no channel and is not worth hashing.
        if case .modifyRecords = request, let channel, channel.utf8.count <= 128 {
            context.channelHash = ServerSecrets.sha256Hex(channel)
        }
        try await ensureDatabase(context.key)
        let answer = try await presentingAssets(try await answer(request, context: context))
        return try await presentingNames(answer, viewer: caller.user, container: caller.container)
    }

    /// The answer of a request that needs a database.
    private func answer(_ request: CloudRequest, context: RequestContext) async throws -> ServiceAnswer {
        switch request {
        case .modifyRecords(let operations, let zoneID, let atomic):
            return ServiceAnswer(
                .records(try await modifyRecords(operations, zoneID: zoneID, atomic: atomic, context: context)))
        case .lookupRecords(let names, let zoneID, let desiredKeys):
            return ServiceAnswer(
                .records(try await lookupRecords(names, zoneID: zoneID, desiredKeys: desiredKeys, context: context)))
        case .queryRecords(let query, let zoneID, let resultsLimit, let marker, let desiredKeys):
            return ServiceAnswer(
                .query(
                    try await queryRecords(
                        query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: marker,
                        desiredKeys: desiredKeys, context: context)))
        case .fetchZoneChanges(let requests):
            return ServiceAnswer(form: .zoneChanges(try await fetchZoneChanges(requests, context: context)))
        case .fetchDatabaseChanges(let syncToken, let resultsLimit):
            return ServiceAnswer(
                .databaseChanges(
                    try await fetchDatabaseChanges(since: syncToken, resultsLimit: resultsLimit, context: context)))
        case .fetchRecordChanges(let zone):
            // The older endpoint: one zone, whose failure fails the request.
            return ServiceAnswer(form: .recordChanges(try await fetchZoneChanges([zone], context: context)[0].get()))
        case .fetchChangedZones(let syncToken):
            return ServiceAnswer(
                .databaseChanges(
                    try await fetchDatabaseChanges(since: syncToken, resultsLimit: nil, context: context)))
        case .listZones:
            return ServiceAnswer(.zones(try await listZones(context: context)))
        case .lookupZones(let zoneIDs):
            return ServiceAnswer(.zoneResults(try await lookupZones(zoneIDs, context: context)))
        case .modifyZones(let operations):
            return ServiceAnswer(.zoneResults(try await modifyZones(operations, context: context)))
        case .modifySubscriptions(let operations):
            return ServiceAnswer(.subscriptionResults(try await modifySubscriptions(operations, context: context)))
        case .listSubscriptions:
            return ServiceAnswer(.subscriptions(try await listSubscriptions(context: context)))
        case .lookupSubscriptions(let identifiers):
            return ServiceAnswer(.subscriptionResults(try await lookupSubscriptions(identifiers, context: context)))
        case .resolveShares(let lookups):
            return ServiceAnswer(.shares(try await resolveShares(lookups, accepting: false, context: context)))
        case .acceptShares(let lookups):
            return ServiceAnswer(.shares(try await resolveShares(lookups, accepting: true, context: context)))
        case .lookupUsersByEmail(let addresses):
            return ServiceAnswer(
                .users(
                    try await lookupUsers(
                        addresses.map { .email($0) }, context: context, operation: "users/lookup/email")))
        case .lookupUsersByID(let names):
            return ServiceAnswer(
                .users(try await lookupUsers(names.map { .user($0) }, context: context, operation: "users/lookup/id")))
        case .discoverUsers(let infos):
            return ServiceAnswer(.users(try await lookupUsers(infos, context: context, operation: "users/discover")))
        case .requestAssetUploads(let requests, let zoneID):
            return ServiceAnswer(
                .assetUploads(try await requestAssetUploads(requests, zoneID: zoneID, context: context)))
        case .currentUser, .createToken:
            preconditionFailure("Internal inconsistency: answered above")
        }
    }

    /// Creates a database's row and default zone on its first use.
    func ensureDatabase(_ key: DatabaseKey) async throws {
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

    /// Hands the notice of a committed write that changed zones to the host.
    func notify(
        _ key: DatabaseKey, changedZones: [String], subscriptions: [StoredSubscription],
        queryNotifications: [StoredQueryNotification] = []
    ) {
        guard !changedZones.isEmpty else { return }
        waiters.wake(key)
        publish(
            ChangeNotice(
                key: key, changedZones: changedZones, subscriptions: subscriptions,
                queryNotifications: queryNotifications))
    }

    /// Query notifications logged before this are deleted: a live
    /// channel's cursor is never older than its idle limit, and twice that
    /// leaves a margin for clocks that differ between servers.
    func queryNotificationCutoff() -> Int64 {
        ServerTime.elapsed(from: ServerTime.milliseconds(channelIdleLimit) &* 2, to: ServerTime.milliseconds(now()))
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

    /// Deletes a zone of a user's private database behind the clients'
    /// backs, as another device would: its records go, the database's change
    /// history records the deletion, and the user's channels are notified.
    @discardableResult
    public func deleteZone(_ zoneID: ZoneID, ownedBy user: String, container: String, environment: CloudEnvironment)
        async throws -> ZoneResult
    {
        let caller = Caller(container: container, environment: environment, scope: .private, user: user)
        guard case .zoneResults(let results) = try await perform(.modifyZones([.delete(zoneID)]), as: caller),
            let result = results.first
        else { preconditionFailure("Internal inconsistency: zones/modify answers one result per operation") }
        return result
    }
}

/// What a committed write changed, for the notifications of the database's
/// listeners.
public struct ChangeNotice: Sendable {
    /// The database written to.
    public var key: DatabaseKey
    /// The zones whose records or existence changed.
    public var changedZones: [String]
    /// Every subscription of the database, of all its users.
    public var subscriptions: [StoredSubscription]
    /// What the write's changes fired of the database's query subscriptions, in order.
    public var queryNotifications: [StoredQueryNotification]

    /// Creates a notice.
    public init(
        key: DatabaseKey, changedZones: [String], subscriptions: [StoredSubscription],
        queryNotifications: [StoredQueryNotification] = []
    ) {
        self.key = key
        self.changedZones = changedZones
        self.subscriptions = subscriptions
        self.queryNotifications = queryNotifications
    }

    /// What a listener signed in as `user` hears: `.zoneChanged` for each of
    /// the user's zone subscriptions on a changed zone, `.queryChanged` for
    /// each of the user's query notifications, then `.databaseChanged`
    /// (not in the public database, which has no database changes to fetch).
    /// The shared database's zones have owners that zone names alone do not
    /// tell apart: there, only `.databaseChanged`.
    public func notifications(for user: String) -> [CloudNotification] {
        guard key.scope != .shared else { return [.databaseChanged] }
        let watched = subscriptions.filter { $0.user.isExactly(user) }.map(\.subscription)
            .sorted { ExactName($0.subscriptionID) < ExactName($1.subscriptionID) }
        var notifications: [CloudNotification] = []
        for zoneName in changedZones {
            for subscription in watched
            where subscription.kind == .zone && subscription.zoneID.zoneName.isExactly(zoneName) {
                notifications.append(
                    .zoneChanged(ZoneID(zoneName: zoneName), subscriptionID: subscription.subscriptionID))
            }
        }
        for stored in queryNotifications where stored.user.isExactly(user) {
            notifications.append(.queryChanged(stored.notification))
        }
        if key.scope != .public { notifications.append(.databaseChanged) }
        return notifications
    }
}

/// Who asks, in which database.
struct RequestContext: Sendable {
    var key: DatabaseKey
    /// The user, or `nil` for a server-to-server key or an anonymous reader.
    var user: String?
    /// Whether a server-to-server key signed the request.
    var isServerKey: Bool
    /// The hash of the notification channel the request says its writer
    /// listens on, unchecked (see ``RecordModification/writingChannel(_:_:)``).
    var channelHash: String?

    init(_ caller: Caller, request: CloudRequest) throws {
        if caller.isAnonymous {
            guard caller.scope == .public, request.isPublicRead else {
                throw CloudError(
                    .authenticationRequired,
                    reason: "without a user, only reads of the public database are allowed")
            }
        } else if caller.user == nil, caller.scope != .public {
            throw CloudError(
                .authenticationRequired, reason: "a server-to-server key reaches the public database only")
        }
        key = DatabaseKey(
            container: caller.container, environment: caller.environment, scope: caller.scope,
            owner: caller.user ?? "")
        user = caller.user
        isServerKey = caller.user == nil && !caller.isAnonymous
    }

    /// Subscriptions of a server-to-server key are kept under the empty user.
    var subscriber: String { user ?? "" }

    func ownZoneName(_ zoneID: ZoneID) -> String? {
        Self.ownZoneName(zoneID, user: user)
    }

    /// The name of the zone `zoneID` designates for `user`: `nil` when it
    /// names another owner. The caller's own zones may be named with no
    /// owner, the user's record name, or CloudKit's name for the caller
    /// (``ZoneID/callerOwnerName``).
    static func ownZoneName(_ zoneID: ZoneID, user: String?) -> String? {
        guard let owner = zoneID.namedOwner else { return zoneID.zoneName }
        guard let user, owner.isExactly(user) else { return nil }
        return zoneID.zoneName
    }
}

extension CloudRequest {
    /// Whether the request only reads records or zones: what an anonymous
    /// reader of the public database may send.
    var isPublicRead: Bool {
        switch self {
        case .lookupRecords, .queryRecords, .listZones, .lookupZones, .fetchZoneChanges, .fetchRecordChanges: true
        default: false
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
    static func checkItemCount(_ count: Int, of items: String) throws(CloudError) {
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
