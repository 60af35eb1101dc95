import CloudCodable

/// One share to resolve or accept (an item of `records/resolve` and
/// `records/accept`).
public struct ShareLookup: Sendable, Hashable {
    /// The share's public handle, the last part of its URL.
    public var shortGUID: String
    /// Whether the answer carries the share's root record (hierarchy shares).
    public var fetchRootRecord: Bool
    /// The root record's fields to answer, or `nil` for all.
    public var rootRecordDesiredKeys: [String]?

    /// Creates an item.
    public init(shortGUID: String, fetchRootRecord: Bool = false, rootRecordDesiredKeys: [String]? = nil) {
        self.shortGUID = shortGUID
        self.fetchRootRecord = fetchRootRecord
        self.rootRecordDesiredKeys = rootRecordDesiredKeys
    }
}
