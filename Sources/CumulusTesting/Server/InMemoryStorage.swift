import Cumulus
import CumulusServerCore

/// The record rules' storage in memory: what ``InMemoryCloudServer`` runs
/// `RecordService` over.
///
/// Transactions run one at a time. Each write keeps an undo log, so a body
/// that throws leaves nothing behind, as a rolled-back SQL transaction does.
final class InMemoryStorage: ServerStorage {
    private let state = LockedState(MemoryState())
    private let gate = AsyncLock()
    /// The bytes of assets, outside the transactions as files are.
    let assetBytes: any AssetByteStore = MemoryAssetBytes()

    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T) async throws -> T {
        try await run(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T) async throws -> T {
        try await run(body)
    }

    func close() async throws {}

    private func run<T: Sendable>(_ body: @Sendable (any StorageTransaction) async throws -> T) async throws -> T {
        try await gate.withLock {
            let transaction = MemoryTransaction(state: state)
            do {
                return try await body(transaction)
            } catch {
                transaction.rollBack()
                throw error
            }
        }
    }

    /// Fills or empties a user's storage at once, outside any transaction:
    /// the in-memory server's control is synchronous.
    func setQuotaExceeded(_ exceeded: Bool, user: String, container: String, environment: CloudEnvironment) {
        state.withLock { state in
            let key = QuotaKey(container: ExactName(container), environment: environment, user: ExactName(user))
            if exceeded { state.quotas.insert(key) } else { state.quotas.remove(key) }
        }
    }
}

struct QuotaKey: Hashable, Sendable {
    var container: ExactName
    var environment: CloudEnvironment
    var user: ExactName
}

struct IdentityKey: Hashable, Sendable {
    var issuer: ExactName
    var subject: ExactName
}

struct SchemaID: Hashable, Sendable {
    var container: ExactName
    var environment: CloudEnvironment
}

struct ZoneLogKey: Hashable, Sendable {
    var owner: ExactName
    var zoneName: ExactName
}

struct SubscriptionKey: Hashable, Sendable {
    var user: ExactName
    var identifier: ExactName
}

/// A zone's rows, with the indexes the storage protocol reads by.
struct ZoneRows: Sendable {
    var zone: StoredZone
    var records: [ExactName: StoredRecord] = [:]
    /// The record whose latest change has each serial: a page of changes
    /// walks serials in order instead of sorting every row.
    var namesBySerial: [Int64: ExactName] = [:]
    /// The records that refer to each record with `DELETE_SELF`.
    var referrers: [ExactName: Set<ExactName>] = [:]
    /// The live records whose parent is each record.
    var children: [ExactName: Set<ExactName>] = [:]
    /// The zone's shares, by record name.
    var shares: [ExactName: StoredShare] = [:]

    /// Replaces the row of `name` (or removes it, for `nil`), keeping the indexes.
    mutating func put(_ row: StoredRecord?, named name: ExactName) {
        if let old = records[name] {
            namesBySerial[old.serial] = nil
            for target in old.deleteSelfTargets { referrers[ExactName(target)]?.remove(name) }
            if let parent = old.parent { children[ExactName(parent)]?.remove(name) }
        }
        records[name] = row
        guard let row else { return }
        namesBySerial[row.serial] = name
        for target in row.deleteSelfTargets { referrers[ExactName(target), default: []].insert(name) }
        if let parent = row.parent, row.record != nil { children[ExactName(parent), default: []].insert(name) }
    }
}

/// Everything the in-memory storage holds.
struct MemoryState: Sendable {
    var lastID: Int64 = 0
    var databases: [DatabaseKey: StoredDatabase] = [:]
    var databaseKeys: [Int64: DatabaseKey] = [:]
    /// Each database's zones, by name, as zone ids.
    var zoneIDs: [Int64: [ExactName: Int64]] = [:]
    var zones: [Int64: ZoneRows] = [:]
    var zoneLogs: [Int64: [ZoneLogKey: ZoneLogEntry]] = [:]
    /// Where each share lives: shortGUID → zone id.
    var shareZones: [ExactName: Int64] = [:]
    /// Each container's users' email addresses and whether they may be found.
    var userEmails: [ExactName: [ExactName: (emailAddress: String?, discoverable: Bool)]] = [:]
    var subscriptions: [Int64: [SubscriptionKey: StoredSubscription]] = [:]
    /// Each database's query notifications, in the order logged.
    var queryNotifications: [Int64: [StoredQueryNotification]] = [:]
    var containers: [ExactName: String] = [:]
    /// Each container's users: name → (record name, token hash).
    var serverKeys: [ExactName: [ExactName: String]] = [:]
    /// Each container's identity issuers, by issuer.
    var identityIssuers: [ExactName: [ExactName: StoredIdentityIssuer]] = [:]
    /// Each container's identities: (issuer, subject) → user record name.
    var identities: [ExactName: [IdentityKey: String]] = [:]
    /// Each container's users' names.
    var userNames: [ExactName: [ExactName: UserNameComponents]] = [:]
    /// Each container's blocked identities: (issuer, subject) → when blocked.
    var blockedIdentities: [ExactName: [IdentityKey: Int64]] = [:]
    var quotas: Set<QuotaKey> = []
    var fieldTypes: [SchemaID: [StoredFieldType]] = [:]
    var channels: [String: StoredChannel] = [:]
    var storeIdentity: String?
    var assetSecret: [UInt8]?
    var uploadTickets: [ExactName: StoredUploadTicket] = [:]
    var assets: [ExactName: StoredAsset] = [:]
    var assetReceipts: [ExactName: StoredAssetReceipt] = [:]

