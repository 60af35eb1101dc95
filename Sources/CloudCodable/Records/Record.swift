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
    /// The record's links to its parent and share and a share's details:
    /// `nil` for most records, so that they cost one word.
    private var relations: Relations?

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

    /// The name of the record's parent, in the same zone (the wire's
    /// `parent: {recordName}`): a share of the parent covers this record.
    public var parent: String? {
        get { relations?.parent }
        set { updateRelations { $0.parent = newValue } }
    }

    /// The name of the share record whose root this record is, in the same
    /// zone (the wire's `share: {recordName, zoneID}`); set by the server.
    public var share: String? {
        get { relations?.share }
        set { updateRelations { $0.share = newValue } }
    }

    /// For a share record (type ``ShareDetails/recordType``), its handle,
    /// participants and permissions; `nil` for other records.
    public var shareDetails: ShareDetails? {
        get { relations?.shareDetails }
        set { updateRelations { $0.shareDetails = newValue } }
    }

    private mutating func updateRelations(_ change: (Relations) -> Void) {
        if relations == nil {
            relations = Relations()
        } else if !isKnownUniquelyReferenced(&relations!) {
            relations = relations!.copy()
        }
        change(relations!)
        if relations!.isEmpty { relations = nil }
    }

    /// The values of ``parent``, ``share`` and ``shareDetails``; changed only
    /// when this is their one reference.
    ///
    /// (`@unchecked Sendable`: a box that more than one record holds is never written.)
    private final class Relations: Hashable, @unchecked Sendable {
        var parent: String?
        var share: String?
        var shareDetails: ShareDetails?

        init(parent: String? = nil, share: String? = nil, shareDetails: ShareDetails? = nil) {
            self.parent = parent
            self.share = share
            self.shareDetails = shareDetails
        }

        var isEmpty: Bool { parent == nil && share == nil && shareDetails == nil }

        func copy() -> Relations { Relations(parent: parent, share: share, shareDetails: shareDetails) }

        static func == (lhs: Relations, rhs: Relations) -> Bool {
            lhs === rhs
                || (lhs.parent == rhs.parent && lhs.share == rhs.share && lhs.shareDetails == rhs.shareDetails)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(parent)
            hasher.combine(share)
            hasher.combine(shareDetails)
        }
    }
}
