import CloudCodable
import CloudProtocol

/// Where the record service keeps its data: SQLite for one server process,
/// PostgreSQL for several on one database.
///
/// Every request runs in one transaction: the service reads what it needs,
/// decides, and writes, so a storage that serialises writers (SQLite's
/// `BEGIN IMMEDIATE`, PostgreSQL's row locks on the zone) gives each zone a
/// gapless change feed in commit order. A request is answered only after
/// its transaction commits.
public protocol ServerStorage: Sendable {
    /// Runs `body` in a transaction that may write; commits when it returns,
    /// rolls back when it throws.
    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T) async throws -> T

    /// Runs `body` in a transaction that only reads.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T) async throws -> T

    /// Closes the storage; no transaction may start afterwards.
    func close() async throws

    /// Where the bytes of assets live; their rows are in the transactions
    /// (``AssetTransaction``). By default ``UnsupportedAssetByteStore``.
    var assetBytes: any AssetByteStore { get }
}

extension ServerStorage {
    /// ``UnsupportedAssetByteStore``: a storage that keeps no assets.
    public var assetBytes: any AssetByteStore { UnsupportedAssetByteStore() }
}

/// Which database of which container: the unit of isolation. The public
/// database has an empty `owner`.
public struct DatabaseKey: Sendable, Hashable, CustomStringConvertible {
    /// The container's name.
    public var container: String
    /// The container's environment.
    public var environment: CloudEnvironment
    /// The database's scope.
    public var scope: DatabaseScope
    /// The user whose private or shared database it is; empty for the public one.
    public var owner: String

    /// Creates a key.
    public init(container: String, environment: CloudEnvironment, scope: DatabaseScope, owner: String) {
        self.container = container
        self.environment = environment
        self.scope = scope
        self.owner = scope == .public ? "" : owner
    }

    /// Whether the two are the same, names compared byte for byte.
    public static func == (lhs: DatabaseKey, rhs: DatabaseKey) -> Bool {
        lhs.container.isExactly(rhs.container) && lhs.environment == rhs.environment && lhs.scope == rhs.scope
            && lhs.owner.isExactly(rhs.owner)
    }

    /// Hashes the names' bytes, so that equal values hash equally.
    public func hash(into hasher: inout Hasher) {
        ExactName(container).hash(into: &hasher)
        hasher.combine(environment)
        hasher.combine(scope)
        ExactName(owner).hash(into: &hasher)
    }

    /// The text, for logs and messages.
    public var description: String { "\(container)/\(environment.rawValue)/\(scope.rawValue)/\(owner)" }
}

/// A database's row: its change history's incarnation and last serial.
public struct StoredDatabase: Sendable, Hashable {
    /// The storage's identifier of the database.
    public var id: Int64
    /// Database sync tokens carry it; a new one expires them all.
    public var incarnation: Int64
    /// The serial of the database's last zone change.
    public var serial: Int64

    /// Creates a row.
    public init(id: Int64, incarnation: Int64, serial: Int64) {
        self.id = id
        self.incarnation = incarnation
        self.serial = serial
    }
}

/// A zone's row: its incarnation and the serial of its last record change.
public struct StoredZone: Sendable, Hashable {
    /// The storage's identifier of the zone (a recreated zone gets a new row).
    public var id: Int64
    /// The zone's name.
    public var name: String
    /// Zone sync tokens carry it; a new one expires them all.
    public var incarnation: Int64
    /// The serial of the zone's last record change.
    public var serial: Int64

    /// Creates a row.
    public init(id: Int64, name: String, incarnation: Int64, serial: Int64) {
        self.id = id
        self.name = name
        self.incarnation = incarnation
        self.serial = serial
    }
}

/// A record's row: the record as stored, or its tombstone.
public struct StoredRecord: Sendable, Hashable {
    /// The record's name.
    public var name: String
    /// The record's type (kept on the tombstone for `desiredRecordTypes`).
    public var recordType: String
    /// The zone serial of the record's last change.
    public var serial: Int64
    /// Who created the record (`nil` for a server-to-server key).
    public var creator: String?
    /// The record, or `nil` once deleted.
    public var record: Record?
    /// The names of the records of the zone this one refers to with
    /// `DELETE_SELF` (empty for a tombstone), so deletes cascade by index.
    public var deleteSelfTargets: [String]
    /// The record's parent (``Record/parent``), so that a share's
    /// hierarchy is walked by index; `nil` for a tombstone.
    public var parent: String?
    /// The shortGUID of the hierarchy share that covers the record, kept on
    /// its tombstone so that the share's participants hear of the deletion.
    public var shareKey: String?
    /// The shortGUID of the hierarchy share this change took the record out
    /// of: that share's participants see the change as a deletion.
    public var formerShareKey: String?