    mutating func makeID() -> Int64 {
        lastID += 1
        return lastID
    }
}

/// One transaction over the in-memory state, with its undo log.
private final class MemoryTransaction: StorageTransaction, @unchecked Sendable {
    // Safety: the storage runs one transaction at a time (its gate), and a
    // transaction's body calls it from one task; `undo` is touched only there.
    private let state: LockedState<MemoryState>
    private var undo: [@Sendable (inout MemoryState) -> Void] = []

    init(state: LockedState<MemoryState>) {
        self.state = state
    }

    func rollBack() {
        let steps = undo
        undo = []
        state.withLock { state in
            for step in steps.reversed() { step(&state) }
        }
    }

    private func read<T>(_ body: (MemoryState) throws -> T) rethrows -> T {
        try state.withLock { try body($0) }
    }

    /// Changes the state and logs how to take the change back.
    private func change(
        _ body: (inout MemoryState) throws -> (@Sendable (inout MemoryState) -> Void)?
    ) rethrows {
        let step = try state.withLock { try body(&$0) }
        if let step { undo.append(step) }
    }

    private func zone(_ id: Int64) throws -> ZoneRows {
        guard let zone = read({ $0.zones[id] }) else {
            throw CloudError(.internalError, reason: "the in-memory storage has no zone \(id)")
        }
        return zone
    }

    // MARK: Databases and zones

    func database(_ key: DatabaseKey) async throws -> StoredDatabase? {
        read { $0.databases[key] }
    }

    func createDatabase(_ key: DatabaseKey, incarnation: Int64) async throws -> StoredDatabase {
        if let existing = read({ $0.databases[key] }) { return existing }
        var created: StoredDatabase?
        change { state in
            let database = StoredDatabase(id: state.makeID(), incarnation: incarnation, serial: 0)
            state.databases[key] = database
            state.databaseKeys[database.id] = key
            created = database
            return { state in
                state.databases[key] = nil
                state.databaseKeys[database.id] = nil
            }
        }
        return created!
    }

    func updateDatabase(_ database: StoredDatabase) async throws {
        change { state in
            guard let key = state.databaseKeys[database.id] else { return nil }
            let old = state.databases[key]
            state.databases[key] = database
            return { $0.databases[key] = old }
        }
    }

    func zones(inDatabase database: Int64, named names: [String]?) async throws -> [StoredZone] {
        read { state in
            let ids = state.zoneIDs[database] ?? [:]
            let chosen = names.map { $0.compactMap { ids[ExactName($0)] } } ?? Array(ids.values)
            return Set(chosen).sorted().compactMap { state.zones[$0]?.zone }
        }
    }

    func createZone(named name: String, inDatabase database: Int64, incarnation: Int64) async throws -> StoredZone {
        var created: StoredZone?
        change { state in
            let zone = StoredZone(id: state.makeID(), name: name, incarnation: incarnation, serial: 0)
            let previous = state.zoneIDs[database]?[ExactName(name)]
            state.zones[zone.id] = ZoneRows(zone: zone)
            state.zoneIDs[database, default: [:]][ExactName(name)] = zone.id
            created = zone
            return { state in
                state.zones[zone.id] = nil
                state.zoneIDs[database]?[ExactName(name)] = previous
            }
        }
        return created!
    }

    func updateZone(_ zone: StoredZone) async throws {
        _ = try self.zone(zone.id)
        change { state in
            let old = state.zones[zone.id]?.zone
            state.zones[zone.id]?.zone = zone
            return { state in if let old { state.zones[zone.id]?.zone = old } }
        }
    }

