import Cumulus

extension InMemoryCloudServer {
    /// `zones/list`: the default zone first, then the others by name.
    func listZones(caller: Caller) -> [RecordZone] {
        let database = database(caller.databaseKey)
        return database.zones.keys
            .sorted { (rank($0), $0) < (rank($1), $1) }
            .map { recordZone(named: $0, in: database) }
    }

    private func rank(_ zoneName: String) -> Int {
        zoneName == ZoneID.defaultZone.zoneName ? 0 : 1
    }

    /// `zones/lookup`.
    func lookupZones(_ zoneIDs: [ZoneID], caller: Caller) throws -> [ZoneResult] {
        try checkItemCount(zoneIDs.count, of: "zones")
        let database = database(caller.databaseKey)
        return zoneIDs.map { zoneID in
            guard let name = ownZoneName(zoneID, user: caller.user), database.zones[name] != nil else {
                return .failure(zoneNotFound(zoneID, recordName: nil))
            }
            return .zone(recordZone(named: name, in: database))
        }
    }

    /// `zones/modify`.
    func modifyZones(_ operations: [ZoneOperation], caller: Caller) throws -> [ZoneResult] {
        try checkItemCount(operations.count, of: "operations")
        var names = Set<String>()
        for operation in operations {
            let zoneID: ZoneID
            switch operation {
            case .create(let id), .delete(let id): zoneID = id
            }
            guard names.insert(zoneID.zoneName).inserted else {
                throw CloudError(
                    .badRequest, reason: "zone '\(zoneID.zoneName)' appears in more than one operation of the request",
                    zoneID: zoneID)
            }
        }
        return applyZoneOperations(operations, in: caller.databaseKey, user: caller.user)
    }

    /// Creates and deletes zones, records the changes in the database's
    /// history and notifies the database's listeners.
    func applyZoneOperations(_ operations: [ZoneOperation], in key: DatabaseKey, user: String) -> [ZoneResult] {
        var database = takeDatabase(key)
        defer { databases[key] = database }
        var changed: [String] = []
        let results = operations.map { operation -> ZoneResult in
            switch operation {
            case .create(let zoneID):
                guard let name = ownZoneName(zoneID, user: user), !name.isEmpty else {
                    return .failure(
                        CloudError(.badRequest, reason: "a zone can only be created by its owner", zoneID: zoneID))
                }
                if database.zones[name] != nil { return .zone(recordZone(named: name, in: database)) }
                guard database.allowsCustomZones else {
                    return .failure(
                        CloudError(
                            .badRequest, reason: "zones cannot be created in the \(database.scope.rawValue) database",
                            zoneID: zoneID))
                }
                database.zones[name] = ZoneState(incarnation: makeIncarnation())
                database.logChange(ofZone: name)
                changed.append(name)
                return .zone(recordZone(named: name, in: database))
            case .delete(let zoneID):
                guard let name = ownZoneName(zoneID, user: user), database.zones[name] != nil else {
                    return .failure(zoneNotFound(zoneID, recordName: nil))
                }
                guard name != ZoneID.defaultZone.zoneName else {
                    return .failure(
                        CloudError(.badRequest, reason: "the default zone cannot be deleted", zoneID: zoneID))
                }
                database.zones.removeValue(forKey: name)
                database.logChange(ofZone: name, deleted: true)
                changed.append(name)
                return .deleted(canonicalZoneID(name))
            }
        }
        if !changed.isEmpty { notify(key, changedZones: changed) }
        return results
    }

    func recordZone(named name: String, in database: DatabaseState) -> RecordZone {
        RecordZone(
            zoneID: canonicalZoneID(name),
            syncToken: database.hasChangeHistory ? database.zones[name]?.syncToken : nil)
    }
}