    /// Creates a row.
    public init(
        name: String, recordType: String, serial: Int64, creator: String?, record: Record?,
        deleteSelfTargets: [String], parent: String? = nil, shareKey: String? = nil, formerShareKey: String? = nil
    ) {
        self.name = name
        self.recordType = recordType
        self.serial = serial
        self.creator = creator
        self.record = record
        self.deleteSelfTargets = deleteSelfTargets
        self.parent = parent
        self.shareKey = shareKey
        self.formerShareKey = formerShareKey
    }
}

/// A row of a zone's history as a page of changes answers it.
public struct StoredChange: Sendable, Hashable {
    /// The record's name.
    public var name: String
    /// The zone serial of the record's last change.
    public var serial: Int64
    /// What the row holds.
    public var contents: Contents
    /// The row's ``StoredRecord/shareKey``.
    public var shareKey: String?
    /// The row's ``StoredRecord/formerShareKey``.
    public var formerShareKey: String?

    /// A row's record, as the store keeps it.
    public enum Contents: Sendable, Hashable {
        /// The record was deleted.
        case deleted
        /// The record, decoded.
        case record(Record)
        /// The record's wire form (``WireFormat/encode(_:)`` of the record as
        /// saved), not decoded.
        case encoded([UInt8])
    }

    /// Creates a row.
    public init(
        name: String, serial: Int64, contents: Contents, shareKey: String? = nil, formerShareKey: String? = nil
    ) {
        self.name = name
        self.serial = serial
        self.contents = contents
        self.shareKey = shareKey
        self.formerShareKey = formerShareKey
    }
}

/// One entry of a database's zone history: the zone's latest change.
public struct ZoneLogEntry: Sendable, Hashable {
    /// The zone's name.
    public var zoneName: String
    /// The zone's owner: empty for the database's own zones; in a shared
    /// database, the user whose zone was shared. An entry is the latest of
    /// its owner and zone name together.
    public var ownerRecordName: String
    /// The database serial of the change.
    public var serial: Int64
    /// Whether the change deleted the zone (or, in a shared database, took
    /// it out of the database).
    public var deleted: Bool
    /// The hash of the notification channel whose reader made the change
    /// (a write that named its channel), or `nil`: that channel's polls may
    /// leave the entry out, since its reader knows its own write.
    public var origin: String?
    /// The database serial from which ``origin`` has been the zone's only
    /// writer: a poll from a cursor at or after it missed no other writer's
    /// change of the zone. The storage keeps it when it logs an entry with
    /// an origin: the previous entry's when that had the same origin, else
    /// the previous entry's serial, else (no previous entry) the serial
    /// before the entry's. It is 0 in an entry without an origin.
    public var originSince: Int64

    /// Creates an entry.
    public init(
        zoneName: String, ownerRecordName: String = "", serial: Int64, deleted: Bool, origin: String? = nil,
        originSince: Int64 = 0
    ) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
        self.serial = serial
        self.deleted = deleted
        self.origin = origin
        self.originSince = originSince
    }

    /// The ``originSince`` of `entry` logged over `previous`, the zone's
    /// entry before it (`nil`: none), by the rule the stores keep in SQL.
    public static func originSince(of entry: ZoneLogEntry, after previous: ZoneLogEntry?) -> Int64 {
        guard let origin = entry.origin else { return 0 }
        guard let previous else { return entry.serial - 1 }
        if let before = previous.origin, before.isExactly(origin) { return previous.originSince }
        return previous.serial
    }

    /// Whether a poll of the channel `tokenHash` from `cursor` may leave the
    /// entry out: every change of its zone after `cursor` was the channel's
    /// own write.
    public func isOnlyWrite(ofChannel tokenHash: String, after cursor: Int64) -> Bool {
        guard let origin, origin.isExactly(tokenHash) else { return false }
        return originSince <= cursor && !deleted
    }
}

