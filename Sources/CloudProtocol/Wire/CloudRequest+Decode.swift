import CloudCodable
import Foundation

extension CloudRequest {
    /// Reads the body of a request for `operation`, as the server does.
    ///
    /// Members may come in any order; unknown members are ignored; integers
    /// may be strings (`numbersAsStrings`). A missing `zoneID` is the default
    /// zone, a missing `atomic` is `true`, and a record without a `zoneID`
    /// belongs to the request's zone. A field whose value is `null` is absent,
    /// but in an `update` or `forceUpdate` it is cleared (Cumulus's dialect:
    /// ``RecordOperation/clearedFields``). The record of a delete keeps its name,
    /// type, change tag and zone; its fields and stamps are dropped. The `GET` operations accept an empty
    /// body or any object. A save's record must have a non-empty type.
    ///
    /// - Parameter fieldTypes: The types of fields sent without `type`; when
    ///   it gives none, the value's JSON shape decides.
    /// - Throws: ``CloudError`` (`BAD_REQUEST`, with a reason that says what
    ///   and where) for a body that is not a valid request.
    public static func decode(_ operation: CloudOperation, body: [UInt8], fieldTypes: FieldTypeLookup? = nil)
        throws -> CloudRequest
    {
        try withCloudErrors(.badRequest, "the \(operation.rawValue) request is not valid") {
            try WireBodyReader.read(body, fieldTypes: fieldTypes) { reader in
                let request = try read(operation, &reader)
                try reader.expectEnd()
                return request
            }
        }
    }

    private static func read(_ operation: CloudOperation, _ reader: inout WireBodyReader) throws -> CloudRequest {
        switch operation {
        case .listZones, .listSubscriptions, .currentUser, .createToken:
            return try readBodyless(operation, &reader)
        case .resolveShares: return .resolveShares(try readShareLookups(&reader))
        case .acceptShares: return .acceptShares(try readShareLookups(&reader))
        case .lookupUsersByEmail: return .lookupUsersByEmail(try readUsers(&reader, key: "emailAddress"))
        case .lookupUsersByID: return .lookupUsersByID(try readUsers(&reader, key: "userRecordName"))
        case .discoverUsers: return .discoverUsers(try readLookupInfos(&reader))
        case .modifyRecords: return try readModifyRecords(&reader)
        case .lookupRecords: return try readLookupRecords(&reader)
        case .queryRecords: return try readQuery(&reader)
        case .fetchZoneChanges: return try readZoneChanges(&reader)
        case .fetchRecordChanges: return .fetchRecordChanges(try readZoneChangesRequest(&reader, "the request"))
        case .fetchChangedZones:
            var syncToken: SyncToken?
            try reader.readObject("the request") { reader, key in
                guard key == "syncToken" else { return try reader.skipValue() }
                syncToken = try reader.readOptionalString("syncToken, a string").map(SyncToken.init)
            }
            return .fetchChangedZones(syncToken: syncToken)
        case .fetchDatabaseChanges:
            var syncToken: SyncToken?
            var resultsLimit: Int?
            try reader.readObject("the request") { reader, key in
                switch key {
                case "syncToken": syncToken = try reader.readOptionalString("syncToken, a string").map(SyncToken.init)
                case "resultsLimit": resultsLimit = try reader.skipNull() ? nil : reader.readCount("resultsLimit")
                default: try reader.skipValue()
                }
            }
            return .fetchDatabaseChanges(syncToken: syncToken, resultsLimit: resultsLimit)
        case .lookupZones:
            var zones: [ZoneID]?
            try reader.readObject("the request") { reader, key in
                guard key == "zones" else { return try reader.skipValue() }
                var list: [ZoneID] = []
                try reader.readArray("'zones'") { reader in list.append(try reader.readZoneID("a zone of 'zones'")) }
                zones = list
            }
            guard let zones else { throw reader.missing("zones", in: "the request", at: 0) }
            return .lookupZones(zones)
        case .modifyZones: return try readZoneOperations(&reader)
        case .modifySubscriptions: return try readSubscriptionOperations(&reader)
        case .requestAssetUploads:
            // The zone is optional, as in the other record requests: the default zone.
            var zoneID = ZoneID.defaultZone
            var tokens: [AssetUploadRequest]?
            try reader.readObject("the request") { reader, key in
                switch key {
                case "zoneID": zoneID = try reader.skipNull() ? .defaultZone : reader.readZoneID()
                case "tokens": tokens = try reader.readAssetUploadRequests("'tokens'")
                default: try reader.skipValue()
                }
            }
            guard let tokens else { throw reader.missing("tokens", in: "the request", at: 0) }
            return .requestAssetUploads(tokens, zoneID: zoneID)
        case .lookupSubscriptions:
            var identifiers: [String]?
            try reader.readObject("the request") { reader, key in
                guard key == "subscriptions" else { return try reader.skipValue() }
                var list: [String] = []
                try reader.readArray("'subscriptions'") { reader in
                    let start = reader.position
                    var identifier: String?
                    try reader.readObject("a subscription") { reader, key in
                        guard key == "subscriptionID" else { return try reader.skipValue() }
                        identifier = try reader.readString("subscriptionID, a string")
                    }
                    guard let identifier else {
                        throw reader.missing("subscriptionID", in: "a subscription", at: start)
                    }
                    list.append(identifier)
                }
                identifiers = list
            }
            guard let identifiers else { throw reader.missing("subscriptions", in: "the request", at: 0) }
            return .lookupSubscriptions(identifiers)
        }
    }