    func deleteZone(_ zone: StoredZone) async throws {
        change { state in
            guard let rows = state.zones.removeValue(forKey: zone.id) else { return nil }
            let owner = state.zoneIDs.first { $0.value[ExactName(zone.name)] == zone.id }?.key
            if let owner { state.zoneIDs[owner]?[ExactName(zone.name)] = nil }
            let guids = rows.shares.values.map { ExactName($0.shortGUID) }
            for guid in guids { state.shareZones[guid] = nil }
            return { state in
                for guid in guids { state.shareZones[guid] = zone.id }
                state.zones[zone.id] = rows
                if let owner { state.zoneIDs[owner, default: [:]][ExactName(zone.name)] = zone.id }
            }
        }
    }

    func logZoneChanges(_ entries: [ZoneLogEntry], inDatabase database: Int64) async throws {
        change { state in
            let old = state.zoneLogs[database]
            for var entry in entries {
                let key = ZoneLogKey(owner: ExactName(entry.ownerRecordName), zoneName: ExactName(entry.zoneName))
                entry.originSince = ZoneLogEntry.originSince(
                    of: entry, after: state.zoneLogs[database]?[key])
                state.zoneLogs[database, default: [:]][key] = entry
            }
            return { $0.zoneLogs[database] = old }
        }
    }

    func zoneLog(inDatabase database: Int64, after serial: Int64, limit: Int) async throws -> [ZoneLogEntry] {
        read { state in
            let entries = (state.zoneLogs[database] ?? [:]).values.filter { $0.serial > serial }
            return Array(entries.sorted { $0.serial < $1.serial }.prefix(limit))
        }
    }

    func deleteZoneLog(inDatabase database: Int64) async throws {
        change { state in
            guard let old = state.zoneLogs.removeValue(forKey: database) else { return nil }
            return { $0.zoneLogs[database] = old }
        }
    }

    // MARK: Records

    func records(named names: [String], inZone zone: Int64) async throws -> [StoredRecord] {
        let rows = try self.zone(zone)
        return Set(names.map(ExactName.init)).sorted().compactMap { rows.records[$0] }
    }

    func saveRecords(_ records: [StoredRecord], inZone zone: Int64) async throws {
        _ = try self.zone(zone)
        change { state in
            var replaced: [(ExactName, StoredRecord?)] = []
            for record in records {
                let name = ExactName(record.name)
                replaced.append((name, state.zones[zone]?.records[name]))
                state.zones[zone]?.put(record, named: name)
            }
            let previous = replaced
            return { state in
                for (name, old) in previous.reversed() { state.zones[zone]?.put(old, named: name) }
            }
        }
    }

    func deleteSelfReferrers(of names: [String], inZone zone: Int64) async throws -> [String] {
        let rows = try self.zone(zone)
        var referrers = Set<ExactName>()
        for name in names {
            for source in rows.referrers[ExactName(name)] ?? [] where rows.records[source]?.record != nil {
                referrers.insert(source)
            }
        }
        return referrers.sorted().map(\.string)
    }

    func changes(inZone zone: Int64, after serial: Int64, recordTypes: [String]?, limit: Int) async throws
        -> [StoredChange]
    {
        let rows = try self.zone(zone)
        let types = recordTypes.map { Set($0.map(ExactName.init)) }
        var page: [StoredChange] = []
        var next = serial + 1
        while next <= rows.zone.serial, page.count < limit {
            if let name = rows.namesBySerial[next], let row = rows.records[name],
                types?.contains(ExactName(row.recordType)) ?? true
            {
                page.append(
                    StoredChange(
                        name: row.name, serial: row.serial, contents: row.record.map { .record($0) } ?? .deleted,
                        shareKey: row.shareKey, formerShareKey: row.formerShareKey))
            }
            next += 1
        }
        return page
    }

    func liveRecords(ofType recordType: String, inZone zone: Int64) async throws -> [StoredRecord] {
        try self.zone(zone).records.values.filter { row in
            row.record != nil && row.recordType.isExactly(recordType)
        }
    }

    func liveRecords(inZone zone: Int64, after name: String?, limit: Int) async throws -> [StoredRecord] {
        let rows = try self.zone(zone)
        let start = name.map(ExactName.init)
        let names = rows.records.filter { row in
            row.value.record != nil && start.map { row.key > $0 } ?? true
        }.keys
        return names.sorted().prefix(max(0, limit)).compactMap { rows.records[$0] }
    }

    func children(of names: [String], inZone zone: Int64) async throws -> [StoredRecord] {
        let rows = try self.zone(zone)
        let found = Set(names.map(ExactName.init)).flatMap { rows.children[$0] ?? [] }
        return Set(found).sorted().compactMap { name in rows.records[name].flatMap { $0.record != nil ? $0 : nil } }
    }

    func liveRecordNames(createdBy creator: String, inZone zone: Int64, limit: Int) async throws -> [String] {
        let rows = try self.zone(zone)
        let names = rows.records.filter { $0.value.record != nil && $0.value.creator?.isExactly(creator) == true }.keys
        return Array(names.sorted().prefix(limit)).map(\.string)
    }

