import Foundation

/// Turns models into records.
///
/// ```swift
/// let record = try RecordEncoder().encode(note)
/// record.fields["title"]  // .string("Groceries")
/// ```
///
/// Each stored property becomes a field, mapped to the CloudKit Web Services
/// field types: strings, UUIDs, URLs and string-backed enums as `STRING`;
/// integers, booleans and integer-backed enums as `INT64`; floating-point
/// numbers as `DOUBLE`; dates as millisecond `TIMESTAMP`s; `Data` as `BYTES`;
/// arrays of those as the matching `_LIST` type; ``Reference``, ``Location``
/// and ``Asset`` as their own types; nested structs, dictionaries and arrays
/// of structs as `BYTES` holding the value's JSON. `nil` leaves the field out.
/// `Decimal` is stored as a `STRING`, which keeps every digit.
///
/// Equal values encode to equal bytes, so that fields can be compared (the
/// default ``CloudCodable/resolveConflict(client:server:ancestor:)`` does):
/// nested JSON is canonical, every object's members sorted by the UTF-8
/// bytes of their keys, struct keys included; and the elements of a `Set`
/// are written sorted, not in the set's iteration order.
///
/// The encoder refuses a record whose fields take more than ``sizeLimit``
/// bytes on the wire with a ``RecordTooLargeError``, and a value no field
/// type can hold (an integer beyond `Int64`, a non-finite number) with an
/// `EncodingError`.
public struct RecordEncoder: Sendable {
    /// The CloudKit limit on a record's size: 1 MB, 1,048,576 bytes.
    public static let defaultSizeLimit = 1_048_576

    /// The largest size, in bytes, that a record's fields may take in the
    /// wire form. Defaults to ``defaultSizeLimit``.
    public var sizeLimit: Int

    /// The zone for models that have no ``CloudCodable/cloudMetadata`` yet.
    /// Defaults to ``ZoneID/defaultZone``.
    public var zoneID: ZoneID

    /// Creates an encoder.
    public init(sizeLimit: Int = RecordEncoder.defaultSizeLimit, zoneID: ZoneID = .defaultZone) {
        self.sizeLimit = sizeLimit
        self.zoneID = zoneID
    }

    /// Encodes a model as a record: its fields, its
    /// ``CloudCodable/cloudRecordType`` and ``CloudCodable/cloudIdentifier``,
    /// its parent (``CloudCodable/cloudParentIdentifier``) and its metadata.
    ///
    /// - Throws: ``RecordTooLargeError`` when the fields exceed ``sizeLimit``;
    ///   `EncodingError` for an empty identifier or a value that no field can hold.
    public func encode<Model: CloudCodable>(_ model: Model) throws -> Record {
        let recordName = model.cloudIdentifier
        guard !recordName.isEmpty else {
            throw EncodingError.invalidValue(
                model,
                .init(
                    codingPath: [],
                    debugDescription: "\(Model.self) has an empty cloudIdentifier; a record needs a name"))
        }
        let fields = try RecordFieldsEncoder.encode(model)
        try checkSize(of: fields, recordType: Model.cloudRecordType, recordName: recordName)
        let metadata = model.cloudMetadata
        var record = Record(
            recordType: Model.cloudRecordType, recordName: recordName,
            zoneID: metadata?.zoneID ?? zoneID, fields: fields, metadata: metadata)
        if let parent = model.cloudParentIdentifier { record.parent = parent }
        return record
    }

    /// Encodes any value with a keyed representation into record fields,
    /// without the size check (there is no record to name yet).
    public func encodeFields<Value: Encodable>(_ value: Value) throws -> RecordFields {
        try RecordFieldsEncoder.encode(value)
    }

    /// Throws ``RecordTooLargeError`` when the record's fields take more than
    /// ``sizeLimit`` bytes in the wire form.
    public func checkSize(of record: Record) throws {
        try checkSize(of: record.fields, recordType: record.recordType, recordName: record.recordName)
    }

    @inline(__always)
    private func checkSize(of fields: RecordFields, recordType: @autoclosure () -> String, recordName: String) throws {
        // A bound that never under-counts decides nearly every record
        // without measuring strings and numbers exactly (and fields in
        // canonical wire text are measured exactly by their length).
        guard WireFormat.maximumEncodedSize(ofFields: fields) > sizeLimit else { return }
        let size = WireFormat.encodedSize(ofFields: fields)
        guard size > sizeLimit else { return }
        throw RecordTooLargeError(recordType: recordType(), recordName: recordName, size: size, limit: sizeLimit)
    }
}
