import CloudCodable

/// The outcome of one record in a modify, lookup or changes answer.
public enum RecordResult: Sendable, Hashable {
    /// The record as the server now holds it, with fresh metadata.
    case record(Record)
    /// The record was deleted (or is deleted, in a changes answer).
    case deleted(recordName: String, zoneID: ZoneID)
    /// This record failed; the others in the request may have succeeded.
    case failure(CloudError)

    /// The saved or fetched record, if any.
    public var record: Record? {
        if case .record(let record) = self { return record }
        return nil
    }

    /// The error, if this record failed.
    public var error: CloudError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
