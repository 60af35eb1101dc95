import CloudCodable
import CloudProtocol
import Foundation

/// What deleting a user's data took away.
public struct UserDataDeletion: Sendable, Hashable {
    /// The zones of the user's private databases deleted (default zones
    /// included, which are made again empty).
    public var zones = 0
    /// The records of the public databases deleted: the user's, and those
    /// that referred to them with `DELETE_SELF`.
    public var publicRecords = 0
    /// The other users' shares the user left.
    public var sharesLeft = 0
    /// The user's subscriptions deleted, of every database.
    public var subscriptions = 0

    /// Creates an empty account.
    public init() {}
}

extension RecordService {
    /// The date of the service's clock (the `now` it was created with).
    public func currentDate() -> Date {
        now()
    }

    /// Deletes everything a user of a container owns or takes part in, in
    /// both environments, by the protocol's own rules:
    ///
    /// - the user leaves every share of another user's they accepted, as
    ///   the user deleting the share from their shared database would;
    /// - the records they created in the public database are deleted as the
    ///   user deleting them would, so records that refer to them with
    ///   `DELETE_SELF` go too, and query subscriptions fire;
    /// - every zone of their private database is deleted with its records
    ///   (the default zone is made again, empty), and the shares of those zones end: their
    ///   participants lose access and see the zone leave their shared
    ///   database, as when an owner deletes a shared zone;
    /// - their subscriptions, notification channels and the zone histories of
    ///   their private and shared databases are deleted;
    /// - the assets of what was deleted are released, so the collector
    ///   deletes their bytes after the grace period.
    ///
    /// Records the user saved in other users' shared zones belong to those
    /// zones and stay. Each step is its own transaction, and a step finds
    /// what is left, so a deletion that failed half way is finished by
    /// running it again. The caller takes the user's credentials away
    /// first, so that nothing is added meanwhile.
    public func deleteData(ofUser user: String, container: String) async throws -> UserDataDeletion {
        try NameRules.check(user, "the user's record name")
        try NameRules.check(container, "the container name")
        guard !user.isEmpty else { throw CloudError(.badRequest, reason: "a user's record name is not empty") }
        var deletion = UserDataDeletion()
        for environment in CloudEnvironment.allCases {
            deletion.sharesLeft += try await leaveShares(of: user, container: container, environment: environment)
            deletion.publicRecords += try await deletePublicRecords(
                of: user, container: container, environment: environment)
            let privateKey = DatabaseKey(container: container, environment: environment, scope: .private, owner: user)
            deletion.zones += try await deleteZones(of: privateKey)
            deletion.subscriptions += try await deleteSubscriptions(
                of: user, container: container, environment: environment)
            try await storage.write { transaction in
                for scope in [DatabaseScope.private, .shared] {
                    let key = DatabaseKey(container: container, environment: environment, scope: scope, owner: user)
                    guard let database = try await transaction.database(key) else { continue }
                    try await transaction.deleteZoneLog(inDatabase: database.id)
                    let zones = try await transaction.zones(inDatabase: database.id, named: nil)
                    // What is left is the new, empty default zone, logged as a fresh database logs it.
                    try await transaction.logZoneChanges(
                        zones.map { ZoneLogEntry(zoneName: $0.name, serial: database.serial, deleted: false) },
                        inDatabase: database.id)
                }
                try await transaction.setQuotaExceeded(
                    false, user: user, container: container, environment: environment)
            }
        }
        try await storage.write { transaction in
            try await transaction.deleteChannels(ofUser: user, container: container)
        }
        return deletion
    }

    /// Leaves every share the user accepted, through the shared database.
    private func leaveShares(of user: String, container: String, environment: CloudEnvironment) async throws
        -> Int
    {
        let shares = try await storage.read { transaction in
            try await transaction.shares(acceptedBy: user, container: container, environment: environment)
        }
        let caller = Caller(container: container, environment: environment, scope: .shared, user: user)
        var left = 0
        for share in shares where !share.owner.isExactly(user) {
            let zoneID = ZoneID(zoneName: share.zoneName, ownerRecordName: share.owner)
            let record = Record(recordType: ShareDetails.recordType, recordName: share.recordName, zoneID: zoneID)
            let response = try await perform(
                .modifyRecords(operations: [RecordOperation(.forceDelete, record)], zoneID: zoneID, atomic: false),
                as: caller)
            guard case .records(let results) = response else {
                preconditionFailure("Internal inconsistency: records/modify answers records")
            }
            if case .deleted = results.first { left += 1 }
        }
        return left
    }

