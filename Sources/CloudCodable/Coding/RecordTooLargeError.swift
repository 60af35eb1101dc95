/// A record whose fields are larger than the limit allows.
///
/// Thrown by ``RecordEncoder`` when a model is handed over, so that nothing
/// too large is ever queued. The size counts the record's fields as the wire
/// form carries them (bytes as base64, strings escaped).
public struct RecordTooLargeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The type of the refused record.
    public var recordType: String
    /// The name of the refused record.
    public var recordName: String
    /// The size of its fields in bytes.
    public var size: Int
    /// The limit in bytes.
    public var limit: Int

    /// Creates the error.
    public init(recordType: String, recordName: String, size: Int, limit: Int) {
        self.recordType = recordType
        self.recordName = recordName
        self.size = size
        self.limit = limit
    }

    /// A sentence naming the record, its size and the limit.
    public var description: String {
        "record \(recordType) '\(recordName)' is \(size) bytes, over the limit of \(limit) bytes"
    }
}