    // MARK: Shares

    func shares(inZone zone: Int64) async throws -> [StoredShare] {
        try self.zone(zone).shares.sorted { $0.key < $1.key }.map(\.value)
    }

    func share(shortGUID: String) async throws -> StoredShare? {
        read { state in
            state.shareZones[ExactName(shortGUID)].flatMap { zone in
                state.zones[zone]?.shares.values.first { $0.shortGUID.isExactly(shortGUID) }
            }
        }
    }

    func shares(acceptedBy user: String, container: String, environment: CloudEnvironment) async throws
        -> [StoredShare]
    {
        read { state in
            state.shareZones.values.sorted().flatMap { state.zones[$0]?.shares.values.map { $0 } ?? [] }
                .filter { share in
                    share.container.isExactly(container) && share.environment == environment
                        && share.participants.contains {
                            $0.acceptanceStatus == .accepted && ($0.userRecordName?.isExactly(user) ?? false)
                        }
                }
                .sorted { ExactName($0.shortGUID) < ExactName($1.shortGUID) }
        }
        .reduce(into: [StoredShare]()) { unique, share in
            if !unique.contains(where: { $0.shortGUID.isExactly(share.shortGUID) }) { unique.append(share) }
        }
    }

    func saveShare(_ share: StoredShare) async throws {
        _ = try self.zone(share.zone)
        change { state in
            let name = ExactName(share.recordName)
            let old = state.zones[share.zone]?.shares[name]
            if let old { state.shareZones[ExactName(old.shortGUID)] = nil }
            state.zones[share.zone]?.shares[name] = share
            state.shareZones[ExactName(share.shortGUID)] = share.zone
            return { state in
                state.shareZones[ExactName(share.shortGUID)] = nil
                state.zones[share.zone]?.shares[name] = old
                if let old { state.shareZones[ExactName(old.shortGUID)] = share.zone }
            }
        }
    }

    func deleteShare(recordName: String, inZone zone: Int64) async throws {
        _ = try self.zone(zone)
        change { state in
            let name = ExactName(recordName)
            guard let old = state.zones[zone]?.shares.removeValue(forKey: name) else { return nil }
            state.shareZones[ExactName(old.shortGUID)] = nil
            return { state in
                state.zones[zone]?.shares[name] = old
                state.shareZones[ExactName(old.shortGUID)] = zone
            }
        }
    }

    // MARK: Subscriptions

    func subscriptions(inDatabase database: Int64, user: String?) async throws -> [StoredSubscription] {
        read { state in
            (state.subscriptions[database] ?? [:]).values
                .filter { subscription in user.map { subscription.user.isExactly($0) } ?? true }
                .sorted {
                    (ExactName($0.user), ExactName($0.subscription.subscriptionID))
                        < (ExactName($1.user), ExactName($1.subscription.subscriptionID))
                }
        }
    }

    func saveSubscription(_ subscription: StoredSubscription, inDatabase database: Int64) async throws {
        let key = SubscriptionKey(
            user: ExactName(subscription.user), identifier: ExactName(subscription.subscription.subscriptionID))
        change { state in
            let old = state.subscriptions[database]?[key]
            state.subscriptions[database, default: [:]][key] = subscription
            return { $0.subscriptions[database]?[key] = old }
        }
    }

    func deleteSubscription(_ subscriptionID: String, user: String, inDatabase database: Int64) async throws -> Bool {
        let key = SubscriptionKey(user: ExactName(user), identifier: ExactName(subscriptionID))
        var deleted = false
        change { state in
            guard let old = state.subscriptions[database]?.removeValue(forKey: key) else { return nil }
            deleted = true
            return { $0.subscriptions[database, default: [:]][key] = old }
        }
        return deleted
    }

    // MARK: Query notifications

    func logQueryNotifications(_ notifications: [StoredQueryNotification], inDatabase database: Int64) async throws {
        guard !notifications.isEmpty else { return }
        change { state in
            let old = state.queryNotifications[database]
            state.queryNotifications[database, default: []] += notifications
            return { $0.queryNotifications[database] = old }
        }
    }

    func queryNotifications(inDatabase database: Int64, user: String, after serial: Int64, through last: Int64)
        async throws -> [StoredQueryNotification]
    {
        read { state in
            (state.queryNotifications[database] ?? []).filter {
                $0.serial > serial && $0.serial <= last && $0.user.isExactly(user)
            }
        }
    }

    func deleteQueryNotifications(loggedBefore logged: Int64) async throws {
        change { state -> (@Sendable (inout MemoryState) -> Void)? in
            let old = state.queryNotifications
            let kept = old.mapValues { list in list.filter { $0.logged >= logged } }
            guard kept != old else { return nil }
            state.queryNotifications = kept
            return { $0.queryNotifications = old }
        }
    }