/// A share's row: where the share lives and who takes part. The share
/// record itself (with the same participants) is a row of its zone; this
/// row indexes it by shortGUID and by participant, and the record service
/// writes both in one transaction.
public struct StoredShare: Sendable, Hashable {
    /// The share's public handle, unique in the storage.
    public var shortGUID: String
    /// The container of the owner's database.
    public var container: String
    /// The environment of the owner's database.
    public var environment: CloudEnvironment
    /// The owner's user record name.
    public var owner: String
    /// The storage's identifier of the owner's zone.
    public var zone: Int64
    /// The zone's name.
    public var zoneName: String
    /// The share record's name (``ShareDetails/zoneShareName`` for a zone share).
    public var recordName: String
    /// The root record of a hierarchy share; `nil` for a zone share.
    public var rootRecordName: String?
    /// What anyone holding the shortGUID may do after accepting.
    public var publicPermission: SharePermission
    /// Everyone who takes part, the owner first.
    public var participants: [ShareParticipant]

    /// Creates a row.
    public init(
        shortGUID: String, container: String, environment: CloudEnvironment, owner: String, zone: Int64,
        zoneName: String, recordName: String, rootRecordName: String?, publicPermission: SharePermission,
        participants: [ShareParticipant]
    ) {
        self.shortGUID = shortGUID
        self.container = container
        self.environment = environment
        self.owner = owner
        self.zone = zone
        self.zoneName = zoneName
        self.recordName = recordName
        self.rootRecordName = rootRecordName
        self.publicPermission = publicPermission
        self.participants = participants
    }
}

/// A user as lookups see them.
public struct StoredUser: Sendable, Hashable {
    /// The user's record name.
    public var recordName: String
    /// The address others find the user by (lowercased by the service), if any.
    public var emailAddress: String?
    /// Whether lookups may return the user.
    public var isDiscoverable: Bool
    /// The user's name, if the server knows one (see ``UserNames``).
    public var nameComponents: UserNameComponents?

    /// Creates a row.
    public init(
        recordName: String, emailAddress: String?, isDiscoverable: Bool, nameComponents: UserNameComponents? = nil
    ) {
        self.recordName = recordName
        self.emailAddress = emailAddress
        self.isDiscoverable = isDiscoverable
        self.nameComponents = nameComponents
    }
}

/// An identity of a container: an issuer's subject and the user it signs
/// in as.
public struct StoredIdentity: Sendable, Hashable {
    /// The issuer (`iss`), compared as exact bytes.
    public var issuer: String
    /// The issuer's subject (`sub`), compared as exact bytes.
    public var subject: String
    /// The record name of the user the subject signs in as.
    public var userRecordName: String

    /// Creates a row.
    public init(issuer: String, subject: String, userRecordName: String) {
        self.issuer = issuer
        self.subject = subject
        self.userRecordName = userRecordName
    }
}

/// An issuer's subject kept out of a container (`cumulus user block`):
/// its identity tokens are refused, whether or not it ever signed in.
public struct StoredBlockedIdentity: Sendable, Hashable {
    /// The issuer (`iss`), compared as exact bytes.
    public var issuer: String
    /// The issuer's subject (`sub`), compared as exact bytes.
    public var subject: String
    /// When it was blocked, in milliseconds since 1970.
    public var blocked: Int64

    /// Creates a row.
    public init(issuer: String, subject: String, blocked: Int64) {
        self.issuer = issuer
        self.subject = subject
        self.blocked = blocked
    }
}

/// A subscription and the user it belongs to (several users share the
/// public database).
public struct StoredSubscription: Sendable, Hashable {
    /// The subscription's owner; empty for a server-to-server key.
    public var user: String
    /// The subscription, its zone without owner.
    public var subscription: Subscription

    /// Creates a row.
    public init(user: String, subscription: Subscription) {
        self.user = user
        self.subscription = subscription
    }
}

/// A query subscription's notification, kept for the polls of its user's
/// channels: a poll answers those of the writes after its cursor.
public struct StoredQueryNotification: Sendable, Hashable {
    /// The subscription's owner; empty for a server-to-server key.
    public var user: String
    /// The database serial of the write that made it.
    public var serial: Int64
    /// When the write was made, in milliseconds since 1970: old ones,
    /// which no live channel can still ask for, are deleted.
    public var logged: Int64
    /// The notification, its zone without owner.
    public var notification: QueryNotification

