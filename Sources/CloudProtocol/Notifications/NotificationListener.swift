import Foundation

/// The reader of a notification stream that writes too, as a sync engine
/// does: a `records/modify` made for it
/// (``CloudDatabase/modifyRecords(_:zoneID:atomic:for:)``) names the
/// stream's channel, and a Cumulus server leaves the zone changes only that
/// reader made out of that stream, since it has their answer already. Other
/// streams, and every write of another writer, are notified as before.
/// Each value is a listener of its own.
public struct NotificationListener: Sendable, Hashable {
    private let id = UUID()

    /// A new listener, equal to no other.
    public init() {}
}