    // MARK: Accounts

    func createContainer(named name: String, tokenHash: String) async throws -> Bool {
        var created = false
        change { state in
            guard state.containers[ExactName(name)] == nil else { return nil }
            state.containers[ExactName(name)] = tokenHash
            created = true
            return { $0.containers[ExactName(name)] = nil }
        }
        return created
    }

    func containerTokenHash(named name: String) async throws -> String? {
        read { $0.containers[ExactName(name)] }
    }

    func containerCount() async throws -> Int {
        read { $0.containers.count }
    }

    func containerNames() async throws -> [String] {
        read { $0.containers.keys.sorted().map(\.string) }
    }

    func setUserEmail(_ emailAddress: String?, discoverable: Bool, recordName: String, container: String)
        async throws -> Bool
    {
        // Every name is a user of the in-memory server: devices sign in as any.
        change { state in
            let old = state.userEmails[ExactName(container)]?[ExactName(recordName)]
            state.userEmails[ExactName(container), default: [:]][ExactName(recordName)] = (
                emailAddress, discoverable
            )
            return { $0.userEmails[ExactName(container)]?[ExactName(recordName)] = old }
        }
        return true
    }

    func setUserName(_ name: UserNameComponents?, recordName: String, container: String) async throws -> Bool {
        // Every name is a user of the in-memory server.
        change { state in
            let old = state.userNames[ExactName(container)]?[ExactName(recordName)]
            state.userNames[ExactName(container), default: [:]][ExactName(recordName)] = name
            return { $0.userNames[ExactName(container), default: [:]][ExactName(recordName)] = old }
        }
        return true
    }

    func users(withEmailAddresses addresses: [String], container: String) async throws -> [StoredUser] {
        let wanted = Set(addresses.map(ExactName.init))
        return read { state in
            (state.userEmails[ExactName(container)] ?? [:]).compactMap { name, entry in
                guard let address = entry.emailAddress, wanted.contains(ExactName(address)) else { return nil }
                return StoredUser(
                    recordName: name.string, emailAddress: address, isDiscoverable: entry.discoverable,
                    nameComponents: state.userNames[ExactName(container)]?[name])
            }
            .sorted { ExactName($0.recordName) < ExactName($1.recordName) }
        }
    }

    func users(withRecordNames names: [String], container: String) async throws -> [StoredUser] {
        read { state in
            Set(names.map(ExactName.init)).sorted().map { name in
                let entry = state.userEmails[ExactName(container)]?[name]
                return StoredUser(
                    recordName: name.string, emailAddress: entry?.emailAddress,
                    isDiscoverable: entry?.discoverable ?? false,
                    nameComponents: state.userNames[ExactName(container)]?[name])
            }
        }
    }

    func createServerKey(id: String, publicKeyPEM: String, container: String) async throws {
        change { state in
            let old = state.serverKeys[ExactName(container)]?[ExactName(id)]
            state.serverKeys[ExactName(container), default: [:]][ExactName(id)] = publicKeyPEM
            return { $0.serverKeys[ExactName(container)]?[ExactName(id)] = old }
        }
    }

    func serverKey(id: String, container: String) async throws -> String? {
        read { $0.serverKeys[ExactName(container)]?[ExactName(id)] }
    }

    func isQuotaExceeded(user: String, container: String, environment: CloudEnvironment) async throws -> Bool {
        read {
            $0.quotas.contains(
                QuotaKey(container: ExactName(container), environment: environment, user: ExactName(user)))
        }
    }

    func setQuotaExceeded(_ exceeded: Bool, user: String, container: String, environment: CloudEnvironment)
        async throws
    {
        let key = QuotaKey(container: ExactName(container), environment: environment, user: ExactName(user))
        change { state in
            let was = state.quotas.contains(key)
            if exceeded { state.quotas.insert(key) } else { state.quotas.remove(key) }
            return { state in if was { state.quotas.insert(key) } else { state.quotas.remove(key) } }
        }
    }

    // MARK: Notification channels

    func createChannel(_ channel: StoredChannel) async throws {
        change { state in
            let old = state.channels[channel.tokenHash]
            state.channels[channel.tokenHash] = channel
            return { $0.channels[channel.tokenHash] = old }
        }
    }

    func channel(tokenHash: String) async throws -> StoredChannel? {
        read { $0.channels[tokenHash] }
    }

    func touchChannel(tokenHash: String, lastUsed: Int64) async throws {
        change { state in
            guard let old = state.channels[tokenHash] else { return nil }
            state.channels[tokenHash]?.lastUsed = lastUsed
            return { $0.channels[tokenHash] = old }
        }
    }