    /// Creates a row.
    public init(user: String, serial: Int64, logged: Int64, notification: QueryNotification) {
        self.user = user
        self.serial = serial
        self.logged = logged
        self.notification = notification
    }
}

/// The type of a field of a record type, as first written.
public struct StoredFieldType: Sendable, Hashable {
    /// The record type.
    public var recordType: String
    /// The field's name.
    public var fieldName: String
    /// The field's type.
    public var type: FieldType

    /// Creates a row.
    public init(recordType: String, fieldName: String, type: FieldType) {
        self.recordType = recordType
        self.fieldName = fieldName
        self.type = type
    }
}

/// A notification channel (the `apnsToken` of `tokens/create`): whose
/// database it hears, and where its polls start.
public struct StoredChannel: Sendable, Hashable {
    /// The SHA-256 of the channel's token, as lowercase hexadecimal: only
    /// the hash is stored.
    public var tokenHash: String
    /// The database the channel hears.
    public var key: DatabaseKey
    /// The user whose subscriptions it hears; empty for a server-to-server key.
    public var user: String
    /// The database's serial when the channel was made: a poll without a
    /// cursor starts there, so the client hears its own later writes.
    public var start: Int64
    /// When a poll last used the channel, in milliseconds since 1970.
    public var lastUsed: Int64
    /// The credential the channel was opened with, as the host names it
    /// (see ``RecordService/openChannel(for:credential:)``): its polls end
    /// once the host finds it no longer holds. `nil` when the host named none.
    public var credential: String?

    /// Creates a row.
    public init(
        tokenHash: String, key: DatabaseKey, user: String, start: Int64, lastUsed: Int64, credential: String? = nil
    ) {
        self.tokenHash = tokenHash
        self.key = key
        self.user = user
        self.start = start
        self.lastUsed = lastUsed
        self.credential = credential
    }
}

/// What the record service reads and writes inside one transaction.
///
/// Methods that take several names read or write them in one statement.
public protocol StorageTransaction: AssetTransaction, CredentialTransaction {
    // MARK: Databases and zones

    /// The database's row, or `nil` before its first use.
    func database(_ key: DatabaseKey) async throws -> StoredDatabase?
    /// Creates the database's row unless it exists, and returns the row.
    func createDatabase(_ key: DatabaseKey, incarnation: Int64) async throws -> StoredDatabase
    /// Writes a database's incarnation and serial.
    func updateDatabase(_ database: StoredDatabase) async throws
    /// The database's zones, all or those with the given names.
    func zones(inDatabase database: Int64, named names: [String]?) async throws -> [StoredZone]
    /// Creates a zone with no records.
    func createZone(named name: String, inDatabase database: Int64, incarnation: Int64) async throws -> StoredZone
    /// Writes a zone's incarnation and serial.
    func updateZone(_ zone: StoredZone) async throws
    /// Deletes a zone with its records, tombstones and shares.
    func deleteZone(_ zone: StoredZone) async throws
    /// Records the latest change of each zone in the database's history,
    /// keeping each entry's ``ZoneLogEntry/originSince`` by its rule (the
    /// entry's own value is not read).
    func logZoneChanges(_ entries: [ZoneLogEntry], inDatabase database: Int64) async throws
    /// The zone changes with a serial above `serial`, oldest first, at most `limit`.
    func zoneLog(inDatabase database: Int64, after serial: Int64, limit: Int) async throws -> [ZoneLogEntry]
    /// Forgets a database's zone history (the zone names in it), for a removed user's databases.
    func deleteZoneLog(inDatabase database: Int64) async throws

    // MARK: Records

