import CloudCodable

/// A record zone as the server describes it.
public struct RecordZone: Sendable, Hashable {
    /// The zone's identity.
    public var zoneID: ZoneID
    /// The zone's current position in its change history.
    public var syncToken: SyncToken?

    /// Creates a zone description.
    public init(zoneID: ZoneID, syncToken: SyncToken? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
    }
}
