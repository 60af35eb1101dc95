import Cumulus
import CumulusServerCore
import Foundation

/// A whole cloud container in memory: every user's private database, the
/// public database, and the faults a test wants the server to have.
///
/// The server is the reference semantics of ``CloudDatabase``: any other
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
/// `cumulus serve`. The container is in the `development` environment, so
/// its schema is learned from the first write of each field.
public actor InMemoryCloudServer {
    nonisolated let controls = ServerControls()
    nonisolated let time: ServerTime
    nonisolated let storage = InMemoryStorage()
    nonisolated let service: RecordService

    /// The container every handle reaches.
    static let container = "iCloud.cumulus.in-memory"
    static let environment = CloudEnvironment.development

    /// The largest record the server stores, in bytes of its fields on the
    /// wire (``WireFormat/encodedSize(ofFields:)``); a larger one is refused
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
    public init(
        clock: some Clock<Duration> = ContinuousClock(), startDate: Date = Date(),
        recordSizeLimit: Int = RecordEncoder.defaultSizeLimit, assetSizeLimit: Int64 = 52_428_800
    ) {
        let time = ServerTime(clock: clock, startDate: startDate)
        let controls = controls
        self.time = time
        self.recordSizeLimit = recordSizeLimit
        service = RecordService(
            storage: storage, recordSizeLimit: recordSizeLimit,
            assetSettings: AssetSettings(sizeLimit: assetSizeLimit), now: { time.now() },
            publish: { notice in Self.deliver(notice, to: controls) })
    }

    // MARK: Handles

    /// A new handle on one of the container's databases: a device signed in
    /// as `user`, or signed out for `nil`.
    ///
    /// Each call is a new device; keep the handle for as long as its
    /// notification streams are read.
    public nonisolated func database(scope: DatabaseScope = .private, signedInAs user: String?)
        -> InMemoryCloudDatabase
    {
        InMemoryCloudDatabase(server: self, scope: scope, signedInAs: user)
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
        storage.setQuotaExceeded(exceeded, user: user, container: Self.container, environment: Self.environment)
    }

    /// Gives a user an email address by which others find them (user lookup,
    /// invitations by address), or takes it away (`nil`).
    /// `discoverable: false` keeps the address for invitations but out of lookups.
    ///
    /// An address belongs to one user at a time: the first who holds it
    /// keeps it until it is taken from them.
    ///
    /// - Throws: ``CloudError``: `BAD_REQUEST` for text that is not an email
    ///   address; `EXISTS` when another user holds it.
    public func setEmailAddress(_ address: String?, discoverable: Bool = true, forUser user: String) async throws {
        _ = try await service.setEmailAddress(
            address, discoverable: discoverable, forUser: user, container: Self.container)
    }

    /// Deletes a zone of a user's private database behind the clients'
    /// backs, as another device would: its records go, the database's change
    /// history records the deletion, and the user's handles are notified.
    @discardableResult
    public func deleteZone(_ zoneID: ZoneID, ownedBy user: String) async -> ZoneResult {
        await settled {
            try await service.deleteZone(
                zoneID, ownedBy: user, container: Self.container, environment: Self.environment)
        }
    }

    /// Makes every sync token of a zone of a user's private database
    /// expired: the next `changes/zone` with one of them answers
    /// `CHANGE_TOKEN_EXPIRED`. Returns `false` when there is no such zone.
    @discardableResult
    public func expireChangeTokens(in zoneID: ZoneID, ownedBy user: String) async -> Bool {
        await settled {
            try await service.expireChangeTokens(
                in: zoneID, ownedBy: user, container: Self.container, environment: Self.environment)
        }
    }

    /// Makes every database sync token of a user's private database expired:
    /// the next `changes/database` with one of them throws `CHANGE_TOKEN_EXPIRED`.
    public func expireDatabaseChangeTokens(ownedBy user: String) async {
        await settled {
            try await service.expireDatabaseChangeTokens(
                ownedBy: user, container: Self.container, environment: Self.environment)
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
    public func storedRecords(in zoneID: ZoneID, of user: String, scope: DatabaseScope = .private) async -> [Record] {
        let key = DatabaseKey(container: Self.container, environment: Self.environment, scope: scope, owner: user)
        guard zoneID.ownerRecordName.map({ $0.isExactly(user) || $0 == "__defaultOwner__" }) ?? true else { return [] }
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

    /// Carries out a request as `user` through the rules, in `scope`; with
    /// no user, as an anonymous reader (the API token alone).
    nonisolated func perform(_ request: CloudRequest, as user: String?, scope: DatabaseScope) async throws
        -> CloudResponse
    {
        try await service.perform(
            request,
            as: Caller(
                container: Self.container, environment: Self.environment, scope: scope, user: user,
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
