/// A record: what the cloud database stores for one model value.
///
/// A record has a type (the model's ``CloudCodable/cloudRecordType``), a name
/// unique in its zone (the model's ``CloudCodable/cloudIdentifier``), the zone,
/// its fields, and, once the server has stored it, its ``metadata``.
///
/// ```swift
/// var record = Record(recordType: "Note", recordName: "n1")
/// record.fields["title"] = .string("Groceries")
/// ```
public struct Record: Sendable, Hashable {
    /// The record's type; records of one type share a schema.
    public var recordType: String
    /// The record's name, unique in its zone.
    public var recordName: String
    /// The zone the record lives in. This is the authoritative zone of the
    /// record; ``metadata`` repeats it for the model's benefit.
    public var zoneID: ZoneID
    /// The record's fields by name.
    public var fields: RecordFields
    /// The server's metadata, or `nil` for a record that was never saved.
    public var metadata: RecordMetadata?

    /// Creates a record.
    public init(
        recordType: String, recordName: String, zoneID: ZoneID = .defaultZone,
        fields: RecordFields = [:], metadata: RecordMetadata? = nil
    ) {
        self.recordType = recordType
        self.recordName = recordName
        self.zoneID = zoneID
        self.fields = fields
        self.metadata = metadata
    }

    /// Creates a record from a dictionary of fields.
    public init(
        recordType: String, recordName: String, zoneID: ZoneID = .defaultZone,
        fields: [String: FieldValue], metadata: RecordMetadata? = nil
    ) {
        self.init(
            recordType: recordType, recordName: recordName, zoneID: zoneID, fields: RecordFields(fields),
            metadata: metadata)
    }

    /// The value of the field named `key`, or `nil` when the record has no such field.
    public subscript(key: String) -> FieldValue? {
        get { fields[key] }
        set { fields[key] = newValue }
    }

    /// The record's change tag, if the server has stored it.
    public var changeTag: String? { metadata?.changeTag }
}
