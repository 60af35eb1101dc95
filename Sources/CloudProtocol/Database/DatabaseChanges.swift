import CloudCodable

/// The changes of the zones of a database since a sync token.
public struct DatabaseChanges: Sendable, Hashable {
    /// Zones that changed (or were created).
    public var changedZones: [ZoneID]
    /// Zones that were deleted.
    public var deletedZones: [ZoneID]
    /// Where this page ends.
    public var syncToken: SyncToken
    /// Whether more follow.
    public var moreComing: Bool

    /// Creates a page of database changes.
    public init(changedZones: [ZoneID], deletedZones: [ZoneID], syncToken: SyncToken, moreComing: Bool) {
        self.changedZones = changedZones
        self.deletedZones = deletedZones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}
