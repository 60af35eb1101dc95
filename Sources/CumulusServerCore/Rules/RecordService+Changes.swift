import CloudCodable
import CloudProtocol

extension RecordService {
    /// `changes/zone`: one read transaction for all the zones asked.
    ///
    /// The zones share one answer's worth of records
    /// (``ServerLimits/resultsPerResponse``), in the order asked: a zone
    /// that comes after the budget is spent answers no records, its token
    /// unchanged and `moreComing`.
    ///
    /// In the public database (a Cumulus addition: CloudKit's server answers
    /// `BAD_REQUEST`) the default zone's feed is what a public query reads,
    /// to anyone the public database lets read, the API token alone included.
    func fetchZoneChanges(_ requests: [ZoneChangesRequest], context: RequestContext) async throws
        -> [Result<ChangesPage, CloudError>]
    {
        try ServerLimits.checkItemCount(requests.count, of: "zones")
        let key = context.key
        if key.scope == .shared {
            return try await storage.read { transaction in
                var results: [Result<ChangesPage, CloudError>] = []
                var budget = ServerLimits.resultsPerResponse
                for request in requests {
                    guard
                        let access = try await ZoneAccess.open(
                            request.zoneID, context: context, readingShares: true, transaction)
                    else {
                        results.append(.failure(ServerLimits.zoneNotFound(request.zoneID, recordName: nil)))
                        continue
                    }
                    do {
                        var page = try await Self.changes(
                            of: access.tokenZone, request, budget: budget, transaction)
                        budget -= page.entries.count
                        try page.shared(through: access, viewer: context.user)
                        results.append(.success(page))
                    } catch let error as CloudError {
                        results.append(.failure(error))
                    }
                }
                return results
            }
        }
        return try await storage.read { transaction in
            guard let database = try await transaction.database(key) else { return [] }
            let names = Set(requests.compactMap { context.ownZoneName($0.zoneID).map(ExactName.init) })
            var zones: [ExactName: StoredZone] = [:]
            for zone in try await transaction.zones(inDatabase: database.id, named: names.map(\.string)) {
                zones[ExactName(zone.name)] = zone
            }
            var results: [Result<ChangesPage, CloudError>] = []
            var budget = ServerLimits.resultsPerResponse
            for request in requests {
                guard let name = context.ownZoneName(request.zoneID), let zone = zones[ExactName(name)] else {
                    results.append(.failure(ServerLimits.zoneNotFound(request.zoneID, recordName: nil)))
                    continue
                }
                do {
                    let page = try await Self.changes(of: zone, request, budget: budget, transaction)
                    budget -= page.entries.count
                    results.append(.success(page))
                } catch let error as CloudError {
                    results.append(.failure(error))
                }
            }
            return results
        }
    }

    private static func changes(
        of zone: StoredZone, _ request: ZoneChangesRequest, budget: Int, _ transaction: any StorageTransaction
    ) async throws -> ChangesPage {
        let limit: Int
        do {
            limit = min(try ServerLimits.pageSize(request.resultsLimit), max(0, budget))
        } catch {
            var error = error
            error.zoneID = request.zoneID
            throw error
        }
        var since: Int64 = 0
        if let syncToken = request.syncToken {
            guard let token = ServerChangeToken(syncToken, kind: .zone) else {
                throw CloudError(
                    .badRequest, reason: "'\(syncToken.rawValue)' is not a sync token of a zone",
                    zoneID: request.zoneID)
            }
            guard token.incarnation == zone.incarnation, token.serial <= zone.serial else {
                throw CloudError(
                    .changeTokenExpired, reason: "the sync token has expired; fetch the zone from the start",
                    zoneID: request.zoneID)
            }
            since = token.serial
        }
        // One row more than the page tells whether more are coming.
        let rows = try await transaction.changes(
            inZone: zone.id, after: since, recordTypes: request.desiredRecordTypes, limit: limit + 1)
        let moreComing = rows.count > limit
        let page = rows.prefix(limit)
        let end = moreComing ? (page.last?.serial ?? since) : zone.serial
        return ChangesPage(
            zoneID: ZoneID(zoneName: zone.name), entries: Array(page), desiredKeys: request.desiredKeys,
            syncToken: ServerChangeToken(kind: .zone, incarnation: zone.incarnation, serial: end).syncToken,
            moreComing: moreComing)
    }

    /// `changes/database`.
    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?, context: RequestContext) async throws
        -> DatabaseChanges
    {
        let limit = try ServerLimits.pageSize(resultsLimit)
        guard context.key.scope != .public else {
            throw CloudError(.badRequest, reason: "changes/database is not available in the public database")
        }
        let key = context.key
        return try await storage.read { transaction in
            guard let database = try await transaction.database(key) else {
                throw CloudError(.internalError, reason: "the database has no row")
            }
            var since: Int64 = 0
            if let syncToken {
                guard let token = ServerChangeToken(syncToken, kind: .database) else {
                    throw CloudError(
                        .badRequest, reason: "'\(syncToken.rawValue)' is not a sync token of a database")
                }
                guard token.incarnation == database.incarnation, token.serial <= database.serial else {
                    throw CloudError(
                        .changeTokenExpired, reason: "the sync token has expired; fetch the database from the start")
                }
                since = token.serial
            }
            let entries = try await transaction.zoneLog(inDatabase: database.id, after: since, limit: limit + 1)
            let moreComing = entries.count > limit
            let page = entries.prefix(limit)
            let end = moreComing ? (page.last?.serial ?? since) : database.serial
            func zoneID(_ entry: ZoneLogEntry) -> ZoneID {
                ZoneID(
                    zoneName: entry.zoneName,
                    ownerRecordName: entry.ownerRecordName.isEmpty ? nil : entry.ownerRecordName)
            }
            return DatabaseChanges(
                changedZones: page.filter { !$0.deleted }.map(zoneID),
                deletedZones: page.filter { $0.deleted }.map(zoneID),
                syncToken: ServerChangeToken(kind: .database, incarnation: database.incarnation, serial: end)
                    .syncToken,
                moreComing: moreComing)
        }
    }
}

extension ChangesPage {
    /// The page as a participant reads it: only the rows its shares cover,
    /// a row that left one of them as a deletion, every record named with
    /// the zone's owner and share records with the participant's own entry.
    mutating func shared(through access: ZoneAccess, viewer: String?) throws {
        zoneID = access.zoneID
        entries = try entries.compactMap { entry -> StoredChange? in
            var entry = entry
            guard access.view.canSee(entry.shareKey) else {
                guard access.view.canSee(entry.formerShareKey) else { return nil }
                entry.contents = .deleted
                return entry
            }
            switch entry.contents {
            case .deleted: break
            case .record(let record): entry.contents = .record(access.present(record, to: viewer))
            case .encoded(let bytes):
                // Stored records are named in the owner's terms: decoded to be renamed.
                let record: Record
                do {
                    record = try WireFormat.decodeRecord(from: bytes)
                } catch {
                    throw CloudError(
                        .internalError, reason: "the storage holds an impossible row: a record that cannot be read")
                }
                entry.contents = .record(access.present(record, to: viewer))
            }
            return entry
        }
    }
}
