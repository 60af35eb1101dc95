import CloudCodable
import CloudProtocol

/// Which query subscriptions a write fires, judged inside the write's
/// transaction, where the records before and after it are both at hand.
enum QuerySubscriptions {
    /// The notifications of a write's changes to one zone: for each
    /// change (oldest first) and each query subscription of the zone whose
    /// user may read the record, when the record matches and the
    /// subscription fires on the change's reason.
    ///
    /// A created or updated record is judged after the write, a deleted one
    /// before it; an update fires when the record matches before or after,
    /// so that a record that left the results is heard of.
    static func notifications(
        of changes: [(before: StoredRecord?, after: StoredRecord)], zoneName: String, key: DatabaseKey,
        subscriptions: [StoredSubscription], serial: Int64, logged: Int64
    ) -> [StoredQueryNotification] {
        // A private database's records are its owner's to read, whoever else subscribed.
        let watching = subscriptions.filter { stored in
            guard case .query = stored.subscription.kind,
                stored.subscription.zoneID.zoneName.isExactly(zoneName)
            else { return false }
            return key.scope == .public || stored.user.isExactly(key.owner)
        }
        guard !watching.isEmpty else { return [] }
        var notifications: [StoredQueryNotification] = []
        for change in changes.sorted(by: { $0.after.serial < $1.after.serial }) {
            let before = change.before?.record
            let after = change.after.record
            let reason: QueryNotification.Reason
            let judged: [Record]
            switch (before, after) {
            case (nil, let record?): (reason, judged) = (.created, [record])
            case (let old?, let new?): (reason, judged) = (.updated, [old, new])
            case (let old?, nil): (reason, judged) = (.deleted, [old])
            case (nil, nil): continue
            }
            for stored in watching {
                guard case .query(let query, let firesOn) = stored.subscription.kind, firesOn.contains(reason),
                    judged.contains(where: { matches($0, query) })
                else { continue }
                notifications.append(
                    StoredQueryNotification(
                        user: stored.user, serial: serial, logged: logged,
                        notification: QueryNotification(
                            subscriptionID: stored.subscription.subscriptionID, recordName: change.after.name,
                            zoneID: ZoneID(zoneName: zoneName), reason: reason)))
            }
        }
        return notifications
    }

    /// Whether a record is one of the query's results (its sort aside).
    static func matches(_ record: Record, _ query: RecordQuery) -> Bool {
        record.recordType.isExactly(query.recordType) && QueryEvaluation.matches(record, query.filters)
    }
}