    /// The rows (records and tombstones) of the named records of a zone.
    func records(named names: [String], inZone zone: Int64) async throws -> [StoredRecord]
    /// Inserts or replaces rows.
    func saveRecords(_ records: [StoredRecord], inZone zone: Int64) async throws
    /// The names of the live records of a zone that refer to any of `names`
    /// with `DELETE_SELF`.
    func deleteSelfReferrers(of names: [String], inZone zone: Int64) async throws -> [String]
    /// The rows changed after `serial`, oldest first, at most `limit`, of
    /// the given record types (all for `nil`). A store that keeps records in
    /// their wire form answers that form, not decoded: a page of changes is
    /// written from it as it is.
    func changes(inZone zone: Int64, after serial: Int64, recordTypes: [String]?, limit: Int) async throws
        -> [StoredChange]
    /// Every live record of a type in a zone.
    func liveRecords(ofType recordType: String, inZone zone: Int64) async throws -> [StoredRecord]
    /// At most `limit` live records of a zone whose names come after
    /// `name` (from the first for `nil`), in byte order of their names.
    func liveRecords(inZone zone: Int64, after name: String?, limit: Int) async throws -> [StoredRecord]
    /// The live records of a zone whose parent is one of `names`.
    func children(of names: [String], inZone zone: Int64) async throws -> [StoredRecord]
    /// The names of at most `limit` live records of a zone that `creator` created.
    func liveRecordNames(createdBy creator: String, inZone zone: Int64, limit: Int) async throws -> [String]

    // MARK: Shares

    /// The shares of a zone.
    func shares(inZone zone: Int64) async throws -> [StoredShare]
    /// The share with this shortGUID, or `nil` (the service checks its container).
    func share(shortGUID: String) async throws -> StoredShare?
    /// The shares in which `user` is a participant who accepted.
    func shares(acceptedBy user: String, container: String, environment: CloudEnvironment) async throws
        -> [StoredShare]
    /// Creates or replaces the share of its zone with its record name.
    func saveShare(_ share: StoredShare) async throws
    /// Deletes the share of a zone with this record name, if any.
    func deleteShare(recordName: String, inZone zone: Int64) async throws

    // MARK: Subscriptions

    /// The database's subscriptions: of one user, or of all for `nil`.
    func subscriptions(inDatabase database: Int64, user: String?) async throws -> [StoredSubscription]
    /// Creates or replaces a subscription.
    func saveSubscription(_ subscription: StoredSubscription, inDatabase database: Int64) async throws
    /// Deletes a subscription; `false` when there was none.
    func deleteSubscription(_ subscriptionID: String, user: String, inDatabase database: Int64) async throws -> Bool

    // MARK: Query notifications

    /// Keeps notifications of a write, in order.
    func logQueryNotifications(_ notifications: [StoredQueryNotification], inDatabase database: Int64) async throws
    /// A user's notifications of the writes with a serial above `serial` and
    /// at most `last`, oldest write first, each write's in the order logged.
    func queryNotifications(inDatabase database: Int64, user: String, after serial: Int64, through last: Int64)
        async throws -> [StoredQueryNotification]
    /// Deletes the notifications logged before `logged` (milliseconds since 1970), of every database.
    func deleteQueryNotifications(loggedBefore logged: Int64) async throws

    // MARK: Accounts

    /// Creates a container; `false` when the name is taken.
    func createContainer(named name: String, tokenHash: String) async throws -> Bool
    /// The hash of a container's API token, or `nil` for an unknown container.
    func containerTokenHash(named name: String) async throws -> String?
    /// How many containers there are.
    func containerCount() async throws -> Int
    /// The names of every container, in the order of their bytes.
    func containerNames() async throws -> [String]
    /// Gives a user an email address others find them by (or none), and
    /// says whether lookups may return them; `false` for an unknown user.
    func setUserEmail(
        _ emailAddress: String?, discoverable: Bool, recordName: String, container: String
    ) async throws -> Bool
    /// Gives a user the name others see (or none); `false` for an unknown
    /// user. The name is as ``UserNames`` made it.
    func setUserName(_ name: UserNameComponents?, recordName: String, container: String) async throws -> Bool
    /// The users of a container with these (lowercased) email addresses.
    func users(withEmailAddresses addresses: [String], container: String) async throws -> [StoredUser]
    /// The users of a container with these record names.
    func users(withRecordNames names: [String], container: String) async throws -> [StoredUser]
    /// Registers a server-to-server key.
    func createServerKey(id: String, publicKeyPEM: String, container: String) async throws
    /// A server-to-server key's PEM.
    func serverKey(id: String, container: String) async throws -> String?
    /// Whether a user's storage is full.
    func isQuotaExceeded(user: String, container: String, environment: CloudEnvironment) async throws -> Bool
    /// Fills or empties a user's storage.
    func setQuotaExceeded(_ exceeded: Bool, user: String, container: String, environment: CloudEnvironment)
        async throws

