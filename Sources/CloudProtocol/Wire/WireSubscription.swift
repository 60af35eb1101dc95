import CloudCodable

/// A subscription dictionary as read, before it is known to be complete.
package struct WireSubscription {
    package var identifier: String
    package var type: String?
    package var zoneID: ZoneID?
    /// Where the `query` value starts: it is read once the dictionary is
    /// known to describe a query subscription.
    package var queryOffset: Int?
    /// The `firesOn` names, if the dictionary has them.
    package var firesOn: [(name: String, offset: Int)]?
    package var deleted = false
    package var errorMembers = WireErrorMembers()
    /// Where the dictionary starts, for errors.
    package var offset: Int

    /// Reads `{"subscriptionID":…,"subscriptionType":…,"zoneID":…}` (with
    /// `query` and `firesOn` for a query subscription), and the `deleted`
    /// and error members of a result.
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
            default:
                if try !result.readQueryMember(key, &reader), try !result.errorMembers.read(key, &reader) {
                    try reader.skipValue()
                }
            }
        }
        guard let identifier else { throw reader.missing("subscriptionID", in: what, at: start) }
        result.identifier = identifier
        return result
    }

    /// Reads the `query` and `firesOn` members; `false` for another key.
    package mutating func readQueryMember(_ key: String, _ reader: inout WireBodyReader) throws -> Bool {
        switch key {
        case "query":
            if try !reader.skipNull() {
                queryOffset = reader.position
                try reader.skipValue()
            }
        case "firesOn":
            guard try !reader.skipNull() else { return true }
            var names: [(name: String, offset: Int)] = []
            try reader.readArray("'firesOn'") { reader in
                let offset = reader.position
                names.append((try reader.readString("an element of 'firesOn', a string"), offset))
            }
            firesOn = names
        default:
            return false
        }
        return true
    }

    /// The subscription this dictionary describes: a zone subscription, or
    /// a query subscription (in the default zone when it names none, firing
    /// on every change when it has no `firesOn`).
    ///
    /// - Parameter readQuery: Reads the query at the reader's position.
    package func subscription(
        _ reader: inout WireBodyReader, _ what: String,
        readQuery: (inout WireBodyReader) throws -> RecordQuery = { try $0.readRecordQuery() }
    ) throws -> Subscription {
        switch type {
        case nil, "zone":
            guard let zoneID else { throw reader.missing("zoneID", in: "the subscription of \(what)", at: offset) }
            return Subscription(subscriptionID: identifier, zoneID: zoneID)
        case "query":
            guard let queryOffset else { throw reader.missing("query", in: "the subscription of \(what)", at: offset) }
            let end = reader.position
            reader.seek(to: queryOffset)
            let query = try readQuery(&reader)
            reader.seek(to: end)
            var reasons = Set(QueryNotification.Reason.allCases)
            if let firesOn {
                reasons = []
                for (name, at) in firesOn {
                    guard let reason = QueryNotification.Reason(firingName: name) else {
                        throw reader.error("\(what): firesOn '\(name)' is not create, update or delete", at: at)
                    }
                    reasons.insert(reason)
                }
            }
            return Subscription(
                subscriptionID: identifier, query: query, firesOn: reasons, zoneID: zoneID ?? .defaultZone)
        case let type?:
            throw reader.error(
                "\(what): subscriptionType '\(type)' is not supported ('zone' or 'query')", at: offset)
        }
    }
}

extension Record {
    /// Moves a record read without a `zoneID` into the zone of its request.
    package mutating func moveToZone(_ zone: ZoneID) {
        zoneID = zone
        metadata?.zoneID = zone
    }
}
