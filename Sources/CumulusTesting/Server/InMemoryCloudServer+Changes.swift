import Cumulus

extension InMemoryCloudServer {
    /// `changes/zone`.
    func fetchZoneChanges(_ requests: [ZoneChangesRequest], caller: Caller) throws
        -> [Result<ZoneChanges, CloudError>]
    {
        try checkItemCount(requests.count, of: "zones")
        let database = database(caller.databaseKey)
        guard database.hasChangeHistory else {
            throw CloudError(.badRequest, reason: "changes/zone is not available in the public database")
        }
        return requests.map { request in
            guard let name = ownZoneName(request.zoneID, user: caller.user), let zone = database.zones[name] else {
                return .failure(zoneNotFound(request.zoneID, recordName: nil))
            }
            return Result { () throws(CloudError) in try changes(of: zone, named: name, request) }
        }
    }

    private func changes(of zone: ZoneState, named name: String, _ request: ZoneChangesRequest)
        throws(CloudError) -> ZoneChanges
    {
        let limit: Int
        switch Result(catching: { () throws(CloudError) in try pageSize(request.resultsLimit) }) {
        case .success(let size): limit = size
        case .failure(var error):
            error.zoneID = request.zoneID
            throw error
        }
        var since = 0
        if let syncToken = request.syncToken {
            guard let token = ChangeToken(syncToken, kind: .zone) else {
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

        let wanted = request.desiredRecordTypes.map(Set.init)
        func isWanted(_ entry: RecordEntry) -> Bool {
            wanted?.contains(entry.recordType) ?? true
        }
        var records: [RecordResult] = []
        var end = zone.serial
        var moreComing = false
        var previous = since
        var serial = since
        while serial < zone.serial {
            serial += 1
            guard let recordName = zone.namesBySerial[serial], let entry = zone.entries[recordName],
                isWanted(entry)
            else { continue }
            if records.count == limit {
                moreComing = true
                end = previous
                break
            }
            previous = serial
            if let record = entry.record {
                records.append(.record(record.keeping(request.desiredKeys)))
            } else {
                records.append(.deleted(recordName: entry.recordName, zoneID: canonicalZoneID(name)))
            }
        }
        return ZoneChanges(
            zoneID: canonicalZoneID(name), records: records,
            syncToken: ChangeToken(kind: .zone, incarnation: zone.incarnation, serial: end).syncToken,
            moreComing: moreComing)
    }

    /// `changes/database`.
    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?, caller: Caller) throws
        -> DatabaseChanges
    {
        let limit = try pageSize(resultsLimit)
        let database = database(caller.databaseKey)
        guard database.hasChangeHistory else {
            throw CloudError(.badRequest, reason: "changes/database is not available in the public database")
        }
        var since = 0
        if let syncToken {
            guard let token = ChangeToken(syncToken, kind: .database) else {
                throw CloudError(.badRequest, reason: "'\(syncToken.rawValue)' is not a sync token of a database")
            }
            guard token.incarnation == database.incarnation, token.serial <= database.serial else {
                throw CloudError(
                    .changeTokenExpired, reason: "the sync token has expired; fetch the database from the start")
            }
            since = token.serial
        }
        let pending = database.zoneLog.filter { $0.value.serial > since }.sorted { $0.value.serial < $1.value.serial }
        let page = pending.prefix(limit)
        let end = page.count < pending.count ? page.last!.value.serial : database.serial
        return DatabaseChanges(
            changedZones: page.filter { !$0.value.deleted }.map { canonicalZoneID($0.key) },
            deletedZones: page.filter { $0.value.deleted }.map { canonicalZoneID($0.key) },
            syncToken: ChangeToken(kind: .database, incarnation: database.incarnation, serial: end).syncToken,
            moreComing: page.count < pending.count)
    }
}
