import Foundation

/// Turns records back into models: the inverse of ``RecordEncoder``.
///
/// ```swift
/// let note = try RecordDecoder().decode(Note.self, from: record)
/// ```
///
/// A missing field decodes as `nil` for an optional property and fails with
/// `DecodingError.keyNotFound` otherwise; a field of the wrong type (written
/// by another client, say) fails with `DecodingError.typeMismatch` naming the
/// field. Numbers convert where no information is lost: an `INT64` field
/// reads as a `Double`, a whole `DOUBLE` as an integer.
public struct RecordDecoder: Sendable {
    /// Creates a decoder.
    public init() {}

    /// Decodes a model from a record and gives it the record's metadata.
    ///
    /// - Throws: `DecodingError.typeMismatch` when the record's type is not
    ///   `Model.cloudRecordType` or a field has the wrong type,
    ///   `DecodingError.keyNotFound` for a missing non-optional field.
    public func decode<Model: CloudCodable>(_ type: Model.Type, from record: Record) throws -> Model {
        guard record.recordType == Model.cloudRecordType else {
            throw DecodingError.typeMismatch(
                Model.self,
                .init(
                    codingPath: [],
                    debugDescription:
                        "record '\(record.recordName)' has type \(record.recordType), expected \(Model.cloudRecordType)"
                ))
        }
        var metadata = record.metadata
        if metadata != nil, metadata?.zoneID != record.zoneID { metadata?.zoneID = record.zoneID }
        return try RecordFieldsDecoder.decode(Model.self, fields: record.fields, metadata: metadata)
    }

    /// Decodes any value with a keyed representation from record fields.
    public func decode<Value: Decodable>(_ type: Value.Type, fromFields fields: RecordFields) throws
        -> Value
    {
        try RecordFieldsDecoder.decode(Value.self, fields: fields)
    }
}

/// The `Decoder` for the top level of a record: every key is a field.
///
/// Threads reuse their decoder from one record to the next; the state
/// below belongs to the record being decoded and is let go afterwards.
final class RecordFieldsDecoder: Decoder {
    // Only this decoder's containers touch these, one call at a time.
    @exclusivity(unchecked) private(set) var fields = RecordFields()
    @exclusivity(unchecked) private(set) var metadata: RecordMetadata?
    /// Where the next field is probably: models usually read their fields
    /// in the order they wrote them.
    @exclusivity(unchecked) private var hint = 0
    /// Whether a record is being decoded. Containers find nothing while it
    /// is `false`: a container kept past the end of its `init(from:)`
    /// holds the decoder, which is then never reused (see
    /// ``ThreadLocalCache/give(_:)``), and finds it done.
    @exclusivity(unchecked) private(set) var isActive = false
    let codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private static let cache = ThreadLocalCache<RecordFieldsDecoder>()

    /// Decodes a model from `fields` with this thread's decoder (or a new
    /// one when it is busy further up the stack) and gives it `metadata`.
    static func decode<Model: CloudCodable>(_ type: Model.Type, fields: RecordFields, metadata: RecordMetadata?)
        throws -> Model
    {
        try withDecoder(fields: fields, metadata: metadata) { decoder in
            var model = try Model(from: decoder)
            model.cloudMetadata = decoder.metadata
            return model
        }
    }

    /// Decodes any value from `fields`, without metadata.
    static func decode<Value: Decodable>(_ type: Value.Type, fields: RecordFields) throws -> Value {
        try withDecoder(fields: fields, metadata: nil) { try Value(from: $0) }
    }

    @inline(__always)
    private static func withDecoder<Value>(
        fields: RecordFields, metadata: RecordMetadata?, _ body: (RecordFieldsDecoder) throws -> Value
    ) throws -> Value {
        var decoder = cache.take() ?? RecordFieldsDecoder()
        decoder.isActive = true
        decoder.fields = fields
        decoder.metadata = metadata
        decoder.hint = 0
        defer {
            decoder.isActive = false
            decoder.fields = RecordFields()
            decoder.metadata = nil
            cache.give(&decoder)
        }
        return try body(decoder)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RecordKeyedDecodingContainer<Key>(decoder: self))
    }

    /// The value of the field named `name`, unless the record is done.
    @inline(__always)
    func field(_ name: String) -> DecodedValue? {
        guard isActive, let i = fields.position(of: name, hint: hint) else { return nil }
        hint = i &+ 1
        return DecodedValue.field(fields, at: i)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self,
            .init(codingPath: [], debugDescription: "a record's top level is keyed, not an unkeyed container"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        RecordSingleValueDecodingContainer(decoder: self)
    }
}

