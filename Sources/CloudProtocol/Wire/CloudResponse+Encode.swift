import CloudCodable
import Foundation

extension CloudResponse {
    /// The answer's JSON body.
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`) for a value JSON cannot hold.
    public func encodedBody() throws -> [UInt8] {
        try withCloudErrors(.internalError, "the answer cannot be written") {
            var writer = JSONWriter(capacity: 1024)
            switch self {
            case .records(let results):
                writer = JSONWriter(capacity: 256 + results.count * 512)
                writer.appendRaw(#"{"records":"#)
                try Self.writeRecordResults(results, to: &writer)
                writer.append(byte: UInt8(ascii: "}"))
            case .query(let page):
                writer = JSONWriter(capacity: 256 + page.records.count * 512)
                writer.appendRaw(#"{"records":["#)
                for index in page.records.indices {
                    if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                    try writer.writeRecord(page.records[index])
                }
                writer.append(byte: UInt8(ascii: "]"))
                if let marker = page.continuationMarker {
                    writer.appendRaw(#","continuationMarker":"#)
                    writer.appendString(marker)
                }
                writer.append(byte: UInt8(ascii: "}"))
            case .recordChanges(let changes):
                writer = JSONWriter(capacity: 256 + changes.records.count * 512)
                try Self.writeZoneChangesEntry(changes, to: &writer)
            case .zoneChanges(let zones):
                let count = zones.reduce(0) { $0 + ((try? $1.get().records.count) ?? 0) }
                writer = JSONWriter(capacity: 256 + count * 512)
                try Self.writeZoneChanges(zones, to: &writer)
            case .databaseChanges(let changes):
                Self.writeDatabaseChanges(changes, to: &writer)
            case .shares(let results):
                writer = JSONWriter(capacity: 256 + results.count * 1024)
                try Self.writeShareResults(results, to: &writer)
            case .users(let users):
                writer.appendRaw(#"{"users":["#)
                for index in users.indices {
                    if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                    writer.appendUserIdentity(users[index])
                }
                writer.appendRaw("]}")
            case .zones(let zones):
                writer.appendRaw(#"{"zones":["#)
                for index in zones.indices {
                    if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                    writer.appendZone(zones[index])
                }
                writer.appendRaw("]}")
            case .zoneResults(let results):
                try Self.writeZoneResults(results, to: &writer)
            case .subscriptions(let subscriptions):
                writer.appendRaw(#"{"subscriptions":["#)
                for index in subscriptions.indices {
                    if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                    try writer.appendSubscription(subscriptions[index])
                }
                writer.appendRaw("]}")
            case .subscriptionResults(let results):
                try Self.writeSubscriptionResults(results, to: &writer)
            case .user(let user):
                writer.appendUserIdentity(user)
            case .assetUploads(let targets):
                writer.appendAssetUploadTargets(targets)
            case .token(let token):
                writer.appendRaw(#"{"apnsEnvironment":"#)
                writer.appendString(token.apnsEnvironment)
                writer.appendRaw(#","apnsToken":"#)
                writer.appendString(token.apnsToken)
                writer.appendRaw(#","webcourierURL":"#)
                writer.appendString(token.webcourierURL)
                writer.append(byte: UInt8(ascii: "}"))
            }
            return writer.bytes
        }
    }

    private static func writeRecordResults(_ results: [RecordResult], to writer: inout JSONWriter) throws {
        writer.append(byte: UInt8(ascii: "["))
        for index in results.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            try writer.appendRecordResult(results[index])
        }
        writer.append(byte: UInt8(ascii: "]"))
    }

    private static func writeZoneChanges(_ zones: [Result<ZoneChanges, CloudError>], to writer: inout JSONWriter) throws
    {
        writer.appendRaw(#"{"zones":["#)
        for index in zones.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            switch zones[index] {
            case .success(let changes):
                try writeZoneChangesEntry(changes, to: &writer)
            case .failure(let error):
                try writeZoneFailure(error, to: &writer)
            }
        }
        writer.appendRaw("]}")
    }

    /// The entry of a zone whose changes could not be fetched: its error dictionary.
    package static func writeZoneFailure(_ error: CloudError, to writer: inout JSONWriter) throws {
        writer.append(byte: UInt8(ascii: "{"))
        try writer.appendErrorMembers(error, afterMember: false)
        writer.append(byte: UInt8(ascii: "}"))
    }

    /// `{zoneID, syncToken, records, moreComing}`: one zone's changes.
    private static func writeZoneChangesEntry(_ changes: ZoneChanges, to writer: inout JSONWriter) throws {
        writer.appendRaw(#"{"zoneID":"#)
        writer.appendZoneID(changes.zoneID)
        writer.appendRaw(#","syncToken":"#)
        writer.appendString(changes.syncToken.rawValue)
        writer.appendRaw(#","records":"#)
        try writeRecordResults(changes.records, to: &writer)
        writer.appendRaw(changes.moreComing ? #","moreComing":true}"# : #","moreComing":false}"#)
    }

    private static func writeDatabaseChanges(_ changes: DatabaseChanges, to writer: inout JSONWriter) {
        writer.appendRaw(#"{"zones":["#)
        var first = true
        for zone in changes.changedZones {
            writer.appendRaw(first ? #"{"zoneID":"# : #",{"zoneID":"#)
            writer.appendZoneID(zone)
            writer.append(byte: UInt8(ascii: "}"))
            first = false
        }
        for zone in changes.deletedZones {
            writer.appendRaw(first ? #"{"zoneID":"# : #",{"zoneID":"#)
            writer.appendZoneID(zone)
            writer.appendRaw(#","deleted":true}"#)
            first = false
        }
        writer.appendRaw(#"],"syncToken":"#)
        writer.appendString(changes.syncToken.rawValue)
        writer.appendRaw(changes.moreComing ? #","moreComing":true}"# : #","moreComing":false}"#)
    }

    private static func writeZoneResults(_ results: [ZoneResult], to writer: inout JSONWriter) throws {
        writer.appendRaw(#"{"zones":["#)
        for index in results.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            switch results[index] {
            case .zone(let zone):
                writer.appendZone(zone)
            case .deleted(let zoneID):
                writer.appendRaw(#"{"zoneID":"#)
                writer.appendZoneID(zoneID)
                writer.appendRaw(#","deleted":true}"#)
            case .failure(let error):
                writer.append(byte: UInt8(ascii: "{"))
                try writer.appendErrorMembers(error, afterMember: false)
                writer.append(byte: UInt8(ascii: "}"))
            }
        }
        writer.appendRaw("]}")
    }

    /// `{"results":[…]}`: per share, its metadata or an error dictionary
    /// that names its `shortGUID`.
    private static func writeShareResults(_ results: [ShareResult], to writer: inout JSONWriter) throws {
        writer.appendRaw(#"{"results":["#)
        for index in results.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            switch results[index] {
            case .share(let metadata):
                try writeShareMetadata(metadata, to: &writer)
            case .failure(let shortGUID, let error):
                writer.appendRaw(#"{"shortGUID":"#)
                writer.appendString(shortGUID)
                try writer.appendErrorMembers(error, afterMember: true)
                writer.append(byte: UInt8(ascii: "}"))
            }
        }
        writer.appendRaw("]}")
    }

    /// `{shortGUID, containerIdentifier, environment, databaseScope, zoneID,
    /// share, rootRecord?, ownerIdentity, participantType, participantStatus,
    /// participantPermission}`.
    private static func writeShareMetadata(_ metadata: ShareMetadata, to writer: inout JSONWriter) throws {
        writer.appendRaw(#"{"shortGUID":"#)
        writer.appendString(metadata.shortGUID)
        writer.appendRaw(#","containerIdentifier":"#)
        writer.appendString(metadata.containerIdentifier)
        writer.appendRaw(#","environment":"#)
        writer.appendString(metadata.environment.rawValue)
        writer.appendRaw(#","databaseScope":"#)
        writer.appendString(metadata.databaseScope.wireName)
        writer.appendRaw(#","zoneID":"#)
        writer.appendZoneID(metadata.zoneID)
        writer.appendRaw(#","share":"#)
        try writer.writeRecord(metadata.share)
        if let root = metadata.rootRecord {
            writer.appendRaw(#","rootRecord":"#)
            try writer.writeRecord(root)
        }
        writer.appendRaw(#","ownerIdentity":"#)
        writer.appendUserIdentity(metadata.ownerIdentity)
        writer.appendRaw(#","participantType":"#)
        writer.appendString(metadata.participantRole.rawValue)
        writer.appendRaw(#","participantStatus":"#)
        writer.appendString(metadata.participantStatus.rawValue)
        writer.appendRaw(#","participantPermission":"#)
        writer.appendString(metadata.participantPermission.rawValue)
        writer.append(byte: UInt8(ascii: "}"))
    }

    private static func writeSubscriptionResults(_ results: [SubscriptionResult], to writer: inout JSONWriter) throws {
        writer.appendRaw(#"{"subscriptions":["#)
        for index in results.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            switch results[index] {
            case .subscription(let subscription):
                try writer.appendSubscription(subscription)
            case .deleted(let identifier):
                writer.appendRaw(#"{"subscriptionID":"#)
                writer.appendString(identifier)
                writer.appendRaw(#","deleted":true}"#)
            case .failure(let error):
                writer.append(byte: UInt8(ascii: "{"))
                try writer.appendErrorMembers(error, afterMember: false)
                writer.append(byte: UInt8(ascii: "}"))
            }
        }
        writer.appendRaw("]}")
    }
}

extension JSONWriter {
    /// Appends `{"zoneID":…,"syncToken":…}`, the token only when set.
    mutating func appendZone(_ zone: RecordZone) {
        appendRaw(#"{"zoneID":"#)
        appendZoneID(zone.zoneID)
        if let syncToken = zone.syncToken {
            appendRaw(#","syncToken":"#)
            appendString(syncToken.rawValue)
        }
        append(byte: UInt8(ascii: "}"))
    }
}
