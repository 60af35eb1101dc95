import CloudCodable
import CloudProtocol

extension RecordService {
    /// `zones/list`: the default zone first, then the others by name.
    func listZones(context: RequestContext) async throws -> [RecordZone] {
        let key = context.key
        if key.scope == .shared { return try await listSharedZones(context: context) }
        let zones = try await storage.read { transaction -> [StoredZone] in
            guard let database = try await transaction.database(key) else { return [] }
            return try await transaction.zones(inDatabase: database.id, named: nil)
        }
        return zones.sorted { (Self.rank($0.name), ExactName($0.name)) < (Self.rank($1.name), ExactName($1.name)) }
            .map { Self.recordZone($0, scope: key.scope) }
    }

    private static func rank(_ zoneName: String) -> Int {
        zoneName.isExactly(ZoneID.defaultZone.zoneName) ? 0 : 1
    }

    static func recordZone(_ zone: StoredZone, scope: DatabaseScope) -> RecordZone {
        RecordZone(zoneID: ZoneID(zoneName: zone.name), syncToken: scope == .public ? nil : zone.syncToken)
    }

    /// `zones/lookup`.
    func lookupZones(_ zoneIDs: [ZoneID], context: RequestContext) async throws -> [ZoneResult] {
        try ServerLimits.checkItemCount(zoneIDs.count, of: "zones")
        let key = context.key
        if key.scope == .shared {
            return try await storage.read { transaction in
                var results: [ZoneResult] = []
                for zoneID in zoneIDs {
                    if let access = try await ZoneAccess.open(
                        zoneID, context: context, readingShares: true, transaction)
                    {
                        results.append(.zone(RecordZone(zoneID: access.zoneID, syncToken: access.tokenZone.syncToken)))
                    } else {
                        results.append(.failure(ServerLimits.zoneNotFound(zoneID, recordName: nil)))
                    }
                }
                return results
            }
        }
        let names = Set(zoneIDs.compactMap { context.ownZoneName($0).map(ExactName.init) }).map(\.string)
        let zones = try await storage.read { transaction -> [StoredZone] in
            guard let database = try await transaction.database(key) else { return [] }
            return try await transaction.zones(inDatabase: database.id, named: names)
        }
        let byName = Dictionary(zones.map { (ExactName($0.name), $0) }, uniquingKeysWith: { first, _ in first })
        return zoneIDs.map { zoneID in
            guard let name = context.ownZoneName(zoneID), let zone = byName[ExactName(name)] else {
                return .failure(ServerLimits.zoneNotFound(zoneID, recordName: nil))
            }
            return .zone(Self.recordZone(zone, scope: key.scope))
        }
    }

    /// `zones/modify`.
    func modifyZones(_ operations: [ZoneOperation], context: RequestContext) async throws -> [ZoneResult] {
        try ServerLimits.checkItemCount(operations.count, of: "operations")
        var names = Set<ExactName>()
        for operation in operations {
            let zoneID: ZoneID
            switch operation {
            case .create(let id), .delete(let id): zoneID = id
            }
            guard names.insert(ExactName(zoneID.zoneName)).inserted else {
                throw CloudError(
                    .badRequest, reason: "zone '\(zoneID.zoneName)' appears in more than one operation of the request",
                    zoneID: zoneID)
            }
        }
        return try await applyZoneOperations(operations, context: context)
    }

    /// `zones/list` of the shared database: each zone a share the caller
    /// accepted lives in, named with its owner, by owner and name.
    private func listSharedZones(context: RequestContext) async throws -> [RecordZone] {
        guard let user = context.user else { return [] }
        let key = context.key
        return try await storage.read { transaction in
            let shares = try await transaction.shares(
                acceptedBy: user, container: key.container, environment: key.environment)
            var seen = Set<[ExactName]>()
            var zones: [RecordZone] = []
            for share in shares.sorted(by: {
                (ExactName($0.owner), ExactName($0.zoneName)) < (ExactName($1.owner), ExactName($1.zoneName))
            }) {
                guard seen.insert([ExactName(share.owner), ExactName(share.zoneName)]).inserted else { continue }
                let zoneID = ZoneID(zoneName: share.zoneName, ownerRecordName: share.owner)
                if let access = try await ZoneAccess.open(zoneID, context: context, readingShares: true, transaction) {
                    zones.append(RecordZone(zoneID: access.zoneID, syncToken: access.tokenZone.syncToken))
                }
            }
            return zones
        }
    }