    func deleteChannels(unusedSince lastUsed: Int64) async throws {
        change { state in
            let idle = state.channels.filter { $0.value.lastUsed < lastUsed }
            guard !idle.isEmpty else { return nil }
            for hash in idle.keys { state.channels[hash] = nil }
            return { state in state.channels.merge(idle) { current, _ in current } }
        }
    }

    func deleteChannels(of key: DatabaseKey, user: String, keepingNewest count: Int) async throws {
        change { state in
            let owned = state.channels.values.filter { $0.key == key && $0.user.isExactly(user) }
            let newestFirst = owned.sorted { ($0.lastUsed, $0.tokenHash) > ($1.lastUsed, $1.tokenHash) }
            let dropped = newestFirst.dropFirst(max(0, count))
            guard !dropped.isEmpty else { return nil }
            for channel in dropped { state.channels[channel.tokenHash] = nil }
            return { state in for channel in dropped { state.channels[channel.tokenHash] = channel } }
        }
    }

    func deleteChannels(ofUser user: String, container: String) async throws {
        change { state in
            let owned = state.channels.filter {
                $0.value.user.isExactly(user) && $0.value.key.container.isExactly(container)
            }
            guard !owned.isEmpty else { return nil }
            for hash in owned.keys { state.channels[hash] = nil }
            return { state in state.channels.merge(owned) { current, _ in current } }
        }
    }

    func deleteChannel(tokenHash: String) async throws {
        change { state in
            guard let old = state.channels.removeValue(forKey: tokenHash) else { return nil }
            return { $0.channels[tokenHash] = old }
        }
    }

    // MARK: Restores

    func storeIdentity() async throws -> String? {
        read { $0.storeIdentity }
    }

    func setStoreIdentity(_ identity: String) async throws {
        change { state in
            let old = state.storeIdentity
            state.storeIdentity = identity
            return { $0.storeIdentity = old }
        }
    }

    func renewIncarnations(below bound: Int64) async throws {
        change { state in
            let (databases, zones) = (state.databases, state.zones)
            for key in databases.keys { state.databases[key]?.incarnation = Int64.random(in: 1..<bound) }
            for id in zones.keys { state.zones[id]?.zone.incarnation = Int64.random(in: 1..<bound) }
            return { state in
                state.databases = databases
                state.zones = zones
            }
        }
    }

    func deleteAllChannels() async throws {
        change { state in
            let old = state.channels
            state.channels = [:]
            return { $0.channels = old }
        }
    }

    // MARK: Assets

    func assetSigningSecret(proposing proposed: [UInt8]) async throws -> [UInt8] {
        if let secret = read({ $0.assetSecret }) { return secret }
        change { state in
            state.assetSecret = proposed
            return { $0.assetSecret = nil }
        }
        return proposed
    }

    func createUploadTicket(_ ticket: StoredUploadTicket) async throws {
        let key = ExactName(ticket.id)
        change { state in
            let old = state.uploadTickets[key]
            state.uploadTickets[key] = ticket
            return { $0.uploadTickets[key] = old }
        }
    }

    func uploadTicket(id: String) async throws -> StoredUploadTicket? {
        read { $0.uploadTickets[ExactName(id)] }
    }

    func saveAsset(_ asset: StoredAsset) async throws {
        let key = ExactName(asset.id)
        change { state in
            let old = state.assets[key]
            state.assets[key] = asset
            return { $0.assets[key] = old }
        }
    }

    func assets(ids: [String]) async throws -> [StoredAsset] {
        read { state in Set(ids.map(ExactName.init)).sorted().compactMap { state.assets[$0] } }
    }

    func deleteAssets(ids: [String]) async throws {
        changeAssets(ids) { _ in nil }
    }

    func holdAssets(ids: [String]) async throws {
        changeAssets(ids) { asset in
            var held = asset
            held.unheldSince = nil
            return held
        }
    }

    func releaseAssets(ids: [String], at time: Int64) async throws {
        changeAssets(ids) { asset in
            var released = asset
            released.unheldSince = asset.unheldSince ?? time
            return released
        }
    }

    func releaseAssets(inZone zone: Int64, at time: Int64) async throws {
        let ids = read { state in state.assets.values.filter { $0.zone == zone && $0.unheldSince == nil }.map(\.id) }
        try await releaseAssets(ids: ids, at: time)
    }

    func unheldAssets(since cutoff: Int64, limit: Int) async throws -> [String] {
        read { state in
            Array(
                state.assets.values.filter { ($0.unheldSince ?? .max) <= cutoff }.map { ExactName($0.id) }.sorted()
                    .prefix(limit).map(\.string))
        }
    }

    func createAssetReceipt(_ receipt: StoredAssetReceipt) async throws {
        let key = ExactName(receipt.id)
        change { state in
            let old = state.assetReceipts[key]
            state.assetReceipts[key] = receipt
            return { $0.assetReceipts[key] = old }
        }
    }