    /// The `GET` operations and `tokens/create`: an empty body or an object
    /// (whose `apnsEnvironment`, when present, must be an environment).
    private static func readBodyless(_ operation: CloudOperation, _ reader: inout WireBodyReader) throws
        -> CloudRequest
    {
        var environment: CloudEnvironment?
        if !reader.isBlank {
            try reader.readObject("the request") { reader, key in
                guard operation == .createToken, key == "apnsEnvironment" else { return try reader.skipValue() }
                let start = reader.position
                let name = try reader.readString("apnsEnvironment, a string")
                guard let named = CloudEnvironment(rawValue: name) else {
                    throw reader.error("unknown apnsEnvironment '\(name)' (development or production)", at: start)
                }
                environment = named
            }
        }
        switch operation {
        case .listZones: return .listZones
        case .listSubscriptions: return .listSubscriptions
        case .currentUser: return .currentUser
        default: return .createToken(apnsEnvironment: environment)
        }
    }

    // MARK: - Records

    private static func readModifyRecords(_ reader: inout WireBodyReader) throws -> CloudRequest {
        var operations: [RecordOperation]?
        var hasZone: [Bool] = []
        var zoneID = ZoneID.defaultZone
        var atomic = true
        var desiredKeys: [String]?
        try reader.readObject("the request") { reader, key in
            switch key {
            case "operations":
                var list: [RecordOperation] = []
                try reader.readArray("'operations'") { reader in
                    let (operation, hasZoneID) = try readRecordOperation(&reader, index: list.count)
                    list.append(operation)
                    hasZone.append(hasZoneID)
                }
                operations = list
            case "zoneID": zoneID = try reader.skipNull() ? .defaultZone : reader.readZoneID()
            case "atomic": atomic = try reader.skipNull() ? true : reader.readBool()
            case "desiredKeys": desiredKeys = try reader.readOptionalStrings("desiredKeys")
            default: try reader.skipValue()
            }
        }
        guard var operations else { throw reader.missing("operations", in: "the request", at: 0) }
        for index in operations.indices {
            if !hasZone[index] { operations[index].record.moveToZone(zoneID) }
            if operations[index].desiredKeys == nil { operations[index].desiredKeys = desiredKeys }
        }
        return .modifyRecords(operations: operations, zoneID: zoneID, atomic: atomic)
    }

    /// Reads one operation; the record is read once the operation type is
    /// known (a delete's record may lack its type), later if it comes first.
    private static func readRecordOperation(_ reader: inout WireBodyReader, index: Int) throws -> (
        RecordOperation, Bool
    ) {
        let what = "operation \(index)"
        let start = reader.position
        var type: RecordOperationType?
        var record: (Record, Bool, [String])?
        var recordOffset: Int?
        var desiredKeys: [String]?
        try reader.readObject(what) { reader, key in
            switch key {
            case "operationType":
                let at = reader.position
                let name = try reader.readString("operationType, a string")
                guard let known = RecordOperationType(rawValue: name) else {
                    throw reader.error(
                        "\(what): unknown operationType '\(name)' (\(RecordOperationType.allCases.map(\.rawValue).joined(separator: ", ")))",
                        at: at)
                }
                type = known
            case "record":
                if let type {
                    record = try readOperationRecord(&reader, type, what)
                } else {
                    _ = try reader.peek()
                    recordOffset = reader.position
                    try reader.skipValue()
                }
            case "desiredKeys": desiredKeys = try reader.readOptionalStrings("desiredKeys")
            default: try reader.skipValue()
            }
        }
        guard let type else { throw reader.missing("operationType", in: what, at: start) }
        if record == nil, let recordOffset {
            let end = reader.position
            reader.seek(to: recordOffset)
            record = try readOperationRecord(&reader, type, what)
            reader.seek(to: end)
        }
        guard let (found, hasZoneID, cleared) = record else { throw reader.missing("record", in: what, at: start) }
        return (RecordOperation(type, found, desiredKeys: desiredKeys, clearedFields: cleared), hasZoneID)
    }

