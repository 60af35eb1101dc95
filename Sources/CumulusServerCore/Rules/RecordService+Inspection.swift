import CloudCodable
import CloudProtocol

/// A share of a zone as the operator's console shows it: the stored share
/// (participants, permissions, root) and the title its record carries.
public struct InspectedShare: Sendable, Hashable {
    /// The share's row.
    public var share: StoredShare
    /// The share record's `cloudkit.title`, if it has one.
    public var title: String?

    /// Creates a share.
    public init(share: StoredShare, title: String?) {
        self.share = share
        self.title = title
    }
}

/// What storage keeps of a record: its last change (the storage keeps no
/// older version), whether that change deleted it, and the shares that
/// cover it.
public struct RecordStanding: Sendable, Hashable {
    /// The record's name.
    public var recordName: String
    /// The record's type (a tombstone keeps it).
    public var recordType: String
    /// Whether the last change deleted the record: only its tombstone is left.
    public var isDeleted: Bool
    /// The zone serial of the record's last change.
    public var serial: Int64
    /// The zone serial of the zone's last change of any record.
    public var zoneSerial: Int64
    /// The hierarchy share that covers the record (its own, or its nearest
    /// ancestor's through `parent`), if any.
    public var hierarchyShare: StoredShare?
    /// The zone-wide share of the zone, if it has one: it covers every record.
    public var zoneShare: StoredShare?
    /// The record's ancestors through `parent`, nearest first, as far as
    /// they exist (at most ``RecordService/ancestryLimit``).
    public var ancestors: [String]

    /// Creates a standing.
    public init(
        recordName: String, recordType: String, isDeleted: Bool, serial: Int64, zoneSerial: Int64,
        hierarchyShare: StoredShare?, zoneShare: StoredShare?, ancestors: [String]
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.isDeleted = isDeleted
        self.serial = serial
        self.zoneSerial = zoneSerial
        self.hierarchyShare = hierarchyShare
        self.zoneShare = zoneShare
        self.ancestors = ancestors
    }
}

/// Why a user does or does not see another user's record through their
/// shared database, by the rules of shares (see
/// ``RecordService/shareReach(of:inZone:owner:viewer:)``).
public enum ShareReach: Sendable, Hashable {
    /// The viewer owns the zone: the record is in their private database.
    case owner
    /// The viewer accepted a share that covers the record (named by its
    /// record name: its shortGUID is a credential for a public share).
    case visible(share: String, permission: SharePermission)
    /// The viewer is invited to a share that covers the record but has not accepted it.
    case notAccepted(share: String, status: ShareAcceptanceStatus)
    /// The viewer takes part in a share of the zone that does not cover the
    /// record, or the record is under no share at all.
    case outsideShares
    /// No share that covers the record names the viewer.
    case notParticipant
}

/// A user's notification channel, without its token or its token's hash.
public struct ChannelSummary: Sendable, Hashable {
    /// The database the channel hears.
    public var key: DatabaseKey
    /// The database's serial when the channel was opened.
    public var start: Int64
    /// When a poll last used the channel (or it was opened), in milliseconds since 1970.
    public var lastUsed: Int64

    /// Creates a summary.
    public init(key: DatabaseKey, start: Int64, lastUsed: Int64) {
        self.key = key
        self.start = start
        self.lastUsed = lastUsed
    }
}

/// How much the store holds.
public struct StorageFootprint: Sendable, Hashable {
    /// The bytes of the store's database, or `nil` when it cannot tell.
    public var databaseBytes: Int64?
    /// How many assets the store keeps.
    public var assetCount: Int64
    /// The sum of their sizes.
    public var assetBytes: Int64

    /// Creates a footprint.
    public init(databaseBytes: Int64?, assetCount: Int64, assetBytes: Int64) {
        self.databaseBytes = databaseBytes
        self.assetCount = assetCount
        self.assetBytes = assetBytes
    }
}

/// Reads for the operator's console that the protocol has no request for:
/// each reaches a zone as the caller's own request would (``ZoneAccess``),
/// so it shows no more than the caller may see.
extension RecordService {
    /// How many ancestors ``recordStanding(named:in:as:)`` follows.
    public static let ancestryLimit = 32

