import Cumulus
import CumulusServerCore
import Foundation

/// One device's view of a database of an ``InMemoryCloudServer``: the
/// reference implementation of `CloudDatabase`.
///
/// A handle is the server, a database scope and the account signed in on
/// the device. Several handles signed in as one user are several devices of
/// that user. A test can sign the device out, switch it to another user,
/// or make its requests fail, without touching the others:
///
/// ```swift
/// let server = InMemoryCloudServer()
/// let phone = server.database(signedInAs: "alice")
/// let engine = try await SyncEngine<Note>(database: phone, directory: directory)
/// phone.inject(.networkFailure(afterApplying: true))   // the next answer is lost
/// phone.signIn(as: "bob")                               // the engine hears .accountChanged
/// ```
///
/// Every request (each protocol method but ``notifications()``) first waits
/// the injected latency on the server's clock, then meets the next injected
/// fault if any, then needs a signed-in user (`AUTHENTICATION_REQUIRED`
/// otherwise; signed out, a handle of the public database reads it as the
/// API token alone does); only then does the server carry it out. Sending
/// or reading an asset's bytes needs no account: its URL is the credential.
public final class InMemoryCloudDatabase: CloudDatabase {
    /// The server the handle talks to.
    public let server: InMemoryCloudServer
    /// Which of the container's databases the handle reaches.
    public let scope: DatabaseScope
    /// Which environment of the container the handle reaches: the
    /// server's own (``InMemoryCloudServer/environment``) unless the handle
    /// was made for another. Each environment has its own data and schema.
    public let environment: CloudEnvironment
    /// `true`: the server's core clears the fields an `update` names.
    public var supportsFieldClearing: Bool { true }
    private let handleID: Int
    /// The account generation requests are bound to (``bound(to:)``), if any.
    private let boundGeneration: UInt64?

    /// Creates a handle: a device signed in as `user` (or signed out, for
    /// `nil`) on the server's database of `scope`, in `environment` (`nil`:
    /// the server's). The same as
    /// ``InMemoryCloudServer/database(scope:signedInAs:environment:)``.
    public init(
        server: InMemoryCloudServer, scope: DatabaseScope = .private, signedInAs user: String?,
        environment: CloudEnvironment? = nil
    ) {
        self.server = server
        self.scope = scope
        let environment = environment ?? server.environment
        self.environment = environment
        handleID = server.controls.registerHandle(scope: scope, environment: environment, account: user)
        boundGeneration = nil
    }

    /// A view of `base` whose requests are bound to `generation`.
    private init(binding base: InMemoryCloudDatabase, to generation: UInt64) {
        server = base.server
        scope = base.scope
        environment = base.environment
        handleID = base.handleID
        boundGeneration = generation
    }

    deinit {
        // Only the handle itself owns its registration, not a bound view of it.
        if boundGeneration == nil { server.controls.removeHandle(handleID) }
    }

    // MARK: Account

    /// The user signed in on this device, or `nil` when signed out.
    public var signedInUser: String? {
        server.controls.account(of: handleID)
    }

    /// Signs the device out: requests then throw `AUTHENTICATION_REQUIRED`
    /// and the handle's notification streams hear `.accountChanged`.
    public func signOut() {
        server.controls.setAccount(nil, of: handleID)
    }

    /// Signs `user` in on the device, replacing whoever was: requests then
    /// reach `user`'s databases, and the handle's notification streams hear
    /// `.accountChanged` (unless `user` was already signed in).
    public func signIn(as user: String) {
        server.controls.setAccount(user, of: handleID)
    }

    // MARK: Faults

    /// Makes this handle's next `count` requests (of the given kinds, or of
    /// any kind) fail with `fault`. A handle's own faults come before the
    /// server's (``InMemoryCloudServer/inject(_:count:on:)``).
    public func inject(_ fault: InjectedFault, count: Int = 1, on requests: Set<CloudRequestKind>? = nil) {
        server.controls.inject(fault, count: count, on: requests, handle: handleID)
    }

    /// Forgets the faults injected on this handle that no request has met yet.
    public func removeInjectedFaults() {
        server.controls.removeFaults(handle: handleID)
    }

    /// Makes each of this handle's requests wait `latency` on the server's
    /// clock; `nil` goes back to the server's latency
    /// (``InMemoryCloudServer/setLatency(_:)``).
    public func setLatency(_ latency: Duration?) {
        server.controls.setLatency(latency, handle: handleID)
    }

    // MARK: Requests

