import CloudCodable

/// A standing request to be told about changes: to a zone's records, or
/// to the records of a zone that match a query.
///
/// ```swift
/// let posts = Subscription(
///     subscriptionID: "new-posts", query: RecordQuery(recordType: "Post"), firesOn: [.created])
/// _ = try await publicDatabase.modifySubscriptions([.save(posts)])
/// ```
public struct Subscription: Sendable, Hashable {
    /// The subscription's identifier, chosen by the client.
    public var subscriptionID: String
    /// The zone watched: all of it, or the records in it that match the query.
    public var zoneID: ZoneID
    /// What the subscription watches.
    public var kind: SubscriptionKind

    /// Creates a zone subscription: told when any record of the zone changes.
    public init(subscriptionID: String, zoneID: ZoneID) {
        self.subscriptionID = subscriptionID
        self.zoneID = zoneID
        self.kind = .zone
    }

    /// Creates a query subscription: told of each record of the zone that
    /// matches the query's record type and filters (its sort is ignored)
    /// when it is created, updated or deleted, as `firesOn` asks.
    public init(
        subscriptionID: String, query: RecordQuery,
        firesOn: Set<QueryNotification.Reason> = Set(QueryNotification.Reason.allCases),
        zoneID: ZoneID = .defaultZone
    ) {
        self.subscriptionID = subscriptionID
        self.zoneID = zoneID
        self.kind = .query(query, firesOn: firesOn)
    }
}

/// What a ``Subscription`` watches (the wire's `subscriptionType`).
public enum SubscriptionKind: Sendable, Hashable {
    /// Every change of the zone's records: ``CloudNotification/zoneChanged(_:subscriptionID:)``.
    case zone
    /// Each record of the query's type that passes its filters, for the
    /// changes `firesOn` names: ``CloudNotification/queryChanged(_:)``.
    case query(RecordQuery, firesOn: Set<QueryNotification.Reason>)
}

/// One operation of a `subscriptions/modify` request.
public enum SubscriptionOperation: Sendable, Hashable {
    /// Creates or replaces the subscription.
    case save(Subscription)
    /// Deletes the subscription with this identifier.
    case delete(String)
}

/// The outcome of one subscription in a subscriptions request.
public enum SubscriptionResult: Sendable, Hashable {
    /// The subscription as saved or found.
    case subscription(Subscription)
    /// The subscription was deleted.
    case deleted(String)
    /// This subscription failed.
    case failure(CloudError)
}
