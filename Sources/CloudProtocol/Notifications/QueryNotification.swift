import CloudCodable

/// What a query subscription hears: one record that matches its query
/// changed.
///
/// A record is judged by its fields after a create or an update and before
/// a delete; an update that takes a record out of the query's results is an
/// update too, so that a client keeping the results hears of it.
public struct QueryNotification: Sendable, Hashable {
    /// How the record changed.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// The record was created (or saved over its own deletion).
        case created
        /// The record was changed.
        case updated
        /// The record was deleted.
        case deleted
    }

    /// The subscription that fired.
    public var subscriptionID: String
    /// The record that changed.
    public var recordName: String
    /// The record's zone.
    public var zoneID: ZoneID
    /// How it changed.
    public var reason: Reason

    /// Creates a notification.
    public init(subscriptionID: String, recordName: String, zoneID: ZoneID, reason: Reason) {
        self.subscriptionID = subscriptionID
        self.recordName = recordName
        self.zoneID = zoneID
        self.reason = reason
    }
}
