import Foundation

/// A record is coded as its CloudKit Web Services record dictionary, the
/// same shape as ``WireFormat`` writes:
///
/// ```json
/// {"recordName": "n1", "recordType": "Note", "recordChangeTag": "3",
///  "fields": {"title": {"type": "STRING", "value": "Groceries"}},
///  "created": {"timestamp": 1700000000000, "userRecordName": "_u1"},
///  "zoneID": {"zoneName": "_defaultZone"}}
/// ```
///
/// `recordChangeTag`, `created` and `modified` come from ``Record/metadata``.
/// Decoding: `recordName` and `recordType` are required, a missing `zoneID`
/// is ``ZoneID/defaultZone``, missing `fields` are none, and the metadata is
/// set when (and only when) `recordChangeTag` is present, with the record's zone.
extension Record: Codable {
    private enum CodingKeys: String, CodingKey {
        case recordName, recordType, recordChangeTag, fields, created, modified, zoneID
    }

    /// A field's name as a coding key.
    private struct FieldName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }

        init(_ name: String) { stringValue = name }

        init?(stringValue: String) { self.stringValue = stringValue }

        init?(intValue: Int) { nil }
    }

    /// Decodes a record dictionary.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let recordName = try container.decode(String.self, forKey: .recordName)
        let recordType = try container.decode(String.self, forKey: .recordType)
        let zoneID = try container.decodeIfPresent(ZoneID.self, forKey: .zoneID) ?? .defaultZone
        var fields = RecordFields()
        if try container.contains(.fields) && !container.decodeNil(forKey: .fields) {
            let values = try container.nestedContainer(keyedBy: FieldName.self, forKey: .fields)
            fields = RecordFields(minimumCapacity: values.allKeys.count)
            for name in values.allKeys {
                fields[name.stringValue] = try values.decode(FieldValue.self, forKey: name)
            }
        }
        var metadata: RecordMetadata?
        if let changeTag = try container.decodeIfPresent(String.self, forKey: .recordChangeTag) {
            metadata = RecordMetadata(
                changeTag: changeTag, zoneID: zoneID,
                created: try container.decodeIfPresent(RecordStamp.self, forKey: .created),
                modified: try container.decodeIfPresent(RecordStamp.self, forKey: .modified))
        }
        self.init(
            recordType: recordType, recordName: recordName, zoneID: zoneID, fields: fields, metadata: metadata)
    }

    /// Encodes the record dictionary.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(recordName, forKey: .recordName)
        try container.encode(recordType, forKey: .recordType)
        try container.encodeIfPresent(metadata?.changeTag, forKey: .recordChangeTag)
        var values = container.nestedContainer(keyedBy: FieldName.self, forKey: .fields)
        for (name, value) in fields {
            try values.encode(value, forKey: FieldName(name))
        }
        try container.encodeIfPresent(metadata?.created, forKey: .created)
        try container.encodeIfPresent(metadata?.modified, forKey: .modified)
        try container.encode(zoneID, forKey: .zoneID)
    }
}