    /// The shares of a zone with their titles: every share for the zone's
    /// owner; through the shared database, those the caller accepted.
    ///
    /// - Throws: `ZONE_NOT_FOUND` for a zone the caller cannot reach.
    public func shares(in zoneID: ZoneID, as caller: Caller) async throws -> [InspectedShare] {
        let context = try Self.inspectionContext(caller, zoneID: zoneID, names: [])
        let shares = try await storage.read { transaction -> [InspectedShare]? in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: true, transaction)
            else { return nil }
            let shares = access.shares.filter { share in
                guard let viewer = access.view.participant else { return true }
                return ShareRules.acceptedParticipant(viewer, in: share) != nil
            }
            let rows = try await transaction.records(named: shares.map(\.recordName), inZone: access.zone.id)
            var titles: [ExactName: String] = [:]
            for row in rows {
                if case .string(let title)? = row.record?[ShareDetails.titleField] {
                    titles[ExactName(row.name)] = title
                }
            }
            return shares.sorted { ExactName($0.recordName) < ExactName($1.recordName) }.map {
                InspectedShare(share: $0, title: titles[ExactName($0.recordName)])
            }
        }
        guard let shares else { throw ServerLimits.zoneNotFound(zoneID, recordName: nil) }
        return shares
    }

    /// What storage keeps of a record the caller may see, live or deleted,
    /// and the shares that cover it; `nil` when there is no such row or the
    /// caller may not see it.
    ///
    /// - Throws: `ZONE_NOT_FOUND` for a zone the caller cannot reach.
    public func recordStanding(named name: String, in zoneID: ZoneID, as caller: Caller) async throws
        -> RecordStanding?
    {
        let context = try Self.inspectionContext(caller, zoneID: zoneID, names: [name])
        let standing = try await storage.read { transaction -> RecordStanding?? in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: true, transaction)
            else { return .none }
            guard let row = try await transaction.records(named: [name], inZone: access.zone.id).first,
                access.view.canSee(row.shareKey)
            else { return .some(nil) }
            var ancestors: [String] = []
            var next = row.record?.parent
            // A parent chain may loop or leave the zone: follow it a bounded number of steps.
            while let parent = next, ancestors.count < Self.ancestryLimit,
                !ancestors.contains(where: { $0.isExactly(parent) }),
                let parentRow = try await transaction.records(named: [parent], inZone: access.zone.id).first,
                parentRow.record != nil
            {
                ancestors.append(parent)
                next = parentRow.record?.parent
            }
            let hierarchy = row.shareKey.flatMap { key in access.shares.first { $0.shortGUID.isExactly(key) } }
            return .some(
                RecordStanding(
                    recordName: row.name, recordType: row.recordType, isDeleted: row.record == nil, serial: row.serial,
                    zoneSerial: access.zone.serial, hierarchyShare: hierarchy,
                    zoneShare: access.shares.first { $0.rootRecordName == nil }, ancestors: ancestors))
        }
        guard let standing else { throw ServerLimits.zoneNotFound(zoneID, recordName: name) }
        return standing
    }

    /// The records deleted among a zone's last `changes` changes (at most
    /// 200), newest first, as tombstones the caller may see: what storage
    /// keeps of a deleted record (its name, type and serial). A zone's last
    /// changes are one bounded read, since each change takes the next serial.
    ///
    /// - Throws: `ZONE_NOT_FOUND` for a zone the caller cannot reach.
    public func recentDeletions(in zoneID: ZoneID, lastChanges changes: Int, as caller: Caller) async throws
        -> [RecordStanding]
    {
        let window = max(1, min(changes, 200))
        let context = try Self.inspectionContext(caller, zoneID: zoneID, names: [])
        let deletions = try await storage.read { transaction -> [RecordStanding]? in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: false, transaction)
            else { return nil }
            let after = max(0, access.zone.serial - Int64(window))
            let rows = try await transaction.changes(
                inZone: access.zone.id, after: after, recordTypes: nil, limit: window)
            let names = rows.filter { row in
                guard case .deleted = row.contents else { return false }
                return access.view.canSee(row.shareKey)
            }.map(\.name)
            let tombstones = try await transaction.records(named: names, inZone: access.zone.id)
            return tombstones.filter { $0.record == nil }.sorted { $0.serial > $1.serial }.map { row in
                RecordStanding(
                    recordName: row.name, recordType: row.recordType, isDeleted: true, serial: row.serial,
                    zoneSerial: access.zone.serial, hierarchyShare: nil, zoneShare: nil, ancestors: [])
            }
        }
        guard let deletions else { throw ServerLimits.zoneNotFound(zoneID, recordName: nil) }
        return deletions
    }

    /// Why `viewer` does or does not see the record `name` of `owner`'s
    /// private zone `zoneName` through their shared database: the rules
    /// ``ShareView`` applies, said in words. The viewer's own
    /// `records/lookup` is what decides; this says why.
    ///
    /// - Throws: `ZONE_NOT_FOUND` for a zone `owner` does not have;
    ///   `NOT_FOUND` for a record they do not have.
    public func shareReach(of name: String, inZone zoneName: String, owner: Caller, viewer: String) async throws
        -> ShareReach
    {
        let zoneID = ZoneID(zoneName: zoneName)
        guard owner.scope == .private, let ownerName = owner.user else {
            throw CloudError(.badRequest, reason: "shares are reached through their owner's private database")
        }
        if ownerName.isExactly(viewer) { return .owner }
        guard let standing = try await recordStanding(named: name, in: zoneID, as: owner), !standing.isDeleted else {
            throw CloudError(.notFound, reason: "the record '\(name)' does not exist", recordName: name)
        }
        let shares = try await self.shares(in: zoneID, as: owner).map(\.share)
        let email = try await storage.read { transaction in
            try await transaction.users(withRecordNames: [viewer], container: owner.container).first?.emailAddress
        }
        let covering = [standing.zoneShare, standing.hierarchyShare].compactMap { $0 }
        for share in covering {
            if let entry = ShareRules.acceptedParticipant(viewer, in: share) {
                return .visible(share: share.recordName, permission: entry.permission)
            }
        }
        for share in covering {
            if let index = ShareRules.participantIndex(of: viewer, emailAddress: email, in: share.participants) {
                return .notAccepted(share: share.recordName, status: share.participants[index].acceptanceStatus)
            }
        }
        let elsewhere = shares.contains {
            ShareRules.participantIndex(of: viewer, emailAddress: email, in: $0.participants) != nil
        }
        return elsewhere || covering.isEmpty ? .outsideShares : .notParticipant
    }

    /// A user's notification channels on every database of a container,
    /// most recently used first: never their tokens, nor the tokens' hashes.
    public func channels(ofUser user: String, container: String) async throws -> [ChannelSummary] {
        let channels = try await storage.read { try await $0.channels(ofUser: user, container: container) }
        return channels.sorted { ($0.lastUsed, $0.tokenHash) > ($1.lastUsed, $1.tokenHash) }.map {
            ChannelSummary(key: $0.key, start: $0.start, lastUsed: $0.lastUsed)
        }
    }

    /// A user's subscriptions in one database, as `subscriptions/list`
    /// answers them, read without making the database (a user who never
    /// used it has none, and a console page changes nothing).
    public func subscriptions(of caller: Caller) async throws -> [Subscription] {
        try NameRules.check(caller)
        return try await listSubscriptions(context: try RequestContext(caller, request: .listSubscriptions))
    }

    /// How much the store holds: its database's bytes and its assets'.
    public func footprint() async throws -> StorageFootprint {
        try await storage.read { transaction in
            let assets = try await transaction.assetTotals()
            return StorageFootprint(
                databaseBytes: try await transaction.storedBytes(), assetCount: assets.count, assetBytes: assets.bytes)
        }
    }

    /// The context of a console read, checked as the lookup of `names` would be.
    private static func inspectionContext(_ caller: Caller, zoneID: ZoneID, names: [String]) throws -> RequestContext {
        let request = CloudRequest.lookupRecords(recordNames: names, zoneID: zoneID, desiredKeys: nil)
        try NameRules.check(caller)
        try NameRules.check(request)
        return try RequestContext(caller, request: request)
    }
}