    /// Creates and deletes zones in one transaction, records the changes in
    /// the database's history and notifies the database's channels.
    func applyZoneOperations(_ operations: [ZoneOperation], context: RequestContext) async throws -> [ZoneResult] {
        let key = context.key
        let time = ServerTime.milliseconds(now())
        let (results, changed, subscriptions, sharedKeys) = try await storage.write { transaction in
            guard var database = try await transaction.database(key) else {
                throw CloudError(.internalError, reason: "the database has no row")
            }
            var zones: [ExactName: StoredZone] = [:]
            for zone in try await transaction.zones(inDatabase: database.id, named: nil) {
                zones[ExactName(zone.name)] = zone
            }
            var changed: [String] = []
            var sharedKeys: [(DatabaseKey, String)] = []
            var log: [ZoneLogEntry] = []
            var results: [ZoneResult] = []
            for operation in operations {
                switch operation {
                case .create(let zoneID):
                    guard let name = context.ownZoneName(zoneID), !name.isEmpty else {
                        results.append(
                            .failure(
                                CloudError(
                                    .badRequest, reason: "a zone can only be created by its owner", zoneID: zoneID)))
                        continue
                    }
                    if let zone = zones[ExactName(name)] {
                        results.append(.zone(Self.recordZone(zone, scope: key.scope)))
                        continue
                    }
                    guard key.scope == .private else {
                        results.append(
                            .failure(
                                CloudError(
                                    .badRequest,
                                    reason: "zones cannot be created in the \(key.scope.rawValue) database",
                                    zoneID: zoneID)))
                        continue
                    }
                    let zone = try await transaction.createZone(
                        named: name, inDatabase: database.id, incarnation: ServerChangeToken.makeIncarnation())
                    zones[ExactName(name)] = zone
                    database.serial += 1
                    log.append(ZoneLogEntry(zoneName: name, serial: database.serial, deleted: false))
                    changed.append(name)
                    results.append(.zone(Self.recordZone(zone, scope: key.scope)))
                case .delete(let zoneID):
                    guard let name = context.ownZoneName(zoneID), let zone = zones[ExactName(name)] else {
                        results.append(.failure(ServerLimits.zoneNotFound(zoneID, recordName: nil)))
                        continue
                    }
                    guard !name.isExactly(ZoneID.defaultZone.zoneName) else {
                        results.append(
                            .failure(
                                CloudError(.badRequest, reason: "the default zone cannot be deleted", zoneID: zoneID)))
                        continue
                    }
                    let keys = try await Self.removeZone(zone, of: key, database: &database, at: time, transaction)
                    sharedKeys += keys.map { ($0, name) }
                    zones[ExactName(name)] = nil
                    log.append(ZoneLogEntry(zoneName: name, serial: database.serial, deleted: true))
                    changed.append(name)
                    results.append(.deleted(ZoneID(zoneName: name)))
                }
            }
            guard !changed.isEmpty else { return (results, changed, [StoredSubscription](), sharedKeys) }
            try await transaction.logZoneChanges(log, inDatabase: database.id)
            try await transaction.updateDatabase(database)
            return (
                results, changed, try await transaction.subscriptions(inDatabase: database.id, user: nil), sharedKeys
            )
        }
        notify(key, changedZones: changed, subscriptions: subscriptions)
        for (sharedKey, zoneName) in sharedKeys { notify(sharedKey, changedZones: [zoneName], subscriptions: []) }
        return results
    }

    /// Deletes a zone of `key`'s database with its records and shares:
    /// the zone leaves the shared databases of those it was shared with,
    /// its assets are released for collection, and the database's serial
    /// moves on (the caller logs the deletion under it).
    ///
    /// - Returns: the participants' shared databases written, to notify once committed.
    static func removeZone(
        _ zone: StoredZone, of key: DatabaseKey, database: inout StoredDatabase, at time: Int64,
        _ transaction: any StorageTransaction
    ) async throws -> [DatabaseKey] {
        var sharedKeys: [DatabaseKey] = []
        let shares = try await transaction.shares(inZone: zone.id)
        if !shares.isEmpty {
            sharedKeys = try await SharedDatabases.log(
                zoneName: zone.name, owner: key.owner, container: key.container, environment: key.environment,
                before: shares, after: [], touched: { _ in true }, transaction)
        }
        try await transaction.releaseAssets(inZone: zone.id, at: time)
        try await transaction.deleteZone(zone)
        database.serial += 1
        return sharedKeys
    }
}