    /// Reads an operation's record, whether it names its zone, and, for an
    /// update or forceUpdate, the fields it clears (those whose value is `null`).
    private static func readOperationRecord(_ reader: inout WireBodyReader, _ type: RecordOperationType, _ what: String)
        throws -> (Record, Bool, [String])
    {
        let start = reader.position
        var cleared: [String] = []
        // A create may leave the name out: the service names the record (a UUID).
        let entry =
            type.mergesFields
            ? try reader.readRecord(clearingInto: &cleared)
            : try reader.readRecord(allowingMissingType: type.isDelete, allowingMissingName: type == .create)
        switch entry {
        case .record(var record, let hasZoneID):
            if type.isDelete {
                // A delete carries its record's name, type, change tag and
                // zone only, as `encodedBody()` writes it: the rest is ignored.
                record.fields = [:]
                record.metadata?.created = nil
                record.metadata?.modified = nil
            }
            if !type.isDelete && record.recordType.isEmpty {
                // A save of a record without a type is malformed, not one
                // operation that fails: the request is refused as a whole.
                throw reader.error(
                    "\(what): the record of a \(type.rawValue) operation has an empty recordType", at: start)
            }
            // A timestamp next to Int64's top end reads as a date that gives
            // no milliseconds back: it could be neither stored nor answered.
            if !type.isDelete, let name = record.fields.first(where: { !isWritable($0.value) })?.key {
                throw reader.error("\(what): field '\(name)': a timestamp out of the range of dates", at: start)
            }
            return (record, hasZoneID, cleared)
        case .deleted, .failure:
            throw reader.error(
                "\(what): the record of a \(type.rawValue) operation is a deleted record's entry", at: start)
        }
    }

    /// Whether the writer can write `value`: a date whose milliseconds since
    /// 1970 fit `Int64`, as `WireFormat` writes them.
    private static func isWritable(_ value: FieldValue) -> Bool {
        func fits(_ date: Date) -> Bool {
            let ms = (date.timeIntervalSince1970 * 1000).rounded()
            return ms.isFinite && ms >= -9_223_372_036_854_775_808.0 && ms < 9_223_372_036_854_775_808.0
        }
        switch value {
        case .timestamp(let date): return fits(date)
        case .timestampList(let dates): return dates.allSatisfy(fits)
        default: return true
        }
    }

    private static func readLookupRecords(_ reader: inout WireBodyReader) throws -> CloudRequest {
        var names: [String]?
        var zoneID = ZoneID.defaultZone
        var desiredKeys: [String]?
        try reader.readObject("the request") { reader, key in
            switch key {
            case "records":
                var list: [String] = []
                try reader.readArray("'records'") { reader in
                    let start = reader.position
                    var name: String?
                    try reader.readObject("record \(list.count)") { reader, key in
                        guard key == "recordName" else { return try reader.skipValue() }
                        name = try reader.readString("recordName, a string")
                    }
                    guard let name else { throw reader.missing("recordName", in: "record \(list.count)", at: start) }
                    list.append(name)
                }
                names = list
            case "zoneID": zoneID = try reader.skipNull() ? .defaultZone : reader.readZoneID()
            case "desiredKeys": desiredKeys = try reader.readOptionalStrings("desiredKeys")
            default: try reader.skipValue()
            }
        }
        guard let names else { throw reader.missing("records", in: "the request", at: 0) }
        return .lookupRecords(recordNames: names, zoneID: zoneID, desiredKeys: desiredKeys)
    }

    // MARK: - Queries

    private static func readQuery(_ reader: inout WireBodyReader) throws -> CloudRequest {
        var query: RecordQuery?
        var zoneID = ZoneID.defaultZone
        var resultsLimit: Int?
        var marker: String?
        var desiredKeys: [String]?
        try reader.readObject("the request") { reader, key in
            switch key {
            case "query": query = try readRecordQuery(&reader)
            case "zoneID": zoneID = try reader.skipNull() ? .defaultZone : reader.readZoneID()
            case "resultsLimit": resultsLimit = try reader.skipNull() ? nil : reader.readCount("resultsLimit")
            case "continuationMarker": marker = try reader.readOptionalString("continuationMarker, a string")
            case "desiredKeys": desiredKeys = try reader.readOptionalStrings("desiredKeys")
            default: try reader.skipValue()
            }
        }
        guard let query else { throw reader.missing("query", in: "the request", at: 0) }
        return .queryRecords(
            query, zoneID: zoneID, resultsLimit: resultsLimit, continuationMarker: marker, desiredKeys: desiredKeys)
    }

