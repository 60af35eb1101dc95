import CloudCodable
import Foundation

extension CloudRequest {
    /// The request's JSON body, or `nil` for the `GET` operations.
    ///
    /// A delete operation sends its record's name, type, change tag and zone,
    /// not its fields. An `update` or `forceUpdate` sends each of its
    /// ``RecordOperation/clearedFields`` as `"name":{"value":null}` inside
    /// `fields` (Cumulus's dialect). `tokens/create` sends `{}`: the
    /// environment is in the request's path.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for a value JSON cannot hold.
    public func encodedBody() throws -> [UInt8]? {
        try withCloudErrors(.badRequest, "the \(operation.rawValue) request cannot be written") {
            var writer = JSONWriter(capacity: 256)
            switch self {
            case .listZones, .listSubscriptions, .currentUser:
                return nil
            case .resolveShares(let lookups), .acceptShares(let lookups):
                Self.writeShareLookups(lookups, to: &writer)
            case .lookupUsersByEmail(let addresses):
                Self.writeUsers(addresses, key: #"{"emailAddress":"#, to: &writer)
            case .lookupUsersByID(let names):
                Self.writeUsers(names, key: #"{"userRecordName":"#, to: &writer)
            case .discoverUsers(let infos):
                writer.appendRaw(#"{"lookupInfos":["#)
                for index in infos.indices {
                    if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                    writer.writeLookupInfo(infos[index])
                }
                writer.appendRaw("]}")
            case .modifyRecords(let operations, let zoneID, let atomic):
                writer = JSONWriter(capacity: 256 + operations.count * 512)
                try Self.writeModifyRecords(operations, zoneID: zoneID, atomic: atomic, to: &writer)
            case .lookupRecords(let recordNames, let zoneID, let desiredKeys):
                writer.appendRaw(#"{"records":["#)
                for index in recordNames.indices {
                    writer.appendRaw(index > 0 ? #",{"recordName":"# : #"{"recordName":"#)
                    writer.appendString(recordNames[index])
                    writer.append(byte: UInt8(ascii: "}"))
                }
                writer.appendRaw(#"],"zoneID":"#)
                writer.appendZoneID(zoneID)
                Self.writeDesiredKeys(desiredKeys, to: &writer)
                writer.append(byte: UInt8(ascii: "}"))
            case .queryRecords(let query, let zoneID, let resultsLimit, let marker, let desiredKeys):
                try Self.writeQuery(query, to: &writer)
                writer.appendRaw(#","zoneID":"#)
                writer.appendZoneID(zoneID)
                if let resultsLimit {
                    writer.appendRaw(#","resultsLimit":"#)
                    writer.appendInt(Int64(resultsLimit))
                }
                if let marker {
                    writer.appendRaw(#","continuationMarker":"#)
                    writer.appendString(marker)
                }
                Self.writeDesiredKeys(desiredKeys, to: &writer)
                writer.append(byte: UInt8(ascii: "}"))
            case .fetchZoneChanges(let zones):
                Self.writeZoneChanges(zones, to: &writer)
            case .fetchRecordChanges(let zone):
                Self.writeZoneChangesRequest(zone, to: &writer)
            case .fetchChangedZones(let syncToken):
                writer.append(byte: UInt8(ascii: "{"))
                if let syncToken {
                    writer.appendRaw(#""syncToken":"#)
                    writer.appendString(syncToken.rawValue)
                }
                writer.append(byte: UInt8(ascii: "}"))
            case .fetchDatabaseChanges(let syncToken, let resultsLimit):
                writer.append(byte: UInt8(ascii: "{"))
                var first = true
                if let syncToken {
                    writer.appendRaw(#""syncToken":"#)
                    writer.appendString(syncToken.rawValue)
                    first = false
                }
                if let resultsLimit {
                    writer.appendRaw(first ? #""resultsLimit":"# : #","resultsLimit":"#)
                    writer.appendInt(Int64(resultsLimit))
                }
                writer.append(byte: UInt8(ascii: "}"))
            case .lookupZones(let zones):
                writer.appendRaw(#"{"zones":["#)
                for index in zones.indices {
                    if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                    writer.appendZoneID(zones[index])
                }
                writer.appendRaw("]}")
            case .modifyZones(let operations):
                Self.writeZoneOperations(operations, to: &writer)
            case .modifySubscriptions(let operations):
                try Self.writeSubscriptionOperations(operations, to: &writer)
            case .lookupSubscriptions(let identifiers):
                writer.appendRaw(#"{"subscriptions":["#)
                for index in identifiers.indices {
                    writer.appendRaw(index > 0 ? #",{"subscriptionID":"# : #"{"subscriptionID":"#)
                    writer.appendString(identifiers[index])
                    writer.append(byte: UInt8(ascii: "}"))
                }
                writer.appendRaw("]}")
            case .requestAssetUploads(let requests, let zoneID):
                Self.writeAssetUploads(requests, zoneID: zoneID, to: &writer)
            case .createToken(let environment):
                if let environment {
                    writer.appendRaw(#"{"apnsEnvironment":"#)
                    writer.appendString(environment.rawValue)
                    writer.append(byte: UInt8(ascii: "}"))
                } else {
                    writer.appendRaw("{}")
                }
            }
            return writer.bytes
        }
    }

    /// `{"zoneID":…,"tokens":[{"recordName":…,"recordType":…,"fieldName":…}]}`,
    /// without `recordName` when the server is to pick it.
    private static func writeAssetUploads(
        _ requests: [AssetUploadRequest], zoneID: ZoneID, to writer: inout JSONWriter
    ) {
        writer.appendRaw(#"{"zoneID":"#)
        writer.appendZoneID(zoneID)
        writer.appendRaw(#","tokens":["#)
        for index in requests.indices {
            let request = requests[index]
            writer.appendRaw(index > 0 ? ",{" : "{")
            if let name = request.recordName {
                writer.appendRaw(#""recordName":"#)
                writer.appendString(name)
                writer.append(byte: UInt8(ascii: ","))
            }
            writer.appendRaw(#""recordType":"#)
            writer.appendString(request.recordType)
            writer.appendRaw(#","fieldName":"#)
            writer.appendString(request.fieldName)
            writer.append(byte: UInt8(ascii: "}"))
        }
        writer.appendRaw("]}")
    }

    /// `{"shortGUIDs":[{"value":…,"shouldFetchRootRecord":true,"rootRecordDesiredKeys":[…]}]}`,
    /// the last two only when they ask for something.
    private static func writeShareLookups(_ lookups: [ShareLookup], to writer: inout JSONWriter) {
        writer.appendRaw(#"{"shortGUIDs":["#)
        for index in lookups.indices {
            let lookup = lookups[index]
            writer.appendRaw(index > 0 ? #",{"value":"# : #"{"value":"#)
            writer.appendString(lookup.shortGUID)
            if lookup.fetchRootRecord { writer.appendRaw(#","shouldFetchRootRecord":true"#) }
            if let keys = lookup.rootRecordDesiredKeys {
                writer.appendRaw(#","rootRecordDesiredKeys":"#)
                writer.appendStrings(keys)
            }
            writer.append(byte: UInt8(ascii: "}"))
        }
        writer.appendRaw("]}")
    }

    /// `{"users":[{key:…},…]}`, `key` being the opening of each item up to its value.
    private static func writeUsers(_ values: [String], key: StaticString, to writer: inout JSONWriter) {
        writer.appendRaw(#"{"users":["#)
        for index in values.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            writer.appendRaw(key)
            writer.appendString(values[index])
            writer.append(byte: UInt8(ascii: "}"))
        }
        writer.appendRaw("]}")
    }

    private static func writeModifyRecords(
        _ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, to writer: inout JSONWriter
    ) throws {
        writer.appendRaw(#"{"operations":["#)
        for index in operations.indices {
            let operation = operations[index]
            writer.appendRaw(index > 0 ? #",{"operationType":"# : #"{"operationType":"#)
            writer.appendString(operation.type.rawValue)
            writer.appendRaw(#","record":"#)
            if operation.type.isDelete {
                writeDeletedRecord(operation.record, to: &writer)
            } else {
                do {
                    if operation.type.mergesFields, !operation.clearedFields.isEmpty {
                        try writer.writeRecord(operation.record, clearing: operation.clearedFields)
                    } else {
                        try writer.writeRecord(operation.record)
                    }
                } catch {
                    throw CloudError(
                        .badRequest, reason: "record '\(operation.record.recordName)' cannot be written: \(error)",
                        recordName: operation.record.recordName)
                }
            }
            writeDesiredKeys(operation.desiredKeys, to: &writer)
            writer.append(byte: UInt8(ascii: "}"))
        }
        writer.appendRaw(#"],"zoneID":"#)
        writer.appendZoneID(zoneID)
        writer.appendRaw(atomic ? #","atomic":true}"# : #","atomic":false}"#)
    }

    /// What a delete sends of its record: name, type, change tag and zone.
    private static func writeDeletedRecord(_ record: Record, to writer: inout JSONWriter) {
        writer.appendRaw(#"{"recordName":"#)
        writer.appendString(record.recordName)
        writer.appendRaw(#","recordType":"#)
        writer.appendString(record.recordType)
        if let changeTag = record.changeTag {
            writer.appendRaw(#","recordChangeTag":"#)
            writer.appendString(changeTag)
        }
        writer.appendRaw(#","zoneID":"#)
        writer.appendZoneID(record.zoneID)
        writer.append(byte: UInt8(ascii: "}"))
    }

    private static func writeDesiredKeys(_ keys: [String]?, to writer: inout JSONWriter) {
        guard let keys else { return }
        writer.appendRaw(#","desiredKeys":"#)
        writer.appendStrings(keys)
    }

    /// Writes `{"query":{…}` (the caller closes the body).
    private static func writeQuery(_ query: RecordQuery, to writer: inout JSONWriter) throws {
        writer.appendRaw(#"{"query":"#)
        try writer.appendQuery(query)
    }

    private static func writeZoneChanges(_ zones: [ZoneChangesRequest], to writer: inout JSONWriter) {
        writer.appendRaw(#"{"zones":["#)
        for index in zones.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            writeZoneChangesRequest(zones[index], to: &writer)
        }
        writer.appendRaw("]}")
    }

    /// `{zoneID, syncToken?, resultsLimit?, desiredKeys?, desiredRecordTypes?}`.
    private static func writeZoneChangesRequest(_ zone: ZoneChangesRequest, to writer: inout JSONWriter) {
        writer.appendRaw(#"{"zoneID":"#)
        writer.appendZoneID(zone.zoneID)
        if let syncToken = zone.syncToken {
            writer.appendRaw(#","syncToken":"#)
            writer.appendString(syncToken.rawValue)
        }
        if let resultsLimit = zone.resultsLimit {
            writer.appendRaw(#","resultsLimit":"#)
            writer.appendInt(Int64(resultsLimit))
        }
        writeDesiredKeys(zone.desiredKeys, to: &writer)
        if let types = zone.desiredRecordTypes {
            writer.appendRaw(#","desiredRecordTypes":"#)
            writer.appendStrings(types)
        }
        writer.append(byte: UInt8(ascii: "}"))
    }

    private static func writeZoneOperations(_ operations: [ZoneOperation], to writer: inout JSONWriter) {
        writer.appendRaw(#"{"operations":["#)
        for index in operations.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            let zoneID: ZoneID
            switch operations[index] {
            case .create(let zone):
                writer.appendRaw(#"{"operationType":"create","zone":{"zoneID":"#)
                zoneID = zone
            case .delete(let zone):
                writer.appendRaw(#"{"operationType":"delete","zone":{"zoneID":"#)
                zoneID = zone
            }
            writer.appendZoneID(zoneID)
            writer.appendRaw("}}")
        }
        writer.appendRaw("]}")
    }

    private static func writeSubscriptionOperations(
        _ operations: [SubscriptionOperation], to writer: inout JSONWriter
    ) throws {
        writer.appendRaw(#"{"operations":["#)
        for index in operations.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            switch operations[index] {
            case .save(let subscription):
                writer.appendRaw(#"{"operationType":"create","subscription":"#)
                try writer.appendSubscription(subscription)
            case .delete(let identifier):
                writer.appendRaw(#"{"operationType":"delete","subscription":{"subscriptionID":"#)
                writer.appendString(identifier)
                writer.append(byte: UInt8(ascii: "}"))
            }
            writer.append(byte: UInt8(ascii: "}"))
        }
        writer.appendRaw("]}")
    }
}

extension JSONWriter {
    /// Appends `{"subscriptionID":…,"subscriptionType":"zone","zoneID":…}`, or
    /// for a query subscription
    /// `{"subscriptionID":…,"subscriptionType":"query","query":{…},"firesOn":[…],"zoneID":…}`.
    package mutating func appendSubscription(_ subscription: Subscription) throws {
        appendRaw(#"{"subscriptionID":"#)
        appendString(subscription.subscriptionID)
        switch subscription.kind {
        case .zone:
            appendRaw(#","subscriptionType":"zone""#)
        case .query(let query, let firesOn):
            appendRaw(#","subscriptionType":"query","query":"#)
            try appendQuery(query)
            appendRaw(#","firesOn":"#)
            appendStrings(QueryNotification.Reason.allCases.filter(firesOn.contains).map(\.firingName))
        }
        appendRaw(#","zoneID":"#)
        appendZoneID(subscription.zoneID)
        append(byte: UInt8(ascii: "}"))
    }
}

extension QueryNotification.Reason {
    /// The reason's name in a subscription's `firesOn`: `create`, `update` or `delete`.
    package var firingName: String {
        switch self {
        case .created: "create"
        case .updated: "update"
        case .deleted: "delete"
        }
    }

    /// The reason a `firesOn` name stands for.
    package init?(firingName: String) {
        guard let reason = Self.allCases.first(where: { $0.firingName == firingName }) else { return nil }
        self = reason
    }
}