    // MARK: Identity issuers and identities

    /// The identity issuers of a container.
    func identityIssuers(container: String) async throws -> [StoredIdentityIssuer]
    /// Creates the container's issuer, or replaces the one with the same `issuer`.
    func saveIdentityIssuer(_ issuer: StoredIdentityIssuer, container: String) async throws
    /// Deletes a container's issuer (its users and identities stay); `false` when there was none.
    func deleteIdentityIssuer(_ issuer: String, container: String) async throws -> Bool
    /// The record name of the user an issuer's subject signs in as, or `nil`.
    func identityUser(issuer: String, subject: String, container: String) async throws -> String?
    /// Maps an issuer's subject to a user unless it is mapped; `false` when it was.
    func createIdentity(issuer: String, subject: String, userRecordName: String, container: String) async throws
        -> Bool
    /// Deletes every identity that signs in as a user, and returns how many there were.
    func deleteIdentities(ofUser userRecordName: String, container: String) async throws -> Int
    /// Every identity of a container, by issuer and subject.
    func identities(container: String) async throws -> [StoredIdentity]

    // MARK: Blocked identities

    /// Keeps an issuer's subject out of a container; `false` when it was
    /// blocked already (its row, and when it was blocked, stay).
    func blockIdentity(_ identity: StoredBlockedIdentity, container: String) async throws -> Bool
    /// Lets an issuer's subject in again; `false` when it was not blocked.
    func unblockIdentity(issuer: String, subject: String, container: String) async throws -> Bool
    /// Whether an issuer's subject is kept out of a container.
    func isIdentityBlocked(issuer: String, subject: String, container: String) async throws -> Bool
    /// Whether an identity that signs in as the user is blocked (a user
    /// made by the operator has none: never).
    func isUserBlocked(_ userRecordName: String, container: String) async throws -> Bool
    /// The blocked identities of a container, by issuer and subject.
    func blockedIdentities(container: String) async throws -> [StoredBlockedIdentity]

    // MARK: Notification channels

    /// Stores a new channel.
    func createChannel(_ channel: StoredChannel) async throws
    /// The channel whose token has this hash, or `nil`.
    func channel(tokenHash: String) async throws -> StoredChannel?
    /// Records that a poll used the channel at `lastUsed` (milliseconds since 1970).
    func touchChannel(tokenHash: String, lastUsed: Int64) async throws
    /// Deletes the channels no poll has used since `lastUsed`.
    func deleteChannels(unusedSince lastUsed: Int64) async throws
    /// Deletes the channels of `user` on database `key` but the `count`
    /// most recently used (ties broken by token hash, highest kept).
    func deleteChannels(of key: DatabaseKey, user: String, keepingNewest count: Int) async throws
    /// Deletes every channel of a user of a container.
    func deleteChannels(ofUser user: String, container: String) async throws
    /// Deletes the channel whose token has this hash, if any.
    func deleteChannel(tokenHash: String) async throws
    /// Every channel of a user of a container, on any of their databases.
    func channels(ofUser user: String, container: String) async throws -> [StoredChannel]

    // MARK: Restores

    /// The identity the store recorded the last time it took notice of
    /// what it is (see ``StoreRestores``), or `nil` when it never did.
    func storeIdentity() async throws -> String?
    /// Records the store's identity.
    func setStoreIdentity(_ identity: String) async throws
    /// Draws every database's and every zone's incarnation anew, each at
    /// random in `1..<bound`: every sync token and change tag given before
    /// names an incarnation the store no longer has.
    func renewIncarnations(below bound: Int64) async throws
    /// Deletes every notification channel.
    func deleteAllChannels() async throws

    // MARK: Schema

    /// The field types of an environment's schema.
    func fieldTypes(container: String, environment: CloudEnvironment) async throws -> [StoredFieldType]
    /// Adds field types the schema does not have yet (existing ones are kept).
    func addFieldTypes(_ types: [StoredFieldType], container: String, environment: CloudEnvironment) async throws

    // MARK: Footprint

    /// The bytes the store's database takes, or `nil` when it cannot tell.
    func storedBytes() async throws -> Int64?
    /// How many assets the store keeps a row of, and the sum of their sizes.
    func assetTotals() async throws -> (count: Int64, bytes: Int64)
}
