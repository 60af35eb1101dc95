import CloudCodable

/// A subscription dictionary as read, before it is known to be complete.
package struct WireSubscription {
    package var identifier: String
    package var type: String?
    package var zoneID: ZoneID?
    package var deleted = false
    package var errorMembers = WireErrorMembers()
    /// Where the dictionary starts, for errors.
    package var offset: Int

    /// Reads `{"subscriptionID":…,"subscriptionType":…,"zoneID":…}`, and the
    /// `deleted` and error members of a result.
    package static func read(_ reader: inout WireBodyReader, _ what: String) throws -> WireSubscription {
        let start = reader.position
        var identifier: String?
        var result = WireSubscription(identifier: "", offset: start)
        try reader.readObject(what) { reader, key in
            switch key {
            case "subscriptionID": identifier = try reader.readString("subscriptionID, a string")
            case "subscriptionType": result.type = try reader.readOptionalString("subscriptionType, a string")
            case "zoneID": result.zoneID = try reader.skipNull() ? nil : reader.readZoneID()
            case "deleted": result.deleted = try reader.readBool()
            default: if try !result.errorMembers.read(key, &reader) { try reader.skipValue() }
            }
        }
        guard let identifier else { throw reader.missing("subscriptionID", in: what, at: start) }
        result.identifier = identifier
        return result
    }

    /// The zone subscription this dictionary describes.
    package func subscription(_ reader: inout WireBodyReader, _ what: String) throws -> Subscription {
        if let type, type != "zone" {
            throw reader.error("\(what): subscriptionType '\(type)' is not supported (only 'zone')", at: offset)
        }
        guard let zoneID else { throw reader.missing("zoneID", in: "the subscription of \(what)", at: offset) }
        return Subscription(subscriptionID: identifier, zoneID: zoneID)
    }
}

extension Record {
    /// Moves a record read without a `zoneID` into the zone of its request.
    package mutating func moveToZone(_ zone: ZoneID) {
        zoneID = zone
        metadata?.zoneID = zone
    }
}