struct RecordKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RecordFieldsDecoder
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] {
        guard decoder.isActive else { return [] }
        return decoder.fields.keys.compactMap { Key(stringValue: $0) }
    }

    /// The record's metadata, unless the record is done.
    private var metadata: RecordMetadata? { decoder.isActive ? decoder.metadata : nil }

    func contains(_ key: Key) -> Bool { decoder.field(key.stringValue) != nil }

    @inline(__always)
    private func field(_ key: Key) throws -> DecodedValue {
        guard let value = decoder.field(key.stringValue) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: [], debugDescription: "the record has no field '\(key.stringValue)'"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { decoder.field(key.stringValue) == nil }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try field(key).bool([key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try field(key).string([key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try field(key).double([key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try field(key).float([key]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try field(key).integer([key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try field(key).integer([key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try field(key).integer([key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try field(key).integer([key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try field(key).integer([key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try field(key).integer([key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try field(key).integer([key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try field(key).integer([key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try field(key).integer([key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try field(key).integer([key]) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if T.self == RecordMetadata.self {
            guard let metadata else {
                throw DecodingError.keyNotFound(
                    key, .init(codingPath: [], debugDescription: "the record has no metadata"))
            }
            return FieldConversion.cast(metadata)
        }
        return try field(key).decode(T.self, path: CodingPath(key), recordZone: metadata?.zoneID)
    }

    // The defaults of these look the field up three times; records are
    // mostly optionals, so one lookup each matters.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try decoder.field(key.stringValue).map { try $0.bool([key]) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try decoder.field(key.stringValue).map { try $0.string([key]) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try decoder.field(key.stringValue).map { try $0.double([key]) }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try decoder.field(key.stringValue).map { try $0.float([key]) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optionalInteger(key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optionalInteger(key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optionalInteger(key) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        if T.self == RecordMetadata.self {
            guard let metadata else { return nil }
            return FieldConversion.cast(metadata) as T
        }
        guard let value = decoder.field(key.stringValue) else { return nil }
        return try value.decode(T.self, path: CodingPath(key), recordZone: metadata?.zoneID)
    }

    private func optionalInteger<T: FixedWidthInteger>(_ key: Key) throws -> T? {
        try decoder.field(key.stringValue).map { try $0.integer([key]) }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ValueDecoder(value: try field(key), path: CodingPath(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try field(key), path: CodingPath(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { superDecoder(named: AnyCodingKey("super")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { superDecoder(named: AnyCodingKey(key.stringValue)) }

    private func superDecoder(named key: AnyCodingKey) -> any Decoder {
        let value = decoder.field(key.stringValue) ?? .null
        return ValueDecoder(value: value, path: CodingPath(key))
    }
}

/// A single-value container at the top level: lets a wrapper type forward
/// to a keyed value; a bare scalar cannot be a record.
struct RecordSingleValueDecodingContainer: SingleValueDecodingContainer {
    let decoder: RecordFieldsDecoder
    var codingPath: [any CodingKey] { [] }

    private func refuse<T>(_ type: T.Type) -> DecodingError {
        .typeMismatch(
            type, .init(codingPath: [], debugDescription: "a record's top level is keyed, not a single \(type)"))
    }

    func decodeNil() -> Bool { false }
    func decode(_ type: Bool.Type) throws -> Bool { throw refuse(type) }
    func decode(_ type: String.Type) throws -> String { throw refuse(type) }
    func decode(_ type: Double.Type) throws -> Double { throw refuse(type) }
    func decode(_ type: Float.Type) throws -> Float { throw refuse(type) }
    func decode(_ type: Int.Type) throws -> Int { throw refuse(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { throw refuse(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { throw refuse(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { throw refuse(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { throw refuse(type) }
    func decode(_ type: UInt.Type) throws -> UInt { throw refuse(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { throw refuse(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { throw refuse(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { throw refuse(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { throw refuse(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: decoder) }
}