    /// A query's `{"recordType":…,"filterBy":…,"sortBy":…}`, an untyped
    /// filter value typed by the schema as its comparator takes it.
    static func readRecordQuery(_ reader: inout WireBodyReader) throws -> RecordQuery {
        try reader.readRecordQuery(
            adjustingFilterType: { $0.valueType(forField: $1) },
            refusing: { isWritable($0) ? nil : "has a timestamp out of the range of dates" })
    }

    // MARK: - Sharing and users

    /// `{"shortGUIDs":[{"value":…,"shouldFetchRootRecord":…,"rootRecordDesiredKeys":[…]}]}`.
    private static func readShareLookups(_ reader: inout WireBodyReader) throws -> [ShareLookup] {
        var lookups: [ShareLookup]?
        try reader.readObject("the request") { reader, key in
            guard key == "shortGUIDs" else { return try reader.skipValue() }
            var list: [ShareLookup] = []
            try reader.readArray("'shortGUIDs'") { reader in
                let what = "shortGUID \(list.count)"
                let start = reader.position
                var value: String?
                var lookup = ShareLookup(shortGUID: "")
                try reader.readObject(what) { reader, key in
                    switch key {
                    case "value": value = try reader.readString("value, a string")
                    case "shouldFetchRootRecord":
                        lookup.fetchRootRecord = try reader.skipNull() ? false : reader.readBool()
                    case "rootRecordDesiredKeys":
                        lookup.rootRecordDesiredKeys = try reader.readOptionalStrings("rootRecordDesiredKeys")
                    default: try reader.skipValue()
                    }
                }
                guard let value else { throw reader.missing("value", in: what, at: start) }
                lookup.shortGUID = value
                list.append(lookup)
            }
            lookups = list
        }
        guard let lookups else { throw reader.missing("shortGUIDs", in: "the request", at: 0) }
        return lookups
    }

    /// `{"users":[{key:…}]}`: the email addresses or user record names to look up.
    private static func readUsers(_ reader: inout WireBodyReader, key wanted: String) throws -> [String] {
        var values: [String]?
        try reader.readObject("the request") { reader, key in
            guard key == "users" else { return try reader.skipValue() }
            var list: [String] = []
            try reader.readArray("'users'") { reader in
                let what = "user \(list.count)"
                let start = reader.position
                var value: String?
                try reader.readObject(what) { reader, key in
                    guard key == wanted else { return try reader.skipValue() }
                    value = try reader.readString("\(wanted), a string")
                }
                guard let value else { throw reader.missing(wanted, in: what, at: start) }
                list.append(value)
            }
            values = list
        }
        guard let values else { throw reader.missing("users", in: "the request", at: 0) }
        return values
    }

    /// `{"lookupInfos":[{"emailAddress"|"phoneNumber"|"userRecordName":…}]}`;
    /// each item names the user somehow.
    private static func readLookupInfos(_ reader: inout WireBodyReader) throws -> [UserLookupInfo] {
        var infos: [UserLookupInfo]?
        try reader.readObject("the request") { reader, key in
            guard key == "lookupInfos" else { return try reader.skipValue() }
            var list: [UserLookupInfo] = []
            try reader.readArray("'lookupInfos'") { reader in
                let what = "lookupInfo \(list.count)"
                let start = reader.position
                let info = try reader.readLookupInfo(what)
                guard info.emailAddress != nil || info.phoneNumber != nil || info.userRecordName != nil else {
                    throw reader.error("\(what) has none of emailAddress, phoneNumber and userRecordName", at: start)
                }
                list.append(info)
            }
            infos = list
        }
        guard let infos else { throw reader.missing("lookupInfos", in: "the request", at: 0) }
        return infos
    }

    // MARK: - Zones and subscriptions

    private static func readZoneChanges(_ reader: inout WireBodyReader) throws -> CloudRequest {
        var zones: [ZoneChangesRequest]?
        var defaultLimit: Int?
        try reader.readObject("the request") { reader, key in
            switch key {
            case "zones":
                var list: [ZoneChangesRequest] = []
                try reader.readArray("'zones'") { reader in
                    list.append(try readZoneChangesRequest(&reader, "zone \(list.count)"))
                }
                zones = list
            case "resultsLimit": defaultLimit = try reader.skipNull() ? nil : reader.readCount("resultsLimit")
            default: try reader.skipValue()
            }
        }
        guard var zones else { throw reader.missing("zones", in: "the request", at: 0) }
        for index in zones.indices where zones[index].resultsLimit == nil {
            zones[index].resultsLimit = defaultLimit
        }
        return .fetchZoneChanges(zones)
    }

