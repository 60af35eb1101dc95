import CloudCodable
import Foundation

extension CloudResponse {
    /// Reads a successful answer to `operation`, as the client does.
    ///
    /// Records are read in place; a record or deleted entry without a
    /// `zoneID` belongs to the zone it is listed under (in `changes/zone`),
    /// else to the default zone. Unknown members are ignored.
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`, "the server's answer to
    ///   … is not valid: …") for a body that is not a valid answer.
    public static func decode(_ operation: CloudOperation, body: [UInt8]) throws -> CloudResponse {
        try withCloudErrors(.internalError, "the server's answer to \(operation.rawValue) is not valid") {
            try WireBodyReader.read(body) { reader in
                let response = try read(operation, &reader)
                try reader.expectEnd()
                return response
            }
        }
    }

    private static func read(_ operation: CloudOperation, _ reader: inout WireBodyReader) throws -> CloudResponse {
        switch operation {
        case .modifyRecords, .lookupRecords:
            var results: [RecordResult]?
            try reader.readObject("the answer") { reader, key in
                guard key == "records" else { return try reader.skipValue() }
                results = try readRecordResults(&reader, zone: nil)
            }
            guard let results else { throw reader.missing("records", in: "the answer", at: 0) }
            return .records(results)
        case .queryRecords: return .query(try readQueryResult(&reader))
        case .resolveShares, .acceptShares: return .shares(try readShareResults(&reader))
        case .lookupUsersByEmail, .lookupUsersByID, .discoverUsers:
            var users: [UserIdentity]?
            try reader.readObject("the answer") { reader, key in
                guard key == "users" else { return try reader.skipValue() }
                var list: [UserIdentity] = []
                try reader.readArray("'users'") { reader in
                    list.append(try reader.readUserIdentity("user \(list.count)"))
                }
                users = list
            }
            guard let users else { throw reader.missing("users", in: "the answer", at: 0) }
            return .users(users)
        case .fetchZoneChanges: return .zoneChanges(try readZoneChanges(&reader))
        case .fetchDatabaseChanges, .fetchChangedZones: return .databaseChanges(try readDatabaseChanges(&reader))
        case .fetchRecordChanges:
            switch try readZoneChangesEntry(&reader, 0) {
            case .success(let changes): return .recordChanges(changes)
            case .failure(let error): throw error
            }
        case .listZones:
            let results = try readZoneResults(&reader)
            var zones: [RecordZone] = []
            for result in results {
                guard case .zone(let zone) = result else {
                    throw reader.error("zones/list answered a deleted zone or an error", at: 0)
                }
                zones.append(zone)
            }
            return .zones(zones)
        case .lookupZones, .modifyZones: return .zoneResults(try readZoneResults(&reader))
        case .listSubscriptions:
            var subscriptions: [Subscription] = []
            for result in try readSubscriptionResults(&reader) {
                guard case .subscription(let subscription) = result else {
                    throw reader.error("subscriptions/list answered a deleted subscription or an error", at: 0)
                }
                subscriptions.append(subscription)
            }
            return .subscriptions(subscriptions)
        case .lookupSubscriptions, .modifySubscriptions:
            return .subscriptionResults(try readSubscriptionResults(&reader))
        case .currentUser: return .user(try reader.readUserIdentity("the answer"))
        case .requestAssetUploads: return .assetUploads(try reader.readAssetUploadTargets("the answer"))
        case .createToken:
            var members: [String: String] = [:]
            try reader.readObject("the answer") { reader, key in
                switch key {
                case "apnsEnvironment", "apnsToken", "webcourierURL":
                    members[key] = try reader.readString("\(key), a string")
                default: try reader.skipValue()
                }
            }
            guard let environment = members["apnsEnvironment"] else {
                throw reader.missing("apnsEnvironment", in: "the answer", at: 0)
            }
            guard let token = members["apnsToken"] else { throw reader.missing("apnsToken", in: "the answer", at: 0) }
            guard let url = members["webcourierURL"] else {
                throw reader.missing("webcourierURL", in: "the answer", at: 0)
            }
            return .token(NotificationToken(apnsEnvironment: environment, apnsToken: token, webcourierURL: url))
        }
    }

    /// Reads a list of record entries in place. Entries without a zone take
    /// `zone` when it is known now; the caller fixes them up otherwise (see
    /// the returned flags of ``readRecordEntries(_:)``).
    private static func readRecordResults(_ reader: inout WireBodyReader, zone: ZoneID?) throws -> [RecordResult] {
        var (results, lacksZone) = try readRecordEntries(&reader)
        for index in lacksZone { results[index].moveToZone(zone ?? .defaultZone) }
        return results
    }

    /// Reads a list of record entries; returns them and the indices of those
    /// that named no zone.
    private static func readRecordEntries(_ reader: inout WireBodyReader) throws -> ([RecordResult], [Int]) {
        var results: [RecordResult] = []
        var lacksZone: [Int] = []
        try reader.readArray("'records'") { reader in
            switch try reader.readRecordEntry() {
            case .record(let record, let hasZoneID):
                if !hasZoneID { lacksZone.append(results.count) }
                results.append(.record(record))
            case .deleted(let recordName, let zoneID):
                if zoneID == nil { lacksZone.append(results.count) }
                results.append(.deleted(recordName: recordName, zoneID: zoneID ?? .defaultZone))
            case .failure:
                results.append(.failure(try WireErrorMembers.readError(&reader, "record \(results.count)")))
            }
        }
        return (results, lacksZone)
    }

    /// Reads `{"results":[…]}`, the answer of `records/resolve` and `records/accept`.
    private static func readShareResults(_ reader: inout WireBodyReader) throws -> [ShareResult] {
        var results: [ShareResult]?
        try reader.readObject("the answer") { reader, key in
            guard key == "results" else { return try reader.skipValue() }
            var list: [ShareResult] = []
            try reader.readArray("'results'") { reader in
                list.append(try ShareResult.read(&reader, "result \(list.count)"))
            }
            results = list
        }
        guard let results else { throw reader.missing("results", in: "the answer", at: 0) }
        return results
    }

    private static func readQueryResult(_ reader: inout WireBodyReader) throws -> QueryResult {
        var records: [Record]?
        var marker: String?
        try reader.readObject("the answer") { reader, key in
            switch key {
            case "records":
                var list: [Record] = []
                try reader.readArray("'records'") { reader in
                    let start = reader.position
                    guard case .record(let record, _) = try reader.readRecord() else {
                        throw reader.error(
                            "record \(list.count) of a query's answer is a deleted record's entry", at: start)
                    }
                    list.append(record)
                }
                records = list
            case "continuationMarker": marker = try reader.readOptionalString("continuationMarker, a string")
            default: try reader.skipValue()
            }
        }
        guard let records else { throw reader.missing("records", in: "the answer", at: 0) }
        return QueryResult(records: records, continuationMarker: marker)
    }

    private static func readZoneChanges(_ reader: inout WireBodyReader) throws -> [Result<ZoneChanges, CloudError>] {
        var zones: [Result<ZoneChanges, CloudError>]?
        try reader.readObject("the answer") { reader, key in
            guard key == "zones" else { return try reader.skipValue() }
            var list: [Result<ZoneChanges, CloudError>] = []
            try reader.readArray("'zones'") { reader in list.append(try readZoneChangesEntry(&reader, list.count)) }
            zones = list
        }
        guard let zones else { throw reader.missing("zones", in: "the answer", at: 0) }
        return zones
    }

    private static func readZoneChangesEntry(_ reader: inout WireBodyReader, _ index: Int) throws -> Result<
        ZoneChanges, CloudError
    > {
        let what = "zone \(index)"
        let start = reader.position
        var errorMembers = WireErrorMembers()
        var syncToken: String?
        var records: ([RecordResult], [Int])?
        var moreComing = false
        try reader.readObject(what) { reader, key in
            switch key {
            case "syncToken": syncToken = try reader.readOptionalString("syncToken, a string")
            case "records": records = try readRecordEntries(&reader)
            case "moreComing": moreComing = try reader.readBool()
            default: if try !errorMembers.read(key, &reader) { try reader.skipValue() }
            }
        }
        if let error = errorMembers.error { return .failure(error) }
        guard let zoneID = errorMembers.zoneID else { throw reader.missing("zoneID", in: what, at: start) }
        guard let syncToken else { throw reader.missing("syncToken", in: what, at: start) }
        var (results, lacksZone) = records ?? ([], [])
        for index in lacksZone { results[index].moveToZone(zoneID) }
        return .success(
            ZoneChanges(
                zoneID: zoneID, records: results, syncToken: SyncToken(rawValue: syncToken), moreComing: moreComing))
    }

    private static func readDatabaseChanges(_ reader: inout WireBodyReader) throws -> DatabaseChanges {
        var changed: [ZoneID] = []
        var deleted: [ZoneID] = []
        var hasZones = false
        var syncToken: String?
        var moreComing = false
        try reader.readObject("the answer") { reader, key in
            switch key {
            case "zones":
                hasZones = true
                for result in try readZoneList(&reader) {
                    switch result {
                    case .zone(let zone): changed.append(zone.zoneID)
                    case .deleted(let zoneID): deleted.append(zoneID)
                    case .failure(let error): throw error
                    }
                }
            case "syncToken": syncToken = try reader.readString("syncToken, a string")
            case "moreComing": moreComing = try reader.readBool()
            default: try reader.skipValue()
            }
        }
        guard hasZones else { throw reader.missing("zones", in: "the answer", at: 0) }
        guard let syncToken else { throw reader.missing("syncToken", in: "the answer", at: 0) }
        return DatabaseChanges(
            changedZones: changed, deletedZones: deleted, syncToken: SyncToken(rawValue: syncToken),
            moreComing: moreComing)
    }

    private static func readZoneResults(_ reader: inout WireBodyReader) throws -> [ZoneResult] {
        var results: [ZoneResult]?
        try reader.readObject("the answer") { reader, key in
            guard key == "zones" else { return try reader.skipValue() }
            results = try readZoneList(&reader)
        }
        guard let results else { throw reader.missing("zones", in: "the answer", at: 0) }
        return results
    }

    /// Reads `[zone | {"zoneID":…,"deleted":true} | zone error]`.
    private static func readZoneList(_ reader: inout WireBodyReader) throws -> [ZoneResult] {
        var results: [ZoneResult] = []
        try reader.readArray("'zones'") { reader in
            let what = "zone \(results.count)"
            let start = reader.position
            var errorMembers = WireErrorMembers()
            var syncToken: String?
            var deleted = false
            try reader.readObject(what) { reader, key in
                switch key {
                case "syncToken": syncToken = try reader.readOptionalString("syncToken, a string")
                case "deleted": deleted = try reader.readBool()
                default: if try !errorMembers.read(key, &reader) { try reader.skipValue() }
                }
            }
            if let error = errorMembers.error {
                results.append(.failure(error))
                return
            }
            guard let zoneID = errorMembers.zoneID else { throw reader.missing("zoneID", in: what, at: start) }
            results.append(
                deleted ? .deleted(zoneID) : .zone(RecordZone(zoneID: zoneID, syncToken: syncToken.map(SyncToken.init)))
            )
        }
        return results
    }

    private static func readSubscriptionResults(_ reader: inout WireBodyReader) throws -> [SubscriptionResult] {
        var results: [SubscriptionResult]?
        try reader.readObject("the answer") { reader, key in
            guard key == "subscriptions" else { return try reader.skipValue() }
            var list: [SubscriptionResult] = []
            try reader.readArray("'subscriptions'") { reader in
                let what = "subscription \(list.count)"
                let start = reader.position
                let found: WireSubscription
                if try reader.peek() == UInt8(ascii: "{") {
                    // An error entry may lack the identifier.
                    found = try WireSubscription.readResult(&reader, what)
                } else {
                    throw reader.error("\(what) is not an object", at: start)
                }
                if let error = found.errorMembers.error {
                    list.append(.failure(error))
                } else if found.deleted {
                    list.append(.deleted(found.identifier))
                } else {
                    list.append(.subscription(try found.subscription(&reader, what)))
                }
            }
            results = list
        }
        guard let results else { throw reader.missing("subscriptions", in: "the answer", at: 0) }
        return results
    }
}

extension WireSubscription {
    /// Reads one subscription result: as ``read(_:_:)``, except that an
    /// error entry needs no `subscriptionID`.
    static func readResult(_ reader: inout WireBodyReader, _ what: String) throws -> WireSubscription {
        let start = reader.position
        var identifier: String?
        var result = WireSubscription(identifier: "", offset: start)
        try reader.readObject(what) { reader, key in
            switch key {
            case "subscriptionID": identifier = try reader.readString("subscriptionID, a string")
            case "subscriptionType": result.type = try reader.readOptionalString("subscriptionType, a string")
            case "deleted": result.deleted = try reader.readBool()
            default:
                if try !result.readQueryMember(key, &reader), try !result.errorMembers.read(key, &reader) {
                    try reader.skipValue()
                }
            }
        }
        // The zone is an error member too (a zone error names it).
        result.zoneID = result.errorMembers.zoneID
        if result.errorMembers.code == nil {
            guard let identifier else { throw reader.missing("subscriptionID", in: what, at: start) }
            result.identifier = identifier
        }
        return result
    }
}

extension RecordResult {
    /// Moves a record or deletion read without a `zoneID` into `zone`.
    mutating func moveToZone(_ zone: ZoneID) {
        switch self {
        case .record(var record):
            record.moveToZone(zone)
            self = .record(record)
        case .deleted(let recordName, _):
            self = .deleted(recordName: recordName, zoneID: zone)
        case .failure:
            break
        }
    }
}