    /// Deletes the live records the user created in the public database,
    /// a page at a time, as the user.
    private func deletePublicRecords(of user: String, container: String, environment: CloudEnvironment)
        async throws -> Int
    {
        let key = DatabaseKey(container: container, environment: environment, scope: .public, owner: "")
        let caller = Caller(container: container, environment: environment, scope: .public, user: user)
        var deleted = 0
        while true {
            let page = try await storage.read { transaction -> [(ZoneID, [StoredRecord])] in
                guard let database = try await transaction.database(key) else { return [] }
                var page: [(ZoneID, [StoredRecord])] = []
                for zone in try await transaction.zones(inDatabase: database.id, named: nil) {
                    let names = try await transaction.liveRecordNames(
                        createdBy: user, inZone: zone.id, limit: ServerLimits.operationsPerRequest)
                    guard !names.isEmpty else { continue }
                    page.append(
                        (ZoneID(zoneName: zone.name), try await transaction.records(named: names, inZone: zone.id)))
                }
                return page
            }
            guard !page.isEmpty else { return deleted }
            var progress = false
            for (zoneID, rows) in page {
                let operations = rows.map { row in
                    RecordOperation(
                        .forceDelete, Record(recordType: row.recordType, recordName: row.name, zoneID: zoneID))
                }
                let response = try await perform(
                    .modifyRecords(operations: operations, zoneID: zoneID, atomic: false), as: caller)
                guard case .records(let results) = response else {
                    preconditionFailure("Internal inconsistency: records/modify answers records")
                }
                for result in results {
                    if case .deleted = result {
                        deleted += 1
                        progress = true
                    }
                }
            }
            guard progress else {
                throw CloudError(.internalError, reason: "the user's public records could not be deleted")
            }
        }
    }

    /// Deletes every zone of a private database, one transaction each.
    private func deleteZones(of key: DatabaseKey) async throws -> Int {
        let zones = try await storage.read { transaction -> [StoredZone] in
            guard let database = try await transaction.database(key) else { return [] }
            return try await transaction.zones(inDatabase: database.id, named: nil)
        }
        var deleted = 0
        for zone in zones {
            let time = ServerTime.milliseconds(now())
            let written = try await storage.write { transaction -> ([StoredSubscription], [DatabaseKey])? in
                guard var database = try await transaction.database(key),
                    let current = try await transaction.zones(inDatabase: database.id, named: [zone.name]).first
                else { return nil }
                let sharedKeys = try await Self.removeZone(current, of: key, database: &database, at: time, transaction)
                var entry = ZoneLogEntry(zoneName: current.name, serial: database.serial, deleted: true)
                if current.name.isExactly(ZoneID.defaultZone.zoneName) {
                    // A database always has its default zone: an empty one, whose old sync tokens expire.
                    _ = try await transaction.createZone(
                        named: current.name, inDatabase: database.id,
                        incarnation: ServerChangeToken.makeIncarnation())
                    database.serial += 1
                    entry = ZoneLogEntry(zoneName: current.name, serial: database.serial, deleted: false)
                }
                try await transaction.logZoneChanges([entry], inDatabase: database.id)
                try await transaction.updateDatabase(database)
                return (try await transaction.subscriptions(inDatabase: database.id, user: nil), sharedKeys)
            }
            guard let written else { continue }
            let (subscriptions, sharedKeys) = written
            deleted += 1
            notify(key, changedZones: [zone.name], subscriptions: subscriptions)
            for sharedKey in sharedKeys { notify(sharedKey, changedZones: [zone.name], subscriptions: []) }
        }
        return deleted
    }

    /// Deletes the user's subscriptions of every database they have:
    /// their own private and shared ones whole, and theirs of the public one.
    private func deleteSubscriptions(of user: String, container: String, environment: CloudEnvironment)
        async throws -> Int
    {
        try await storage.write { transaction in
            var deleted = 0
            for scope in [DatabaseScope.private, .shared, .public] {
                let key = DatabaseKey(container: container, environment: environment, scope: scope, owner: user)
                guard let database = try await transaction.database(key) else { continue }
                for stored in try await transaction.subscriptions(inDatabase: database.id, user: user) {
                    let subscriptionID = stored.subscription.subscriptionID
                    if try await transaction.deleteSubscription(subscriptionID, user: user, inDatabase: database.id) {
                        deleted += 1
                    }
                }
            }
            return deleted
        }
    }
}