    func assetReceipts(ids: [String]) async throws -> [StoredAssetReceipt] {
        read { state in Set(ids.map(ExactName.init)).sorted().compactMap { state.assetReceipts[$0] } }
    }

    // MARK: Footprint

    /// The in-memory store has no database file to measure.
    func storedBytes() async throws -> Int64? { nil }

    func assetTotals() async throws -> (count: Int64, bytes: Int64) {
        read { state in
            (Int64(state.assets.count), state.assets.values.reduce(0) { $0 + ($1.size ?? 0) })
        }
    }

    func channels(ofUser user: String, container: String) async throws -> [StoredChannel] {
        read { state in
            state.channels.values.filter { $0.user.isExactly(user) && $0.key.container.isExactly(container) }
        }
    }

    func deleteExpiredUploads(at time: Int64) async throws {
        change { state in
            let tickets = state.uploadTickets.filter { $0.value.expires <= time }
            let receipts = state.assetReceipts.filter { $0.value.expires <= time }
            guard !tickets.isEmpty || !receipts.isEmpty else { return nil }
            for key in tickets.keys { state.uploadTickets[key] = nil }
            for key in receipts.keys { state.assetReceipts[key] = nil }
            return { state in
                state.uploadTickets.merge(tickets) { current, _ in current }
                state.assetReceipts.merge(receipts) { current, _ in current }
            }
        }
    }

    /// Replaces each asset's row with what `body` makes of it (`nil` deletes it).
    private func changeAssets(_ ids: [String], _ body: @escaping (StoredAsset) -> StoredAsset?) {
        change { state in
            var old: [ExactName: StoredAsset] = [:]
            for key in Set(ids.map(ExactName.init)) {
                guard let asset = state.assets[key] else { continue }
                old[key] = asset
                state.assets[key] = body(asset)
            }
            guard !old.isEmpty else { return nil }
            let previous = old
            return { state in state.assets.merge(previous) { _, old in old } }
        }
    }

    // MARK: Schema

    func fieldTypes(container: String, environment: CloudEnvironment) async throws -> [StoredFieldType] {
        read { $0.fieldTypes[SchemaID(container: ExactName(container), environment: environment)] ?? [] }
    }

    func addFieldTypes(_ types: [StoredFieldType], container: String, environment: CloudEnvironment) async throws {
        let key = SchemaID(container: ExactName(container), environment: environment)
        change { state in
            let old = state.fieldTypes[key]
            var known = Set((old ?? []).map { [ExactName($0.recordType), ExactName($0.fieldName)] })
            for type in types where known.insert([ExactName(type.recordType), ExactName(type.fieldName)]).inserted {
                state.fieldTypes[key, default: []].append(type)
            }
            return { $0.fieldTypes[key] = old }
        }
    }
}

/// The bytes of the in-memory server's assets.
final class MemoryAssetBytes: AssetByteStore {
    /// The size of the chunks a read yields.
    static let chunkSize = 65_536
    private let blobs = LockedState([ExactName: [UInt8]]())

    func write<Chunks: AsyncSequence>(_ chunks: Chunks, as id: String) async throws where Chunks.Element == [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in chunks { bytes += chunk }
        let stored = bytes
        blobs.withLock { $0[ExactName(id)] = stored }
    }

    func read(_ id: String, range: Range<Int64>, assetSize: Int64) async throws -> AssetDownload {
        guard let bytes = blobs.withLock({ $0[ExactName(id)] }) else {
            throw CloudError(.notFound, reason: "no bytes are stored for the asset")
        }
        let slice = Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)])
        let chunks = stride(from: 0, to: slice.count, by: Self.chunkSize).map {
            Array(slice[$0..<min($0 + Self.chunkSize, slice.count)])
        }
        return AssetDownload(assetSize: assetSize, range: range, chunks: chunks.async)
    }

    func delete(_ ids: [String]) async throws {
        blobs.withLock { blobs in for id in ids { blobs[ExactName(id)] = nil } }
    }

    func storedIDs() async throws -> [String] {
        blobs.withLock { $0.keys.sorted().map(\.string) }
    }
}

extension Array where Element: Sendable {
    /// The elements as an asynchronous sequence.
    fileprivate var async: AsyncChunks<Element> { AsyncChunks(elements: self) }
}

/// An array's elements, one at a time, as an asynchronous sequence.
private struct AsyncChunks<Element: Sendable>: AsyncSequence, Sendable {
    let elements: [Element]

    func makeAsyncIterator() -> Iterator { Iterator(elements: elements[...]) }

    struct Iterator: AsyncIteratorProtocol {
        var elements: ArraySlice<Element>
        mutating func next() async throws -> Element? { elements.popFirst() }
    }
}