    /// Carries out a request the way the protocol says: latency, fault,
    /// authentication, then the server's work (and a fault that comes after it).
    private func perform(_ kind: CloudRequestKind, _ request: CloudRequest) async throws -> CloudResponse {
        let latency = server.controls.beginRequest(kind, handle: handleID)
        if latency > .zero { try await server.time.sleep(for: latency) }
        let fault = server.controls.takeFault(for: kind, handle: handleID)
        if let fault, !fault.afterApplying { throw fault.error }
        let account = server.controls.accountAndGeneration(of: handleID)
        if let boundGeneration, boundGeneration != account.generation {
            throw CloudError(
                .accountChanged, reason: "the device's account changed after it was checked; nothing was sent")
        }
        let scope = request.operation.fixedScope ?? scope
        // Signed out, a device reads the public database as the API token alone does.
        let user = account.account
        guard user != nil || scope == .public else {
            throw CloudError(.authenticationRequired, reason: "no user is signed in")
        }
        guard let fault else {
            return try await server.perform(request, as: user, scope: scope, environment: environment)
        }
        _ = try? await server.perform(request, as: user, scope: scope, environment: environment)
        throw fault.error
    }

    /// `records/modify`: applies the operations in order, as the CloudKit
    /// Web Services reference says, with these choices where it is silent:
    ///
    /// - More than 200 operations, or two operations on one record, throw
    ///   `BAD_REQUEST` and change nothing.
    /// - A missing zone answers `ZONE_NOT_FOUND` for every record.
    /// - `atomic` has no effect in the default zone (atomic commits need a
    ///   custom zone); in a custom zone one failure makes the others answer
    ///   `ATOMIC_ERROR` and nothing is applied.
    /// - `create` of an existing record answers `EXISTS` with the server's
    ///   record in `CloudError.serverRecord`; `update`, `replace` and
    ///   `delete` with a missing or stale change tag answer `CONFLICT` with
    ///   it; `update`, `replace`, `delete` and `forceDelete` of a missing
    ///   record answer `NOT_FOUND`.
    /// - A record whose fields exceed ``InMemoryCloudServer/recordSizeLimit``
    ///   answers `BAD_REQUEST`; so do a record whose zone is not the request's
    ///   and a save that changes a record's type. A `create` with an empty
    ///   record name gets a UUID.
    /// - In `production` (``environment``) a field the deployed schema does
    ///   not have answers `BAD_REQUEST` for its record
    ///   (``InMemoryCloudServer/deploySchema()``); `development` learns it.
    /// - In the public database only a record's creator may change it
    ///   (`ACCESS_DENIED`).
    /// - `VALIDATE` references must point at records that exist once the
    ///   request is applied (`VALIDATING_REFERENCE_ERROR`); deleting a record
    ///   deletes the records of the zone that refer to it with `DELETE_SELF`.
    public func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws
        -> [RecordResult]
    {
        guard
            case .records(let results) = try await perform(
                .modifyRecords, .modifyRecords(operations: operations, zoneID: zoneID, atomic: atomic))
        else { throw Self.unexpected() }
        return results
    }

    /// `records/lookup`: the records by name, `NOT_FOUND` for missing ones and
    /// `ZONE_NOT_FOUND` for all when the zone is missing; more than 200 names
    /// throw `BAD_REQUEST`.
    public func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws
        -> [RecordResult]
    {
        guard
            case .records(let results) = try await perform(
                .lookupRecords, .lookupRecords(recordNames: recordNames, zoneID: zoneID, desiredKeys: desiredKeys))
        else { throw Self.unexpected() }
        return results
    }

