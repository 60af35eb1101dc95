import Cumulus
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
public actor InMemoryCloudServer {
    nonisolated let controls = ServerControls()
    nonisolated let time: ServerTime

    /// The largest record the server stores, in bytes of its fields on the
    /// wire (``WireFormat/encodedSize(ofFields:)``); a larger one is refused
    /// with `BAD_REQUEST`.
    public nonisolated let recordSizeLimit: Int

    var databases: [DatabaseKey: DatabaseState] = [:]
    var subscriptions: [SubscriptionOwner: [String: Subscription]] = [:]
    private var lastIncarnation = 0
    private var lastChangeTag = 0

    /// Creates an empty server.
    ///
    /// - Parameters:
    ///   - clock: The clock of record timestamps and of injected latency;
    ///     pass a ``ManualClock`` to control both.
    ///   - startDate: The date the clock's current reading stands for; record
    ///     timestamps are this date plus the time the clock has moved since.
    ///   - recordSizeLimit: The largest record accepted, 1 MB by default.
    public init(
        clock: some Clock<Duration> = ContinuousClock(), startDate: Date = Date(),
        recordSizeLimit: Int = RecordEncoder.defaultSizeLimit
    ) {
        time = ServerTime(clock: clock, startDate: startDate)
        self.recordSizeLimit = recordSizeLimit
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
        controls.setQuotaExceeded(exceeded, for: user)
    }

    /// Deletes a zone of a user's private database behind the clients'
    /// backs, as another device would: its records go, the database's change
    /// history records the deletion, and the user's handles are notified.
    @discardableResult
    public func deleteZone(_ zoneID: ZoneID, ownedBy user: String) -> ZoneResult {
        applyZoneOperations([.delete(zoneID)], in: .privateDatabase(user: user), user: user)[0]
    }

    /// Makes every sync token of a zone of a user's private database
    /// expired: the next `changes/zone` with one of them answers
    /// `CHANGE_TOKEN_EXPIRED`. Returns `false` when there is no such zone.
    @discardableResult
    public func expireChangeTokens(in zoneID: ZoneID, ownedBy user: String) -> Bool {
        let key = DatabaseKey.privateDatabase(user: user)
        guard let name = ownZoneName(zoneID, user: user), databases[key]?.zones[name] != nil else { return false }
        databases[key]?.zones[name]?.incarnation = makeIncarnation()
        return true
    }

    /// Makes every database sync token of a user's private database expired:
    /// the next `changes/database` with one of them throws `CHANGE_TOKEN_EXPIRED`.
    public func expireDatabaseChangeTokens(ownedBy user: String) {
        let key = DatabaseKey.privateDatabase(user: user)
        var database = takeDatabase(key)
        database.incarnation = makeIncarnation()
        databases[key] = database
    }

    // MARK: Inspection

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
    /// handle (no faults, no latency, no request counted). `user` names the
    /// private or shared database; it is ignored for the public one.
    public func storedRecords(in zoneID: ZoneID, of user: String, scope: DatabaseScope = .private) -> [Record] {
        let key = DatabaseKey(scope: scope, user: user)
        guard let name = ownZoneName(zoneID, user: user), let zone = databases[key]?.zones[name] else { return [] }
        return zone.liveRecords.sorted { $0.recordName < $1.recordName }
    }

    // MARK: Requests

    /// Runs a request's body on the server, as the caller.
    func run<T: Sendable>(
        as caller: Caller, _ body: @Sendable (isolated InMemoryCloudServer, Caller) throws -> T
    ) throws -> T {
        try body(self, caller)
    }

    // MARK: Shared helpers

    func makeIncarnation() -> Int {
        lastIncarnation += 1
        return lastIncarnation
    }

    func makeChangeTag() -> String {
        lastChangeTag += 1
        return String(lastChangeTag, radix: 36)
    }

    /// Takes a database out of `databases`, making it on first use, so that
    /// it can be changed without copying; put it back when done.
    func takeDatabase(_ key: DatabaseKey) -> DatabaseState {
        if let database = databases.removeValue(forKey: key) { return database }
        let scope = key.scope
        var database = DatabaseState(scope: scope, incarnation: makeIncarnation())
        if scope != .shared {
            database.zones[ZoneID.defaultZone.zoneName] = ZoneState(incarnation: makeIncarnation())
            database.logChange(ofZone: ZoneID.defaultZone.zoneName)
        }
        return database
    }

    /// The database, made on first use.
    func database(_ key: DatabaseKey) -> DatabaseState {
        if let database = databases[key] { return database }
        let database = takeDatabase(key)
        databases[key] = database
        return database
    }

    /// The name of the zone `zoneID` designates for `user`: `nil` when it
    /// names another owner. The caller's own zones may be named with no
    /// owner, the user's record name, or CloudKit's `__defaultOwner__`.
    nonisolated func ownZoneName(_ zoneID: ZoneID, user: String) -> String? {
        switch zoneID.ownerRecordName {
        case nil, user, "__defaultOwner__": zoneID.zoneName
        default: nil
        }
    }

    /// The form of zone IDs in answers: the owner is left out for the
    /// caller's own zones, as ``ZoneID`` says.
    nonisolated func canonicalZoneID(_ name: String) -> ZoneID {
        ZoneID(zoneName: name)
    }
}
