import CloudCodable

/// What to fetch from one zone in a `changes/zone` request.
public struct ZoneChangesRequest: Sendable, Hashable {
    /// The zone.
    public var zoneID: ZoneID
    /// Where the last fetch ended; `nil` fetches the zone from its beginning.
    public var syncToken: SyncToken?
    /// The most records to return; the server's default is 200.
    public var resultsLimit: Int?
    /// The fields to return, or `nil` for all.
    public var desiredKeys: [String]?
    /// The record types to return, or `nil` for all.
    public var desiredRecordTypes: [String]?

    /// Creates a request.
    public init(
        zoneID: ZoneID, syncToken: SyncToken? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        desiredRecordTypes: [String]? = nil
    ) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
        self.desiredRecordTypes = desiredRecordTypes
    }
}

/// The changes of one zone since a sync token.
public struct ZoneChanges: Sendable, Hashable {
    /// The zone.
    public var zoneID: ZoneID
    /// Changed records (`.record`) and deletions (`.deleted`), oldest change first.
    public var records: [RecordResult]
    /// Where this page ends: pass it to the next fetch.
    public var syncToken: SyncToken
    /// Whether more changes follow this page.
    public var moreComing: Bool

    /// Creates a page of changes.
    public init(zoneID: ZoneID, records: [RecordResult], syncToken: SyncToken, moreComing: Bool) {
        self.zoneID = zoneID
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}
