import CloudCodable
import CloudProtocol
import Foundation

/// A ``CloudDatabase`` on a server that speaks the CloudKit Web Services
/// protocol: the Cumulus server, or any server of that dialect.
///
/// ```swift
/// let database = RemoteCloudDatabase(
///     configuration: .init(
///         baseURL: URL(string: "https://cloud.example.com")!, container: "iCloud.com.example.notes"),
///     credentials: .user(apiToken: apiToken, webAuthToken: nil))
/// // Later, once the user signed in:
/// database.setCredentials(.user(apiToken: apiToken, webAuthToken: webAuthToken))
/// let engine = try await SyncEngine<Note>(database: database, directory: directory)
/// ```
///
/// With an identity provider instead of web auth tokens, pass
/// ``Credentials/identity(apiToken:token:)`` and an ``IdentityTokenProvider``.
///
/// Each request reads the credentials once, when it starts: a request never
/// mixes two users, whatever ``setCredentials(_:)`` does meanwhile. Failures
/// are ``CloudError``s: the server's error dictionary when it sent one, what
/// the HTTP status says otherwise (a proxy's 502 page is `TRY_AGAIN_LATER`,
/// a 413 without a dictionary is `BAD_REQUEST`), and
/// ``CloudError/Code/networkFailure`` when no answer came back. No token
/// ever appears in an error, a description or a log.
public final class RemoteCloudDatabase: CloudDatabase {
    /// Where the database is and how the client talks to it.
    public let configuration: Configuration
    let session: RemoteSession
    let channels: NotificationChannels
    /// The account generation requests are bound to (``bound(to:)``), if any.
    private let boundGeneration: UInt64?

    /// Creates a client of the database that `configuration` names.
    ///
    /// - Parameters:
    ///   - configuration: Where the database is and how the client talks to it.
    ///   - credentials: Who the requests act for.
    ///   - transport: What sends the HTTP requests; `URLSession` by default.
    public init(
        configuration: Configuration, credentials: Credentials, transport: any CloudTransport = URLSessionTransport()
    ) {
        self.configuration = configuration
        session = RemoteSession(configuration: configuration, transport: transport)
        channels = NotificationChannels(session: session, credentials: credentials)
        boundGeneration = nil
    }

    /// A view of `base` whose requests are bound to `generation`.
    private init(binding base: RemoteCloudDatabase, to generation: UInt64) {
        configuration = base.configuration
        session = base.session
        channels = base.channels
        boundGeneration = generation
    }

    deinit {
        // Only the database itself owns its notification channels, not a bound view of it.
        if boundGeneration == nil { channels.closeAll() }
    }

    /// Which of the container's databases this is.
    public var scope: DatabaseScope { configuration.scope }

    /// What ``Configuration/supportsFieldClearing`` says of the server.
    public var supportsFieldClearing: Bool { configuration.supportsFieldClearing }

    /// The credentials requests are sent with now.
    public var credentials: Credentials { channels.credentials }

    /// Replaces the credentials: to sign in, to sign out (a user with no
    /// web auth token) or to switch user.
    ///
    /// Requests already under way finish with the credentials they started
    /// with. When the account changes (another web auth token or signing
    /// key), every open notification stream yields `.accountChanged` and
    /// reconnects as the new account; a new API token alone changes nothing
    /// else. With ``Credentials/identity(apiToken:token:)``, the identity
    /// token kept is forgotten and the next request asks the provider: set
    /// the credentials again after a sign-out or a switch of user, and the
    /// account changes if the next token's subject differs.
    public func setCredentials(_ credentials: Credentials) {
        channels.setCredentials(credentials)
    }

    /// Sends `request` with the credentials of the moment; a bound view
    /// first checks that they are still those of its account check.
    private func perform(_ request: CloudRequest, headers: [String: String] = [:]) async throws -> CloudResponse {
        try await send(request, as: boundGeneration, headers: headers).response
    }

    /// Sends `request` as the account of `generation` (any for `nil`), and
    /// answers the generation of the credentials it was sent with.
    private func send(_ request: CloudRequest, as generation: UInt64?, headers: [String: String] = [:]) async throws
        -> (response: CloudResponse, generation: UInt64)
    {
        let session = session
        let (response, authorization) = try await channels.send(as: generation, now: session.now) { authorization in
            try await session.perform(request, authorization: authorization, headers: headers)
        }
        channels.requestSucceeded()
        return (response, authorization.generation)
    }

    /// `users/current`, asked with the credentials of the moment, and their
    /// generation.
    public func checkAccount() async throws -> AccountCheck {
        let (response, generation) = try await send(.currentUser, as: nil)
        guard case .user(let user) = response else { throw unexpected(.currentUser) }
        return AccountCheck(user: user, generation: generation)
    }

    /// The generation of the credentials of the moment: it changes with
    /// the account (another web auth token or signing key, an identity
    /// token of another subject, signing in or out), not with a new API
    /// token or a refreshed identity token of the same subject.
    public var accountGeneration: UInt64? { channels.account.generation }

    /// A view of this database whose requests are sent only while the
    /// credentials are those `check` was made with; it shares this
    /// database's connections and notification streams.
    public func bound(to check: AccountCheck) -> any CloudDatabase {
        RemoteCloudDatabase(binding: self, to: check.generation)
    }

    /// `records/modify`: applies the operations in order, one result each.
    public func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws
        -> [RecordResult]
    {
        let request = CloudRequest.modifyRecords(operations: operations, zoneID: zoneID, atomic: atomic)
        guard case .records(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: operations.count, request)
    }

