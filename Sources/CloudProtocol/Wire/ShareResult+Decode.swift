import CloudCodable

extension ShareResult {
    /// Reads one item of a `records/resolve` or `records/accept` answer: an
    /// error dictionary with the `shortGUID` it is about, or the share's
    /// metadata. A share or root record without a `zoneID` is in the item's zone.
    static func read(_ reader: inout WireBodyReader, _ what: String) throws -> ShareResult {
        let start = reader.position
        var errorMembers = WireErrorMembers()
        var strings: [String: String] = [:]
        var share: (Record, Bool)?
        var rootRecord: (Record, Bool)?
        var owner: UserIdentity?
        var role: ShareParticipantRole?
        var status: ShareAcceptanceStatus?
        var permission: SharePermission?
        var scope: DatabaseScope?
        var environment: CloudEnvironment?
        try reader.readObject(what) { reader, key in
            switch key {
            case "shortGUID", "containerIdentifier":
                strings[key] = try reader.readString("\(key), a string")
            case "databaseScope":
                let at = reader.position
                let name = try reader.readString("databaseScope, a string")
                guard let named = DatabaseScope(wireName: name) else {
                    throw reader.error("\(what): unknown databaseScope '\(name)' (PUBLIC, PRIVATE, SHARED)", at: at)
                }
                scope = named
            case "share": share = try readRecord(&reader, "the share of \(what)")
            case "rootRecord":
                rootRecord = try reader.skipNull() ? nil : readRecord(&reader, "the root record of \(what)")
            case "ownerIdentity": owner = try reader.readUserIdentity("ownerIdentity of \(what)")
            case "environment": environment = try reader.readSpelling(key, in: what)
            case "participantType": role = try reader.readSpelling(key, in: what)
            case "participantStatus": status = try reader.readSpelling(key, in: what)
            case "participantPermission": permission = try reader.readSpelling(key, in: what)
            default: if try !errorMembers.read(key, &reader) { try reader.skipValue() }
            }
        }
        guard let shortGUID = strings["shortGUID"] else { throw reader.missing("shortGUID", in: what, at: start) }
        if let error = errorMembers.error { return .failure(shortGUID: shortGUID, error) }
        func required<Value>(_ value: Value?, _ key: String) throws -> Value {
            guard let value else { throw reader.missing(key, in: what, at: start) }
            return value
        }
        let container = try required(strings["containerIdentifier"], "containerIdentifier")
        let zoneID = try required(errorMembers.zoneID, "zoneID")
        func inZone(_ entry: (Record, Bool)) -> Record {
            var record = entry.0
            if !entry.1 { record.moveToZone(zoneID) }
            return record
        }
        return .share(
            ShareMetadata(
                shortGUID: shortGUID, containerIdentifier: container,
                environment: try required(environment, "environment"),
                databaseScope: try required(scope, "databaseScope"), zoneID: zoneID,
                share: inZone(try required(share, "share")), rootRecord: rootRecord.map(inZone),
                ownerIdentity: try required(owner, "ownerIdentity"),
                participantRole: try required(role, "participantType"),
                participantStatus: try required(status, "participantStatus"),
                participantPermission: try required(permission, "participantPermission")))
    }

    /// Reads a record dictionary, and whether it named its zone.
    private static func readRecord(_ reader: inout WireBodyReader, _ what: String) throws -> (Record, Bool) {
        let start = reader.position
        guard case .record(let record, let hasZoneID) = try reader.readRecord() else {
            throw reader.error("\(what) is a deleted record's entry", at: start)
        }
        return (record, hasZoneID)
    }
}