extension MemoryTransaction {
    // MARK: Identity issuers and identities

    func identityIssuers(container: String) async throws -> [StoredIdentityIssuer] {
        read { state in
            (state.identityIssuers[ExactName(container)] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
        }
    }

    func saveIdentityIssuer(_ issuer: StoredIdentityIssuer, container: String) async throws {
        change { state in
            let key = ExactName(issuer.issuer)
            let old = state.identityIssuers[ExactName(container)]?[key]
            state.identityIssuers[ExactName(container), default: [:]][key] = issuer
            return { $0.identityIssuers[ExactName(container)]?[key] = old }
        }
    }

    func deleteIdentityIssuer(_ issuer: String, container: String) async throws -> Bool {
        var deleted = false
        change { state in
            let key = ExactName(issuer)
            guard let old = state.identityIssuers[ExactName(container)]?.removeValue(forKey: key) else { return nil }
            deleted = true
            return { $0.identityIssuers[ExactName(container), default: [:]][key] = old }
        }
        return deleted
    }

    func identityUser(issuer: String, subject: String, container: String) async throws -> String? {
        read { state in
            state.identities[ExactName(container)]?[IdentityKey(issuer: ExactName(issuer), subject: ExactName(subject))]
        }
    }

    func createIdentity(issuer: String, subject: String, userRecordName: String, container: String) async throws
        -> Bool
    {
        var created = false
        change { state in
            let key = IdentityKey(issuer: ExactName(issuer), subject: ExactName(subject))
            guard state.identities[ExactName(container)]?[key] == nil else { return nil }
            state.identities[ExactName(container), default: [:]][key] = userRecordName
            created = true
            return { $0.identities[ExactName(container)]?[key] = nil }
        }
        return created
    }

    func deleteIdentities(ofUser userRecordName: String, container: String) async throws -> Int {
        var count = 0
        change { state in
            let old = state.identities[ExactName(container)] ?? [:]
            let kept = old.filter { !$0.value.isExactly(userRecordName) }
            count = old.count - kept.count
            guard count > 0 else { return nil }
            state.identities[ExactName(container)] = kept
            return { $0.identities[ExactName(container)] = old }
        }
        return count
    }

    func identities(container: String) async throws -> [StoredIdentity] {
        read { state in
            (state.identities[ExactName(container)] ?? [:])
                .map {
                    StoredIdentity(
                        issuer: $0.key.issuer.string, subject: $0.key.subject.string, userRecordName: $0.value)
                }
                .sorted {
                    (ExactName($0.issuer), ExactName($0.subject)) < (ExactName($1.issuer), ExactName($1.subject))
                }
        }
    }

    // MARK: Blocked identities

    func blockIdentity(_ identity: StoredBlockedIdentity, container: String) async throws -> Bool {
        var blocked = false
        change { state in
            let key = IdentityKey(issuer: ExactName(identity.issuer), subject: ExactName(identity.subject))
            guard state.blockedIdentities[ExactName(container)]?[key] == nil else { return nil }
            state.blockedIdentities[ExactName(container), default: [:]][key] = identity.blocked
            blocked = true
            return { $0.blockedIdentities[ExactName(container)]?[key] = nil }
        }
        return blocked
    }

    func unblockIdentity(issuer: String, subject: String, container: String) async throws -> Bool {
        var unblocked = false
        change { state in
            let key = IdentityKey(issuer: ExactName(issuer), subject: ExactName(subject))
            guard let old = state.blockedIdentities[ExactName(container)]?.removeValue(forKey: key) else { return nil }
            unblocked = true
            return { $0.blockedIdentities[ExactName(container), default: [:]][key] = old }
        }
        return unblocked
    }

    func isIdentityBlocked(issuer: String, subject: String, container: String) async throws -> Bool {
        read { state in
            state.blockedIdentities[ExactName(container)]?[
                IdentityKey(issuer: ExactName(issuer), subject: ExactName(subject))] != nil
        }
    }

    func isUserBlocked(_ userRecordName: String, container: String) async throws -> Bool {
        read { state in
            let blocked = state.blockedIdentities[ExactName(container)] ?? [:]
            return (state.identities[ExactName(container)] ?? [:]).contains { key, user in
                user.isExactly(userRecordName) && blocked[key] != nil
            }
        }
    }

    func blockedIdentities(container: String) async throws -> [StoredBlockedIdentity] {
        read { state in
            (state.blockedIdentities[ExactName(container)] ?? [:])
                .map {
                    StoredBlockedIdentity(
                        issuer: $0.key.issuer.string, subject: $0.key.subject.string, blocked: $0.value)
                }
                .sorted {
                    (ExactName($0.issuer), ExactName($0.subject)) < (ExactName($1.issuer), ExactName($1.subject))
                }
        }
    }
}