    /// `records/query`: a page of at most `resultsLimit` (default and
    /// maximum 200) matching records. A missing zone throws `ZONE_NOT_FOUND`;
    /// a comparator that cannot take the filter's value, a bad marker or a
    /// `resultsLimit` below 1 throw `BAD_REQUEST`. The marker is the position
    /// of the next page, so writes between pages may shift the results.
    public func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?,
        desiredKeys: [String]?
    ) async throws -> QueryResult {
        let request = CloudRequest.queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: continuationMarker,
            desiredKeys: desiredKeys)
        guard case .query(let result) = try await perform(.queryRecords, request) else { throw Self.unexpected() }
        return result
    }

    /// `changes/zone`: for each zone, the latest state of every record that
    /// changed since the token (deleted ones as `.deleted`; tombstones are
    /// kept for as long as the zone lives), oldest change first, at most
    /// `resultsLimit` (default and maximum 200) per page.
    ///
    /// A zone answers `ZONE_NOT_FOUND` when missing, `CHANGE_TOKEN_EXPIRED`
    /// for a token of an earlier incarnation of the zone (deleted and
    /// created again, or expired with ``InMemoryCloudServer/expireChangeTokens(in:ownedBy:)``),
    /// and `BAD_REQUEST` for a token that is not a zone token or a
    /// `resultsLimit` below 1. In the public database (a Cumulus addition)
    /// the default zone has the same feed, readable signed out too.
    public func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        guard case .zoneChanges(let results) = try await perform(.fetchZoneChanges, .fetchZoneChanges(requests)) else {
            throw Self.unexpected()
        }
        return results
    }

    /// `changes/database`: the zones created, changed or deleted since the
    /// token, each once in its latest state. A fresh database reports its
    /// default zone. A bad token throws `BAD_REQUEST`, an expired one
    /// `CHANGE_TOKEN_EXPIRED`; the public database throws `BAD_REQUEST`.
    public func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws
        -> DatabaseChanges
    {
        let request = CloudRequest.fetchDatabaseChanges(syncToken: syncToken, resultsLimit: resultsLimit)
        guard case .databaseChanges(let changes) = try await perform(.fetchDatabaseChanges, request) else {
            throw Self.unexpected()
        }
        return changes
    }

    /// `zones/list`: the default zone first, then the others by name.
    public func listZones() async throws -> [RecordZone] {
        guard case .zones(let zones) = try await perform(.listZones, .listZones) else { throw Self.unexpected() }
        return zones
    }

    /// `zones/lookup`: `ZONE_NOT_FOUND` for missing zones.
    public func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] {
        guard case .zoneResults(let results) = try await perform(.lookupZones, .lookupZones(zoneIDs)) else {
            throw Self.unexpected()
        }
        return results
    }

    /// `zones/modify`: creating an existing zone succeeds and changes
    /// nothing; deleting one removes its records and is recorded in the
    /// database's changes. Deleting the default zone answers `BAD_REQUEST`,
    /// deleting a missing zone `ZONE_NOT_FOUND`; creating zones works only in
    /// the private database (`BAD_REQUEST` elsewhere). Two operations on one
    /// zone throw `BAD_REQUEST`.
    public func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        guard case .zoneResults(let results) = try await perform(.modifyZones, .modifyZones(operations)) else {
            throw Self.unexpected()
        }
        return results
    }

    /// `subscriptions/modify`: saving creates or replaces (`ZONE_NOT_FOUND`
    /// for a missing zone); deleting a missing subscription answers `NOT_FOUND`.
    /// Subscriptions belong to the user, not to the device.
    public func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        guard
            case .subscriptionResults(let results) = try await perform(
                .modifySubscriptions, .modifySubscriptions(operations))
        else {
            throw Self.unexpected()
        }
        return results
    }

    /// `subscriptions/list`: the user's subscriptions in this database, by identifier.
    public func listSubscriptions() async throws -> [Subscription] {
        guard case .subscriptions(let subscriptions) = try await perform(.listSubscriptions, .listSubscriptions) else {
            throw Self.unexpected()
        }
        return subscriptions
    }

    /// `subscriptions/lookup`: `NOT_FOUND` for missing subscriptions.
    public func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] {
        guard
            case .subscriptionResults(let results) = try await perform(
                .lookupSubscriptions, .lookupSubscriptions(subscriptionIDs))
        else {
            throw Self.unexpected()
        }
        return results
    }

    /// `records/resolve`: each share as an invitation shows it.
    public func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        guard case .shares(let results) = try await perform(.resolveShares, .resolveShares(shares)) else {
            throw Self.unexpected()
        }
        return results
    }

    /// `records/accept`: makes the signed-in user an accepted participant.
    public func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] {
        guard case .shares(let results) = try await perform(.acceptShares, .acceptShares(shares)) else {
            throw Self.unexpected()
        }
        return results
    }

    /// `users/lookup/email`: the discoverable users with these addresses.
    public func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] {
        try await users(.lookupUsers, .lookupUsersByEmail(emailAddresses))
    }

    /// `users/lookup/id`: the discoverable users with these record names.
    public func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] {
        try await users(.lookupUsers, .lookupUsersByID(userRecordNames))
    }

    /// `users/discover`: the discoverable users these lookup infos name.
    public func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] {
        try await users(.lookupUsers, .discoverUsers(lookupInfos))
    }

    private func users(_ kind: CloudRequestKind, _ request: CloudRequest) async throws -> [UserIdentity] {
        guard case .users(let users) = try await perform(kind, request) else { throw Self.unexpected() }
        return users
    }

    /// `users/current`: the signed-in user; `AUTHENTICATION_REQUIRED` when
    /// the device is signed out.
    public func currentUser() async throws -> UserIdentity {
        guard case .user(let user) = try await perform(.currentUser, .currentUser) else { throw Self.unexpected() }
        return user
    }

    /// `users/current`, with the generation of the device's account (each
    /// sign-in, sign-out or switch is a new one) when it was answered.
    public func checkAccount() async throws -> AccountCheck {
        let generation = server.controls.accountAndGeneration(of: handleID).generation
        let user = try await bound(generation).currentUser()
        return AccountCheck(user: user, generation: generation)
    }

    /// The generation of the device's account now (each sign-in, sign-out
    /// or switch is a new one).
    public var accountGeneration: UInt64? { server.controls.accountAndGeneration(of: handleID).generation }

    /// A view of this handle whose requests are sent only while the
    /// device's account is the one `check` found.
    public func bound(to check: AccountCheck) -> any CloudDatabase {
        bound(check.generation)
    }

    private func bound(_ generation: UInt64) -> InMemoryCloudDatabase {
        InMemoryCloudDatabase(binding: self, to: generation)
    }

    /// A new stream of the server's notifications to this device.
    ///
    /// After each write that changes a zone of this database (records
    /// saved or deleted, zones created or deleted, by any device of the
    /// user, this one included), the stream yields `.zoneChanged` for each
    /// of the user's subscriptions on the zone, then `.databaseChanged`
    /// (private and shared databases only). It yields `.accountChanged` when
    /// the device signs out or switches user. Notifications are in the
    /// stream before the write's answer returns. The stream ends when the
    /// handle goes away and is dropped from the server when its reader stops.
    public func notifications() -> AsyncStream<CloudNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: CloudNotification.self)
        let controls = server.controls
        let handleID = handleID
        guard let streamID = controls.addStream(continuation, to: handleID) else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { _ in controls.removeStream(streamID, from: handleID) }
        return stream
    }

    // MARK: Assets

    /// `assets/upload`: an upload target per field, for records the
    /// signed-in user may save (`ACCESS_DENIED` otherwise). The targets'
    /// URLs are paths (`/assets/1/upload/<ticket>`): the in-memory server
    /// has no address.
    public func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID) async throws
        -> [AssetUploadTarget]
    {
        guard
            case .assetUploads(let targets) = try await perform(
                .requestAssetUploads, .requestAssetUploads(requests, zoneID: zoneID))
        else { throw Self.unexpected() }
        return targets
    }

    /// Sends the file's bytes, a chunk at a time, to the target's upload URL.
    /// The URL is the credential: a signed-out device may use it too.
    public func uploadAsset(contentsOf file: URL, to target: AssetUploadTarget) async throws -> Asset {
        let ticket = try Self.component(after: "/assets/1/upload/", in: target.url, what: "upload URL")
        return try await transfer(.uploadAsset) {
            try await server.service.receiveAsset(
                ticket: ticket, contentLength: try FileChunks.size(of: file), chunks: FileChunks(file: file))
        }
    }

    /// The bytes of a fetched asset, from its download URL (the credential:
    /// a signed-out device may use it too).
    public func downloadAsset(_ asset: Asset, range: Range<Int64>?) async throws -> AssetDownload {
        guard let url = asset.downloadURL else {
            throw CloudError(.badRequest, reason: "the asset has no download URL; fetch its record first")
        }
        let token = try Self.component(after: "/assets/1/download/", in: url, what: "download URL")
        return try await transfer(.downloadAsset) {
            try await server.service.openAssetDownload(token: token, range: range)
        }
    }

    /// An asset transfer as the protocol meets it: latency and faults, but
    /// no account (the URL is the credential).
    private func transfer<T: Sendable>(_ kind: CloudRequestKind, _ body: () async throws -> T) async throws -> T {
        let latency = server.controls.beginRequest(kind, handle: handleID)
        if latency > .zero { try await server.time.sleep(for: latency) }
        let fault = server.controls.takeFault(for: kind, handle: handleID)
        if let fault, !fault.afterApplying { throw fault.error }
        guard let fault else { return try await body() }
        _ = try? await body()
        throw fault.error
    }

    /// The path component of an asset URL after `prefix`.
    private static func component(after prefix: String, in url: String, what: String) throws -> String {
        guard let range = url.range(of: prefix) else {
            throw CloudError(.badRequest, reason: "'\(url)' is not an asset \(what) of this server")
        }
        let rest = url[range.upperBound...]
        return String(rest.prefix { $0 != "/" && $0 != "?" })
    }

    private static func unexpected() -> CloudError {
        CloudError(.internalError, reason: "the rules answered a request with the answer of another")
    }
}
