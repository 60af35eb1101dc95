import CloudCodable
import CloudProtocol

/// A zone as one request reaches it: the database that owns it, what the
/// caller names it in answers, and what the caller may see of it.
struct ZoneAccess: Sendable {
    /// The database that owns the zone: the caller's own, or, through the
    /// shared database, the owner's private one.
    var key: DatabaseKey
    var database: StoredDatabase
    var zone: StoredZone
    /// The zone as answers name it: with its owner in the shared database.
    var zoneID: ZoneID
    /// The zone's shares (read for the shared database and for writes).
    var shares: [StoredShare]
    var view: ShareView

    /// The zone `zoneID` names for the context, or `nil` when there is none
    /// the caller may reach: in the shared database, a zone none of whose
    /// shares the caller accepted is as missing as one that does not exist.
    static func open(
        _ zoneID: ZoneID, context: RequestContext, readingShares: Bool, _ transaction: any StorageTransaction
    ) async throws -> ZoneAccess? {
        guard let target = context.target(zoneID), let database = try await transaction.database(target.key),
            let zone = try await transaction.zones(inDatabase: database.id, named: [target.zoneName]).first
        else { return nil }
        guard context.key.scope == .shared else {
            let shares = readingShares ? try await transaction.shares(inZone: zone.id) : []
            return ZoneAccess(
                key: target.key, database: database, zone: zone, zoneID: ZoneID(zoneName: zone.name), shares: shares,
                view: .owner)
        }
        let shares = try await transaction.shares(inZone: zone.id)
        guard let user = context.user, let view = ShareView.participant(user, shares: shares) else { return nil }
        return ZoneAccess(
            key: target.key, database: database, zone: zone,
            zoneID: ZoneID(zoneName: zone.name, ownerRecordName: target.key.owner), shares: shares, view: view)
    }

    /// The zone as the caller's sync tokens see it. Through the shared
    /// database its incarnation also stands for the shares the caller
    /// accepted in it: a token from before the caller gained or lost one
    /// expires, and the fetch from the start that follows shows exactly
    /// what the shares cover now (records of a lost share as gone, those
    /// of a new one as there).
    var tokenZone: StoredZone {
        guard let participant = view.participant else { return zone }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ bytes: some Sequence<UInt8>) {
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            hash ^= 0xff
            hash = hash &* 0x0000_0100_0000_01b3
        }
        mix(String(zone.incarnation).utf8)
        let accepted = shares.filter { ShareRules.acceptedParticipant(participant, in: $0) != nil }
            .map { ExactName($0.shortGUID) }.sorted()
        for guid in accepted { mix(guid.string.utf8) }
        var tokenZone = zone
        // Below 2^53 and above 0, as every incarnation.
        tokenZone.incarnation = Int64(hash % ((1 << 53) - 1)) + 1
        return tokenZone
    }

    /// Whether `user` accepted the share named `recordName` as one of its administrators.
    func isAdministrator(_ user: String, ofShare recordName: String) -> Bool {
        guard let share = shares.first(where: { $0.recordName.isExactly(recordName) }) else { return false }
        return ShareRules.acceptedParticipant(user, in: share)?.role == .administrator
    }

    /// `record` as the caller reads it: named in the caller's terms, a share
    /// record with the caller's own entry.
    func present(_ record: Record, to viewer: String?) -> Record {
        var presented = ShareRules.presented(record, to: viewer, owner: key.owner.isEmpty ? "" : key.owner)
        if zoneID.ownerRecordName != nil {
            presented.zoneID = zoneID
            presented.metadata?.zoneID = zoneID
        }
        return presented
    }
}

extension RequestContext {
    /// The database and zone name `zoneID` designates for the caller: its
    /// own zone in the private and public databases; in the shared
    /// database, another user's zone, named with its owner.
    func target(_ zoneID: ZoneID) -> (key: DatabaseKey, zoneName: String)? {
        guard key.scope == .shared else { return ownZoneName(zoneID).map { (key, $0) } }
        guard let user, let owner = zoneID.namedOwner, !owner.isEmpty, !owner.isExactly(user)
        else { return nil }
        return (
            DatabaseKey(container: key.container, environment: key.environment, scope: .private, owner: owner),
            zoneID.zoneName
        )
    }
}

/// The participants' shared databases: each has a zone history of the
/// zones shared with its user, written when a share or its records change.
enum SharedDatabases {
    /// Records, in the shared database of every participant who accepted a
    /// share of the zone before or after a write, that the zone changed for
    /// them (a share they have was `touched`, or they gained the zone) or
    /// left their database (they have no accepted share of it any more).
    ///
    /// - Returns: the shared databases written, to notify once committed.
    static func log(
        zoneName: String, owner: String, container: String, environment: CloudEnvironment,
        before: [StoredShare], after: [StoredShare], touched: (StoredShare) -> Bool,
        _ transaction: any StorageTransaction
    ) async throws -> [DatabaseKey] {
        var users: [ExactName: (had: Bool, has: Bool, touched: Bool)] = [:]
        for share in before {
            for user in acceptedUsers(of: share) { users[user, default: (false, false, false)].had = true }
        }
        for share in after {
            let wasTouched = touched(share)
            for user in acceptedUsers(of: share) {
                users[user, default: (false, false, false)].has = true
                if wasTouched { users[user]?.touched = true }
            }
        }
        var keys: [DatabaseKey] = []
        for (user, state) in users.sorted(by: { $0.key < $1.key }) {
            let deleted: Bool
            if state.has {
                guard state.touched || !state.had else { continue }
                deleted = false
            } else {
                deleted = true
            }
            let key = DatabaseKey(container: container, environment: environment, scope: .shared, owner: user.string)
            var database = try await transaction.createDatabase(key, incarnation: ServerChangeToken.makeIncarnation())
            database.serial += 1
            try await transaction.logZoneChanges(
                [ZoneLogEntry(zoneName: zoneName, ownerRecordName: owner, serial: database.serial, deleted: deleted)],
                inDatabase: database.id)
            try await transaction.updateDatabase(database)
            keys.append(key)
        }
        return keys
    }

    private static func acceptedUsers(of share: StoredShare) -> [ExactName] {
        share.participants.compactMap { participant in
            guard participant.role != .owner, participant.acceptanceStatus == .accepted,
                let user = participant.userRecordName, !user.isExactly(share.owner)
            else { return nil }
            return ExactName(user)
        }
    }
}
