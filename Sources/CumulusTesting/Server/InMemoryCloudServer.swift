import Cumulus
import CumulusServerCore
import Foundation

/// A whole cloud container in memory: every user's private database, the
/// public database, and the faults a test wants the server to have.
///
/// The server is the reference semantics of `CloudDatabase`: any other
/// implementation behaves as it does. Clients reach it through handles, one
/// per device:
///
/// ```swift
/// let server = InMemoryCloudServer(clock: ManualClock())
/// let phone = server.database(signedInAs: "alice")
/// let laptop = server.database(signedInAs: "alice")   // same user, another device
/// let bob = server.database(signedInAs: "bob")         // another user: another private database
/// server.inject(.throttled(retryAfter: .seconds(10)))  // the next request is throttled
/// ```
///
/// Users need no set-up: a user's databases exist from their first request.
/// The shared database of every user is empty (no zones).
///
/// The rules are the record server's own (`RecordService` of
/// `CumulusServerCore`) over storage in memory: what holds here holds for
/// `cumulus serve`.
///
/// Handles reach the container's ``environment``: `development` by
/// default, whose schema is learned from the first write of each field.
/// A server made for `production` refuses, with `BAD_REQUEST` for the
/// record, every field its schema does not have, as an app's users meet
/// a field that the operator has not deployed. A test teaches development
/// the fields (with a handle on it, or ``learnSchema(from:as:)``), then
/// deploys them:
///
/// ```swift
/// let server = InMemoryCloudServer(environment: .production)
/// let developer = server.database(signedInAs: "developer", environment: .development)
/// _ = try await developer.modifyRecords([RecordOperation(.create, sample)], zoneID: .defaultZone, atomic: false)
/// try await server.deploySchema()                     // production now takes sample's fields
/// let phone = server.database(signedInAs: "alice")    // a user's device, in production
/// ```
public actor InMemoryCloudServer {
    nonisolated let controls = ServerControls()
    nonisolated let time: ServerTime
    nonisolated let storage = InMemoryStorage()
    nonisolated let service: RecordService

    /// The container every handle reaches.
    static let container = "iCloud.cumulus.in-memory"

    /// The environment handles reach unless made for another: `development`
    /// (the schema grows with each write) or `production` (only the
    /// deployed schema is accepted). Each environment holds its own data.
    public nonisolated let environment: CloudEnvironment

    /// The largest record the server stores, in bytes of its fields on the
    /// wire (`WireFormat.encodedSize(ofFields:)`); a larger one is refused
    /// with `BAD_REQUEST`.
    public nonisolated let recordSizeLimit: Int

    /// The largest asset the server stores, in bytes; a larger upload is
    /// refused with `LIMIT_EXCEEDED`.
    public nonisolated var assetSizeLimit: Int64 { service.assetSettings.sizeLimit }

    /// How long an upload's receipt works and an asset no record holds is
    /// kept (until ``collectAssets()``): 24 hours.
    public nonisolated var assetGracePeriod: Duration { service.assetSettings.gracePeriod }

    /// Creates an empty server.
    ///
    /// - Parameters:
    ///   - clock: The clock of record timestamps and of injected latency;
    ///     pass a ``ManualClock`` to control both.
    ///   - startDate: The date the clock's current reading stands for; record
    ///     timestamps are this date plus the time the clock has moved since.
    ///   - recordSizeLimit: The largest record accepted, 1 MB by default.
    ///   - assetSizeLimit: The largest asset accepted, 50 MB (52,428,800 bytes) by default.
    ///   - environment: The environment handles reach by default:
    ///     `development`, or `production` to test what users meet before a
    ///     field is deployed (``deploySchema()``).
    public init(
        clock: some Clock<Duration> = ContinuousClock(), startDate: Date = Date(),
        recordSizeLimit: Int = RecordEncoder.defaultSizeLimit, assetSizeLimit: Int64 = 52_428_800,
        environment: CloudEnvironment = .development
    ) {
        let time = ServerTime(clock: clock, startDate: startDate)
        let controls = controls
        self.time = time
        self.environment = environment
        self.recordSizeLimit = recordSizeLimit
        service = RecordService(
            storage: storage, recordSizeLimit: recordSizeLimit,
            assetSettings: AssetSettings(sizeLimit: assetSizeLimit), now: { time.now() },
            publish: { notice in Self.deliver(notice, to: controls) })
    }

    // MARK: Handles

    /// A new handle on one of the container's databases: a device signed in
    /// as `user`, or signed out for `nil`, in `environment` (`nil`: the
    /// server's ``environment``).
    ///
    /// Each call is a new device; keep the handle for as long as its
    /// notification streams are read. A handle on `development` of a
    /// production server is the developer's: what it writes teaches
    /// development's schema, which ``deploySchema()`` copies to production.
    public nonisolated func database(
        scope: DatabaseScope = .private, signedInAs user: String?, environment: CloudEnvironment? = nil
    ) -> InMemoryCloudDatabase {
        InMemoryCloudDatabase(server: self, scope: scope, signedInAs: user, environment: environment)
    }

    // MARK: Schema

    /// Deploys the `development` schema to `production`, as
    /// `cumulus schema deploy` does: production then accepts every field
    /// development has learned. Returns how many field types production
    /// did not have.
    ///
    /// - Throws: `CloudError` (`BAD_REQUEST`) naming a field that
    ///   production already has with another type; nothing is deployed then.
    @discardableResult
    public func deploySchema() async throws -> Int {
        try await service.deploySchema(container: Self.container)
    }

    /// Teaches the `development` schema the fields of `records`, the way a
    /// developer's device does: saves a copy of each (its type, name and
    /// fields) in the default zone of `user`'s private database in
    /// development, replacing an earlier copy. The server's own
    /// environment is not touched; follow with ``deploySchema()``.
    ///
    /// An engine's records carry a field of its own besides the model's
    /// (its write lineage): to deploy everything an engine writes, let an
    /// engine on a development handle teach it instead.
    ///
    /// - Throws: `CloudError` of the first copy the rules refuse (a field
    ///   whose type development already knows as another).
    public func learnSchema(from records: [Record], as user: String = "developer") async throws {
        let operations = records.map { record in
            RecordOperation(
                .forceReplace,
                Record(recordType: record.recordType, recordName: record.recordName, fields: record.fields))
        }
        let answer = try await service.perform(
            .modifyRecords(operations: operations, zoneID: .defaultZone, atomic: false),
            as: Caller(
                container: Self.container, environment: .development, scope: .private, user: user, anonymous: false))
        guard case .records(let results) = answer else {
            throw CloudError(.internalError, reason: "the rules answered a request with the answer of another")
        }
        if let refused = results.lazy.compactMap(\.error).first { throw refused }
    }

    // MARK: Faults

    /// Makes the next `count` requests from any handle (of the given kinds,
    /// or of any kind) fail with `fault`. Faults queue up: each request meets
    /// at most one, its handle's own (``InMemoryCloudDatabase/inject(_:count:on:)``)
    /// before the server's.
    ///
    /// ```swift
    /// server.inject(.throttled(retryAfter: .seconds(3)), count: 2)
    /// server.inject(.networkFailure(afterApplying: true), on: [.modifyRecords])
    /// ```
    public nonisolated func inject(
        _ fault: InjectedFault, count: Int = 1, on requests: Set<CloudRequestKind>? = nil
    ) {
        controls.inject(fault, count: count, on: requests, handle: nil)
    }

    /// Forgets the faults injected with ``inject(_:count:on:)`` that no
    /// request has met yet.
    public nonisolated func removeInjectedFaults() {
        controls.removeFaults(handle: nil)
    }

    /// Makes every request wait `latency` on the server's clock before the
    /// server sees it (`.zero` for none). A handle's own latency
    /// (``InMemoryCloudDatabase/setLatency(_:)``) takes precedence.
    public nonisolated func setLatency(_ latency: Duration) {
        controls.setLatency(latency, handle: nil)
    }

    /// Fills (or, with `false`, empties) a user's storage: while full, every
    /// record the user saves fails with `QUOTA_EXCEEDED`; deletes still work.
    public nonisolated func setQuotaExceeded(_ exceeded: Bool, forUser user: String) {
        storage.setQuotaExceeded(exceeded, user: user, container: Self.container, environment: environment)
    }

    /// Gives a user an email address by which others find them (user lookup,
    /// invitations by address), or takes it away (`nil`).
    /// `discoverable: false` keeps the address for invitations but out of lookups.
    ///
    /// An address belongs to one user at a time: the first who holds it
    /// keeps it until it is taken from them.
    ///
    /// - Throws: `CloudError`: `BAD_REQUEST` for text that is not an email
    ///   address; `EXISTS` when another user holds it.
    public func setEmailAddress(_ address: String?, discoverable: Bool = true, forUser user: String) async throws {
        _ = try await service.setEmailAddress(
            address, discoverable: discoverable, forUser: user, container: Self.container)
    }

    /// Gives a user the name other users see, or takes it away (`nil`), as
    /// an identity token's name claims or `cumulus user add --display-name`
    /// do on the record server: lookups that may return the user answer it,
    /// the shares the user owns show it to whoever may read them, and the
    /// shares they joined to the owner and the other participants.
    ///
    /// ```swift
    /// try await server.setName(UserNameComponents(givenName: "Alice", familyName: "Example"), forUser: "alice")
    /// ```
    ///
    /// - Throws: `CloudError` (`BAD_REQUEST`) for a part that holds a
    ///   control character or is longer than `UserNames.maximumLength` bytes.
    public func setName(_ name: UserNameComponents?, forUser user: String) async throws {
        _ = try await service.setName(name, forUser: user, container: Self.container)
    }

    /// Deletes a zone of a user's private database behind the clients'
    /// backs, as another device would: its records go, the database's change
    /// history records the deletion, and the user's handles are notified.
    @discardableResult
    public func deleteZone(_ zoneID: ZoneID, ownedBy user: String) async -> ZoneResult {
        await settled {
            try await service.deleteZone(
                zoneID, ownedBy: user, container: Self.container, environment: environment)
        }
    }

    /// Makes every sync token of a zone of a user's private database
    /// expired: the next `changes/zone` with one of them answers
    /// `CHANGE_TOKEN_EXPIRED`. Returns `false` when there is no such zone.
    @discardableResult
    public func expireChangeTokens(in zoneID: ZoneID, ownedBy user: String) async -> Bool {
        await settled {
            try await service.expireChangeTokens(
                in: zoneID, ownedBy: user, container: Self.container, environment: environment)
        }
    }

    /// Makes every database sync token of a user's private database expired:
    /// the next `changes/database` with one of them throws `CHANGE_TOKEN_EXPIRED`.
    public func expireDatabaseChangeTokens(ownedBy user: String) async {
        await settled {
            try await service.expireDatabaseChangeTokens(
                ownedBy: user, container: Self.container, environment: environment)
        }
    }

    /// Moves the server's dates forward by `duration` at once, whatever its
    /// clock: upload URLs, receipts and download URLs expire, and assets no
    /// record holds age toward ``collectAssets()``. Record timestamps jump
    /// too; waits for injected latency do not end sooner.
    public nonisolated func skipTime(_ duration: Duration) {
        time.skip(duration)
    }

    /// Deletes the assets no record has held for longer than
    /// ``assetGracePeriod`` (uploads never saved count from their upload)
    /// and the expired upload URLs and receipts, as a record server does
    /// now and then.
    public func collectAssets() async {
        _ = await settled { try await service.collectAssets() }
    }

    // MARK: Inspection

    /// The number of assets whose bytes the server keeps.
    public func storedAssetCount() async -> Int {
        await settled { try await storage.assetBytes.storedIDs().count }
    }

    /// The number of requests handles have made (of one kind, or of all),
    /// failed ones included.
    public nonisolated func requestCount(of kind: CloudRequestKind? = nil) -> Int {
        controls.requestCount(of: kind)
    }

    /// Starts the counts of ``requestCount(of:)`` again from zero.
    public nonisolated func resetRequestCounts() {
        controls.resetRequestCounts()
    }

    /// The number of notification streams open on all handles; a stream
    /// closes when its reader stops reading or its handle goes away.
    public nonisolated var activeNotificationStreamCount: Int {
        controls.streamCount
    }

    /// The records a zone holds now, by record name, without going through a
    /// handle (no faults, no latency, no request counted). Assets carry
    /// their checksum and size, without a download URL. `user` names the
    /// private or shared database; it is ignored for the public one.
    /// `environment` is the server's ``environment`` unless given.
    public func storedRecords(
        in zoneID: ZoneID, of user: String, scope: DatabaseScope = .private, environment: CloudEnvironment? = nil
    ) async -> [Record] {
        let key = DatabaseKey(
            container: Self.container, environment: environment ?? self.environment, scope: scope, owner: user)
        guard zoneID.namedOwner.map({ $0.isExactly(user) }) ?? true else { return [] }
        let records = await settled {
            try await storage.read { transaction -> [Record] in
                guard let database = try await transaction.database(key),
                    let zone = try await transaction.zones(inDatabase: database.id, named: [zoneID.zoneName]).first
                else { return [] }
                return try await transaction.changes(inZone: zone.id, after: 0, recordTypes: nil, limit: .max)
                    .compactMap { change in
                        if case .record(let record) = change.contents { return record.withoutAssetIDs() }
                        return nil
                    }
            }
        }
        return records.sorted { ExactName($0.recordName) < ExactName($1.recordName) }
    }

    // MARK: Requests

    /// Carries out a request as `user` through the rules, in `scope` of
    /// `environment`; with no user, as an anonymous reader (the API token alone).
    nonisolated func perform(
        _ request: CloudRequest, as user: String?, scope: DatabaseScope, environment: CloudEnvironment
    ) async throws -> CloudResponse {
        try await service.perform(
            request,
            as: Caller(
                container: Self.container, environment: environment, scope: scope, user: user,
                anonymous: user == nil))
    }

    /// Runs an admin control whose storage cannot fail: memory does not.
    private func settled<T: Sendable>(_ body: () async throws -> T) async -> T {
        do {
            return try await body()
        } catch {
            preconditionFailure("Internal inconsistency: an in-memory control failed: \(error)")
        }
    }
}
