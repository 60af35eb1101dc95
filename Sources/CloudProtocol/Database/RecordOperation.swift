import CloudCodable

/// How a `records/modify` operation treats the stored record.
public enum RecordOperationType: String, Sendable, Hashable, Codable, CaseIterable {
    /// Creates the record; `EXISTS` if the name is taken.
    case create
    /// Changes the fields sent; needs the current change tag.
    case update
    /// Changes the fields sent whatever the change tag; creates a missing record.
    case forceUpdate
    /// Replaces all fields (those not sent become absent); needs the current change tag.
    case replace
    /// Replaces all fields whatever the change tag; creates a missing record.
    case forceReplace
    /// Deletes the record; needs the current change tag.
    case delete
    /// Deletes the record whatever the change tag.
    case forceDelete

    /// Whether this is a delete.
    public var isDelete: Bool { self == .delete || self == .forceDelete }
    /// Whether the operation checks the record's change tag.
    public var checksChangeTag: Bool { self == .update || self == .replace || self == .delete }
    /// Whether the operation merges the fields sent into the stored ones
    /// (and so may clear some, ``RecordOperation/clearedFields``).
    package var mergesFields: Bool { self == .update || self == .forceUpdate }
}

/// One operation of a `records/modify` request.
public struct RecordOperation: Sendable, Hashable {
    /// What to do.
    public var type: RecordOperationType
    /// The record: for deletes only its name, zone and change tag matter.
    public var record: Record
    /// The fields the answer should carry, or `nil` for all of them.
    public var desiredKeys: [String]?
    /// Fields an `update` or `forceUpdate` clears, besides setting those of
    /// ``record``: a field delta's way of saying "no value any more". On the
    /// wire each is a field whose value is `null` (Cumulus's dialect, see
    /// ``CloudDatabase/supportsFieldClearing``); the other operations ignore it.
    public var clearedFields: [String]

    /// Creates an operation.
    public init(
        _ type: RecordOperationType, _ record: Record, desiredKeys: [String]? = nil, clearedFields: [String] = []
    ) {
        self.type = type
        self.record = record
        self.desiredKeys = desiredKeys
        self.clearedFields = clearedFields
    }
}
