import CloudCodable
import CloudProtocol

/// Which names a request may carry.
///
/// Every store keeps a name as its exact UTF-8 bytes (``ExactName``), but
/// PostgreSQL's text cannot hold U+0000 and C strings end at it, so a name
/// holding it could not be kept faithfully everywhere: it is refused with
/// `BAD_REQUEST` before anything is read or written. That covers container,
/// user, zone and owner names, record names and types, field names (of
/// saved records and cleared fields, filters, sorts and `desiredKeys`, in queries
/// and query subscriptions), the record names of references, and subscription
/// identifiers.
public enum NameRules {
    /// Refuses a caller whose container or user name holds U+0000.
    static func check(_ caller: Caller) throws(CloudError) {
        try check(caller.container, "the container name")
        if let user = caller.user { try check(user, "the user name") }
    }

    /// Refuses a request that carries a name holding U+0000.
    static func check(_ request: CloudRequest) throws(CloudError) {
        switch request {
        case .modifyRecords(let operations, let zoneID, _):
            try check(zoneID)
            for operation in operations {
                try check(operation.record)
                try check(operation.desiredKeys, "a desired key")
                try check(operation.clearedFields, "a cleared field name")
            }
        case .lookupRecords(let names, let zoneID, let desiredKeys):
            try check(zoneID)
            for name in names { try check(name, "a record name") }
            try check(desiredKeys, "a desired key")
        case .queryRecords(let query, let zoneID, _, _, let desiredKeys):
            try check(zoneID)
            try check(query)
            try check(desiredKeys, "a desired key")
        case .fetchRecordChanges(let request):
            try check(request.zoneID)
            try check(request.desiredKeys, "a desired key")
            try check(request.desiredRecordTypes, "a desired record type")
        case .fetchZoneChanges(let requests):
            for request in requests {
                try check(request.zoneID)
                try check(request.desiredKeys, "a desired key")
                try check(request.desiredRecordTypes, "a desired record type")
            }
        case .lookupZones(let zoneIDs):
            for zoneID in zoneIDs { try check(zoneID) }
        case .modifyZones(let operations):
            for operation in operations {
                switch operation {
                case .create(let zoneID), .delete(let zoneID): try check(zoneID)
                }
            }
        case .modifySubscriptions(let operations):
            for operation in operations {
                switch operation {
                case .save(let subscription):
                    try check(subscription.subscriptionID, "a subscription identifier")
                    try check(subscription.zoneID)
                    if case .query(let query, _) = subscription.kind { try check(query) }
                case .delete(let identifier):
                    try check(identifier, "a subscription identifier")
                }
            }
        case .lookupSubscriptions(let identifiers):
            for identifier in identifiers { try check(identifier, "a subscription identifier") }
        case .lookupUsersByID(let names):
            for name in names { try check(name, "a user record name") }
        case .discoverUsers(let infos):
            for info in infos {
                if let name = info.userRecordName { try check(name, "a user record name") }
            }
        case .resolveShares(let lookups), .acceptShares(let lookups):
            for lookup in lookups {
                try check(lookup.shortGUID, "a share's shortGUID")
                try check(lookup.rootRecordDesiredKeys, "a desired key")
            }
        case .requestAssetUploads(let requests, let zoneID):
            try check(zoneID)
            for request in requests {
                if let name = request.recordName { try check(name, "a record name") }
                try check(request.recordType, "a record type")
                try check(request.fieldName, "a field name")
            }
        case .fetchDatabaseChanges, .fetchChangedZones, .listZones, .listSubscriptions, .currentUser, .createToken,
            .lookupUsersByEmail:
            break
        }
    }

    private static func check(_ query: RecordQuery) throws(CloudError) {
        try check(query.recordType, "the query's record type")
        for filter in query.filters {
            try check(filter.fieldName, "a filter's field name")
            try check(filter.fieldValue, field: filter.fieldName)
        }
        for sort in query.sort { try check(sort.fieldName, "a sort's field name") }
    }

    private static func check(_ record: Record) throws(CloudError) {
        try check(record.recordName, "a record name")
        try check(record.recordType, "the record type of '\(record.recordName)'")
        try check(record.zoneID)
        if let parent = record.parent { try check(parent, "the parent of '\(record.recordName)'") }
        if let share = record.share { try check(share, "the share of '\(record.recordName)'") }
        for participant in record.shareDetails?.participants ?? [] {
            for name in [participant.participantID, participant.userRecordName, participant.lookupInfo?.userRecordName]
            {
                if let name { try check(name, "a participant of '\(record.recordName)'") }
            }
        }
        let fields = record.fields
        for position in fields.indices {
            let name = fields.name(at: position)
            try check(name, "a field name of '\(record.recordName)'")
            // Only references hold names; other values are not read.
            switch fields.type(at: position) {
            case .reference, .referenceList: try check(fields[position].value, field: name)
            default: continue
            }
        }
    }

    private static func check(_ value: FieldValue, field: String) throws(CloudError) {
        switch value {
        case .reference(let reference): try check(reference, field: field)
        case .referenceList(let references):
            for reference in references { try check(reference, field: field) }
        default: break
        }
    }

    private static func check(_ reference: Reference, field: String) throws(CloudError) {
        try check(reference.recordName, "the record name of a reference in '\(field)'")
        if let zoneID = reference.zoneID { try check(zoneID) }
    }

    private static func check(_ zoneID: ZoneID) throws(CloudError) {
        try check(zoneID.zoneName, "a zone name")
        if let owner = zoneID.ownerRecordName { try check(owner, "a zone's owner name") }
    }

    private static func check(_ names: [String]?, _ what: String) throws(CloudError) {
        for name in names ?? [] { try check(name, what) }
    }

    /// Refuses a name holding U+0000, saying `what` it is (for example
    /// "the container name").
    public static func check(_ name: String, _ what: String) throws(CloudError) {
        guard name.utf8.contains(0) else { return }
        let shown = String(decoding: name.utf8.map { $0 == 0 ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
        throw CloudError(
            .badRequest, reason: "\(what) ('\(shown)', U+0000 shown as '?') holds U+0000, which no name may hold")
    }
}