    private static func readZoneChangesRequest(_ reader: inout WireBodyReader, _ what: String) throws
        -> ZoneChangesRequest
    {
        let start = reader.position
        var zoneID: ZoneID?
        var request = ZoneChangesRequest(zoneID: .defaultZone)
        try reader.readObject(what) { reader, key in
            switch key {
            case "zoneID": zoneID = try reader.readZoneID()
            case "syncToken":
                request.syncToken = try reader.readOptionalString("syncToken, a string").map(SyncToken.init)
            case "resultsLimit": request.resultsLimit = try reader.skipNull() ? nil : reader.readCount("resultsLimit")
            case "desiredKeys": request.desiredKeys = try reader.readOptionalStrings("desiredKeys")
            case "desiredRecordTypes": request.desiredRecordTypes = try reader.readOptionalStrings("desiredRecordTypes")
            default: try reader.skipValue()
            }
        }
        guard let zoneID else { throw reader.missing("zoneID", in: what, at: start) }
        request.zoneID = zoneID
        return request
    }

    private static func readZoneOperations(_ reader: inout WireBodyReader) throws -> CloudRequest {
        var operations: [ZoneOperation]?
        try reader.readObject("the request") { reader, key in
            guard key == "operations" else { return try reader.skipValue() }
            var list: [ZoneOperation] = []
            try reader.readArray("'operations'") { reader in
                let what = "operation \(list.count)"
                let start = reader.position
                var type: String?
                var typeOffset = start
                var zoneID: ZoneID?
                try reader.readObject(what) { reader, key in
                    switch key {
                    case "operationType":
                        typeOffset = reader.position
                        type = try reader.readString("operationType, a string")
                    case "zone":
                        let at = reader.position
                        try reader.readObject("'zone'") { reader, key in
                            guard key == "zoneID" else { return try reader.skipValue() }
                            zoneID = try reader.readZoneID()
                        }
                        if zoneID == nil { throw reader.missing("zoneID", in: "'zone' of \(what)", at: at) }
                    default: try reader.skipValue()
                    }
                }
                guard let type else { throw reader.missing("operationType", in: what, at: start) }
                guard let zoneID else { throw reader.missing("zone", in: what, at: start) }
                switch type {
                case "create": list.append(.create(zoneID))
                case "delete": list.append(.delete(zoneID))
                default:
                    throw reader.error("\(what): unknown operationType '\(type)' (create or delete)", at: typeOffset)
                }
            }
            operations = list
        }
        guard let operations else { throw reader.missing("operations", in: "the request", at: 0) }
        return .modifyZones(operations)
    }

    private static func readSubscriptionOperations(_ reader: inout WireBodyReader) throws -> CloudRequest {
        var operations: [SubscriptionOperation]?
        try reader.readObject("the request") { reader, key in
            guard key == "operations" else { return try reader.skipValue() }
            var list: [SubscriptionOperation] = []
            try reader.readArray("'operations'") { reader in
                list.append(try readSubscriptionOperation(&reader, "operation \(list.count)"))
            }
            operations = list
        }
        guard let operations else { throw reader.missing("operations", in: "the request", at: 0) }
        return .modifySubscriptions(operations)
    }

    private static func readSubscriptionOperation(_ reader: inout WireBodyReader, _ what: String) throws
        -> SubscriptionOperation
    {
        let start = reader.position
        var type: String?
        var typeOffset = start
        var subscription: WireSubscription?
        try reader.readObject(what) { reader, key in
            switch key {
            case "operationType":
                typeOffset = reader.position
                type = try reader.readString("operationType, a string")
            case "subscription": subscription = try WireSubscription.read(&reader, "'subscription' of \(what)")
            default: try reader.skipValue()
            }
        }
        guard let type else { throw reader.missing("operationType", in: what, at: start) }
        guard let subscription else { throw reader.missing("subscription", in: what, at: start) }
        switch type {
        case "create", "update":
            return .save(try subscription.subscription(&reader, what, readQuery: readRecordQuery))
        case "delete":
            return .delete(subscription.identifier)
        default:
            throw reader.error("\(what): unknown operationType '\(type)' (create, update or delete)", at: typeOffset)
        }
    }
}
