import Cumulus

/// Which database a request reaches: each user's private and shared
/// databases, and the one public database.
enum DatabaseKey: Hashable, Sendable {
    case privateDatabase(user: String)
    case publicDatabase
    case sharedDatabase(user: String)

    init(scope: DatabaseScope, user: String) {
        switch scope {
        case .private: self = .privateDatabase(user: user)
        case .public: self = .publicDatabase
        case .shared: self = .sharedDatabase(user: user)
        }
    }

    var scope: DatabaseScope {
        switch self {
        case .privateDatabase: .private
        case .publicDatabase: .public
        case .sharedDatabase: .shared
        }
    }
}

/// Who is asking, through which handle, in which database.
struct Caller: Sendable {
    var user: String
    var scope: DatabaseScope
    var handleID: Int

    var databaseKey: DatabaseKey { DatabaseKey(scope: scope, user: user) }
}

/// Whose subscriptions: each user's own, per database.
struct SubscriptionOwner: Hashable, Sendable {
    var user: String
    var scope: DatabaseScope
}

/// One record's place in its zone's change history: the record as it is,
/// or its tombstone.
struct RecordEntry: Sendable {
    /// The zone's change serial of the record's last change.
    var serial: Int
    var recordName: String
    var recordType: String
    /// The stored record, or `nil` once deleted.
    var record: Record?
}

/// A zone: its records and tombstones, each stamped with the serial of its
/// last change. A sync token is a serial; the changes since a token are the
/// entries with a greater serial, so only each record's latest state comes back.
struct ZoneState: Sendable {
    /// Tokens carry it; a new incarnation (the zone recreated, or its tokens
    /// expired on purpose) makes every older token expired.
    var incarnation: Int
    /// The serial of the zone's last change.
    var serial = 0
    var entries: [String: RecordEntry] = [:]
    /// The record whose latest change has each serial: a page of changes
    /// walks serials in order instead of sorting every entry.
    var namesBySerial: [Int: String] = [:]

    init(incarnation: Int) {
        self.incarnation = incarnation
    }

    var syncToken: SyncToken {
        ChangeToken(kind: .zone, incarnation: incarnation, serial: serial).syncToken
    }

    func record(named name: String) -> Record? {
        entries[name]?.record
    }

    var liveRecords: [Record] {
        entries.values.compactMap(\.record)
    }

    mutating func save(_ record: Record) {
        serial += 1
        if let old = entries[record.recordName]?.serial { namesBySerial[old] = nil }
        namesBySerial[serial] = record.recordName
        entries[record.recordName] = RecordEntry(
            serial: serial, recordName: record.recordName, recordType: record.recordType, record: record)
    }

    /// Leaves a tombstone for the record, if it exists.
    mutating func delete(_ name: String) {
        guard let entry = entries[name], entry.record != nil else { return }
        serial += 1
        namesBySerial[entry.serial] = nil
        namesBySerial[serial] = name
        entries[name] = RecordEntry(serial: serial, recordName: name, recordType: entry.recordType, record: nil)
    }
}

/// A database: its zones, and the history of which zones changed.
struct DatabaseState: Sendable {
    struct ZoneLogEntry: Sendable {
        var serial: Int
        var deleted: Bool
    }

    let scope: DatabaseScope
    var incarnation: Int
    var zones: [String: ZoneState] = [:]
    var zoneLog: [String: ZoneLogEntry] = [:]
    var serial = 0

    init(scope: DatabaseScope, incarnation: Int) {
        self.scope = scope
        self.incarnation = incarnation
    }

    /// Whether clients may create zones other than the default one (only in
    /// the private database: the public one has its default zone only, and
    /// shared zones are other users' zones).
    var allowsCustomZones: Bool { scope == .private }

    /// Whether `changes/zone` and `changes/database` answer (not in the public database).
    var hasChangeHistory: Bool { scope != .public }

    var syncToken: SyncToken {
        ChangeToken(kind: .database, incarnation: incarnation, serial: serial).syncToken
    }

    /// Records that the zone changed (or was created, or deleted).
    mutating func logChange(ofZone name: String, deleted: Bool = false) {
        serial += 1
        zoneLog[name] = ZoneLogEntry(serial: serial, deleted: deleted)
    }
}

/// A sync token's contents: `z<incarnation>-<serial>` for zones,
/// `d<incarnation>-<serial>` for databases.
struct ChangeToken: Sendable, Hashable {
    enum Kind: Character, Sendable {
        case zone = "z"
        case database = "d"
    }

    var kind: Kind
    var incarnation: Int
    var serial: Int

    init(kind: Kind, incarnation: Int, serial: Int) {
        self.kind = kind
        self.incarnation = incarnation
        self.serial = serial
    }

    /// Reads a token the server wrote; `nil` for anything else.
    init?(_ token: SyncToken, kind: Kind) {
        let text = token.rawValue
        guard text.first == kind.rawValue else { return nil }
        let parts = text.dropFirst().split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let incarnation = Int(parts[0]), let serial = Int(parts[1]),
            incarnation >= 0, serial >= 0
        else { return nil }
        self.init(kind: kind, incarnation: incarnation, serial: serial)
    }

    var syncToken: SyncToken {
        SyncToken(rawValue: "\(kind.rawValue)\(incarnation)-\(serial)")
    }
}

/// The limits of the CloudKit Web Services reference.
enum ServerLimits {
    /// The most operations (or items) in one request.
    static let operationsPerRequest = 200
    /// The most records (or zones) in one answer, and the default page size.
    static let resultsPerResponse = 200
}
