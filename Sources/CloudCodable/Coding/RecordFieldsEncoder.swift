import Foundation

/// The `Encoder` for the top level of a record: every key becomes a field.
///
/// Calls that `Encoder` cannot let throw (asking for an unkeyed container at
/// the top, say) record an error that ``finish(_:)`` throws, so that no
/// shape of `encode(to:)` can trap.
final class RecordFieldsEncoder: Encoder {
    // Only this encoder's containers touch these, one call at a time;
    // dynamic exclusivity checks would cost more than the writes.
    @exclusivity(unchecked) var fields: RecordFields
    /// Fields whose value a nested container or super-encoder is still
    /// writing; resolved in ``finish(_:)``.
    @exclusivity(unchecked) private var pending: [(key: String, node: EncodedNode)] = []
    private var deferredError: (any Error)?

    let codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init() {
        fields = RecordFields(minimumCapacity: 16)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RecordKeyedEncodingContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        fail("a record's top level must be a keyed container, not an unkeyed one")
        return TreeUnkeyedEncodingContainer(array: ArrayNode(), path: CodingPath())
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        RecordSingleValueEncodingContainer(encoder: self)
    }

    func fail(_ description: String) {
        if deferredError == nil {
            deferredError = EncodingError.invalidValue(
                (), .init(codingPath: [], debugDescription: description))
        }
    }

    /// Reused for every nested value of this record.
    private lazy var stream = StreamEncoder()

    /// The field for a value of a type without a direct mapping: streamed
    /// to JSON when its root is keyed, captured as a tree otherwise.
    func nestedField<T: Encodable>(_ value: T, key: some CodingKey) throws -> FieldValue? {
        switch try stream.encodeRoot(value, path: CodingPath(key)) {
        case .json(let data): return .bytes(data)
        case .scalar(let node): return try node.fieldValue(codingPath: [key])
        case .fallback:
            let node = try TreeEncoder.node(for: value, path: CodingPath(key))
            return try node.fieldValue(codingPath: [key])
        }
    }

    // MARK: Writing fields

    @inline(__always)
    func set(_ key: String, _ value: FieldValue) {
        if !pending.isEmpty { pending.removeAll { $0.key == key } }
        fields.updateValue(value, forKey: key)
    }

    func set(_ key: String, _ value: FieldValue?) {
        if let value {
            set(key, value)
        } else {
            if !pending.isEmpty { pending.removeAll { $0.key == key } }
            fields.removeValue(forKey: key)
        }
    }

    func setPending(_ key: String, _ node: EncodedNode) {
        pending.removeAll { $0.key == key }
        fields[key] = nil
        pending.append((key, node))
    }

    /// The record's fields, once `encode(to:)` has returned.
    func finish<Value>(_ value: Value) throws -> RecordFields {
        if let deferredError { throw deferredError }
        for (key, node) in pending {
            fields[key] = try node.fieldValue(codingPath: [AnyCodingKey(key)])
        }
        pending.removeAll()
        return fields
    }
}

struct RecordKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RecordFieldsEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { encoder.set(key.stringValue, nil) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        encoder.set(key.stringValue, .int64(value ? 1 : 0))
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        encoder.set(key.stringValue, .string(value))
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        encoder.set(key.stringValue, .double(try FieldConversion.finite(value, codingPath: [key])))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        encoder.set(key.stringValue, .double(try FieldConversion.finite(Double(value), codingPath: [key])))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { encoder.set(key.stringValue, .int64(Int64(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { encoder.set(key.stringValue, .int64(Int64(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { encoder.set(key.stringValue, .int64(Int64(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { encoder.set(key.stringValue, .int64(Int64(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { encoder.set(key.stringValue, .int64(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        encoder.set(key.stringValue, .int64(try FieldConversion.int64(value, codingPath: [key])))
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { encoder.set(key.stringValue, .int64(Int64(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { encoder.set(key.stringValue, .int64(Int64(value))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { encoder.set(key.stringValue, .int64(Int64(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        encoder.set(key.stringValue, .int64(try FieldConversion.int64(value, codingPath: [key])))
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        // The model's metadata travels in Record.metadata, never as a field.
        if T.self == RecordMetadata.self { return }
        if let field = try FieldConversion.knownField(value, codingPath: [key]) {
            encoder.set(key.stringValue, field)
            return
        }
        encoder.set(key.stringValue, try encoder.nestedField(value, key: key))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let object = ObjectNode()
        encoder.setPending(key.stringValue, .object(object))
        return KeyedEncodingContainer(
            TreeKeyedEncodingContainer<NestedKey>(object: object, path: CodingPath(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let array = ArrayNode()
        encoder.setPending(key.stringValue, .array(array))
        return TreeUnkeyedEncodingContainer(array: array, path: CodingPath(key))
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: AnyCodingKey("super")) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(forKey: AnyCodingKey(key.stringValue))
    }

    private func superEncoder(forKey key: AnyCodingKey) -> any Encoder {
        let superEncoder = TreeEncoder(path: CodingPath(key))
        encoder.setPending(key.stringValue, .slot(superEncoder))
        return superEncoder
    }
}

/// A single-value container at the top level: a wrapper type may forward to
/// a keyed value (which then becomes the record's fields); a bare scalar has
/// no field name and is refused.
struct RecordSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: RecordFieldsEncoder
    var codingPath: [any CodingKey] { [] }

    private func refuse() throws {
        throw EncodingError.invalidValue(
            (),
            .init(
                codingPath: [],
                debugDescription: "a record's top level must be a keyed container, not a single value"))
    }

    mutating func encodeNil() throws { try refuse() }
    mutating func encode(_ value: Bool) throws { try refuse() }
    mutating func encode(_ value: String) throws { try refuse() }
    mutating func encode(_ value: Double) throws { try refuse() }
    mutating func encode(_ value: Float) throws { try refuse() }
    mutating func encode(_ value: Int) throws { try refuse() }
    mutating func encode(_ value: Int8) throws { try refuse() }
    mutating func encode(_ value: Int16) throws { try refuse() }
    mutating func encode(_ value: Int32) throws { try refuse() }
    mutating func encode(_ value: Int64) throws { try refuse() }
    mutating func encode(_ value: UInt) throws { try refuse() }
    mutating func encode(_ value: UInt8) throws { try refuse() }
    mutating func encode(_ value: UInt16) throws { try refuse() }
    mutating func encode(_ value: UInt32) throws { try refuse() }
    mutating func encode(_ value: UInt64) throws { try refuse() }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if try FieldConversion.knownField(value, codingPath: []) != nil { try refuse() }
        try value.encode(to: encoder)
    }
}

/// A coding key made at run time: for paths in errors and synthesized keys.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(_ string: String) {
        stringValue = string
        intValue = nil
    }
    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
