import CloudCodable

/// A page of query results.
public struct QueryResult: Sendable, Hashable {
    /// The records of this page.
    public var records: [Record]
    /// Where the next page starts, when there is one.
    public var continuationMarker: String?

    /// Creates a page.
    public init(records: [Record], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }
}