    /// `records/modify` for the reader of a stream of
    /// ``notifications(for:)``: the request names that stream's channel
    /// (once it has one), whose polls then leave out what only it wrote.
    public func modifyRecords(
        _ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, for listener: NotificationListener
    ) async throws -> [RecordResult] {
        let request = CloudRequest.modifyRecords(operations: operations, zoneID: zoneID, atomic: atomic)
        let headers = channels.token(of: listener).map { [CloudRequest.writingChannelHeader: $0] } ?? [:]
        guard case .records(let results) = try await perform(request, headers: headers) else {
            throw unexpected(request)
        }
        return try counted(results, expected: operations.count, request)
    }

    /// `records/lookup`: the records with these names, one result each.
    public func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws
        -> [RecordResult]
    {
        let request = CloudRequest.lookupRecords(recordNames: recordNames, zoneID: zoneID, desiredKeys: desiredKeys)
        guard case .records(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: recordNames.count, request)
    }

    /// `records/query`: a page of the records that match the query.
    public func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?,
        desiredKeys: [String]?
    ) async throws -> QueryResult {
        let request = CloudRequest.queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: continuationMarker,
            desiredKeys: desiredKeys)
        guard case .query(let result) = try await perform(request) else { throw unexpected(request) }
        return result
    }

    /// `changes/zone`: what changed in each zone since its token, one result each.
    public func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        let request = CloudRequest.fetchZoneChanges(requests)
        guard case .zoneChanges(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: requests.count, request)
    }

    /// `changes/database`: which zones changed since the token.
    public func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        let request = CloudRequest.fetchDatabaseChanges(syncToken: syncToken, resultsLimit: resultsLimit)
        guard case .databaseChanges(let changes) = try await perform(request) else { throw unexpected(request) }
        return changes
    }

    /// `zones/list`: every zone of the database.
    public func listZones() async throws -> [RecordZone] {
        guard case .zones(let zones) = try await perform(.listZones) else { throw unexpected(.listZones) }
        return zones
    }

    /// `zones/lookup`: these zones, one result each.
    public func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] {
        let request = CloudRequest.lookupZones(zoneIDs)
        guard case .zoneResults(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: zoneIDs.count, request)
    }

    /// `zones/modify`: creates and deletes zones, one result each.
    public func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        let request = CloudRequest.modifyZones(operations)
        guard case .zoneResults(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: operations.count, request)
    }

    /// `subscriptions/modify`: saves and deletes subscriptions, one result each.
    public func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        let request = CloudRequest.modifySubscriptions(operations)
        guard case .subscriptionResults(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: operations.count, request)
    }

    /// `subscriptions/list`: every subscription of the user in this database.
    public func listSubscriptions() async throws -> [Subscription] {
        guard case .subscriptions(let subscriptions) = try await perform(.listSubscriptions) else {
            throw unexpected(.listSubscriptions)
        }
        return subscriptions
    }

    /// `subscriptions/lookup`: these subscriptions, one result each.
    public func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] {
        let request = CloudRequest.lookupSubscriptions(subscriptionIDs)
        guard case .subscriptionResults(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: subscriptionIDs.count, request)
    }

    /// `users/current`: the signed-in user; `AUTHENTICATION_REQUIRED` when
    /// nobody is signed in.
    public func currentUser() async throws -> UserIdentity {
        guard case .user(let user) = try await perform(.currentUser) else { throw unexpected(.currentUser) }
        return user
    }

    /// `records/resolve`, sent to the public database's path.
    public func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        let request = CloudRequest.resolveShares(shares)
        guard case .shares(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: shares.count, request)
    }

    /// `records/accept`, sent to the public database's path.
    public func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        let request = CloudRequest.acceptShares(shares)
        guard case .shares(let results) = try await perform(request) else { throw unexpected(request) }
        return try counted(results, expected: shares.count, request)
    }

    /// `users/lookup/email`, sent to the public database's path.
    public func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] {
        try await users(.lookupUsersByEmail(emailAddresses))
    }

    /// `users/lookup/id`, sent to the public database's path.
    public func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] {
        try await users(.lookupUsersByID(userRecordNames))
    }

    /// `users/discover`, sent to the public database's path.
    public func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] {
        try await users(.discoverUsers(lookupInfos))
    }

    /// `assets/upload`: one upload target per field, in order.
    public func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID) async throws
        -> [AssetUploadTarget]
    {
        let request = CloudRequest.requestAssetUploads(requests, zoneID: zoneID)
        guard case .assetUploads(let targets) = try await perform(request) else { throw unexpected(request) }
        return try counted(targets, expected: requests.count, request)
    }

    private func users(_ request: CloudRequest) async throws -> [UserIdentity] {
        guard case .users(let users) = try await perform(request) else { throw unexpected(request) }
        return users
    }

    /// The error for an answer of another operation's shape.
    private func unexpected(_ request: CloudRequest) -> CloudError {
        CloudError(.internalError, reason: "the server's answer to \(request.operation.rawValue) has the wrong shape")
    }

    /// `results`, checked to hold one result per item asked about: the
    /// engine pairs them by position.
    private func counted<Element>(_ results: [Element], expected: Int, _ request: CloudRequest) throws -> [Element] {
        guard results.count == expected else {
            throw CloudError(
                .internalError,
                reason: "the server answered \(results.count) results to \(request.operation.rawValue) "
                    + "for \(expected) items")
        }
        return results
    }
}
