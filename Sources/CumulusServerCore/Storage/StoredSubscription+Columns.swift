import CloudCodable
import CloudProtocol

extension StoredSubscription {
    /// A query subscription's query and firing reasons as the SQL stores
    /// keep them: the query's wire JSON (`{"recordType":…,"filterBy":[…]}`)
    /// and the `firesOn` names joined by commas (`create,update,delete`);
    /// `nil` for a zone subscription. One encoding for every store.
    public func queryColumns() throws -> (query: String, firesOn: String)? {
        guard case .query(let query, let firesOn) = subscription.kind else { return nil }
        var writer = JSONWriter(capacity: 128)
        try writer.appendQuery(query)
        let names = QueryNotification.Reason.allCases.filter(firesOn.contains).map(\.firingName)
        return (String(decoding: writer.bytes, as: UTF8.self), names.joined(separator: ","))
    }

    /// A row read back: a zone subscription when `query` is `nil`.
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`) for columns
    ///   ``queryColumns()`` cannot have written.
    public init(user: String, subscriptionID: String, zoneName: String, query: String?, firesOn: String?) throws {
        let zoneID = ZoneID(zoneName: zoneName)
        guard let query else {
            self.init(user: user, subscription: Subscription(subscriptionID: subscriptionID, zoneID: zoneID))
            return
        }
        let impossible = CloudError(
            .internalError, reason: "the storage holds an impossible row: subscription '\(subscriptionID)'")
        let parsed: RecordQuery
        do {
            parsed = try WireBodyReader.read(Array(query.utf8)) { reader in
                let query = try reader.readRecordQuery()
                try reader.expectEnd()
                return query
            }
        } catch {
            throw impossible
        }
        var reasons = Set<QueryNotification.Reason>()
        for name in (firesOn ?? "").split(separator: ",") {
            guard let reason = QueryNotification.Reason(firingName: String(name)) else { throw impossible }
            reasons.insert(reason)
        }
        self.init(
            user: user,
            subscription: Subscription(subscriptionID: subscriptionID, query: parsed, firesOn: reasons, zoneID: zoneID))
    }
}
