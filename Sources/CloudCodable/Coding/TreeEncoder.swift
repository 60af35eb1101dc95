import Foundation

/// The `Encoder` for values below a record's top level: it captures the
/// value as an ``EncodedNode`` tree, which then becomes a scalar field, a
/// list field, or `BYTES` holding JSON.
final class TreeEncoder: NodeSlot, Encoder {
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(path: CodingPath) {
        self.path = path
    }

    /// The node for `value`: directly for types with a fixed representation,
    /// otherwise by running its `encode(to:)`.
    static func node<T: Encodable>(for value: T, path: @autoclosure () -> CodingPath) throws -> EncodedNode {
        if let node = try knownNode(value, path: path()) { return node }
        let encoder = TreeEncoder(path: path())
        try value.encode(to: encoder)
        if case .array(let array) = encoder.node, isUnordered(T.self) { array.sortAsSet() }
        return encoder.node
    }

    /// The representation `JSONEncoder` gives these types by default, with
    /// dates, data and ``CloudReference``s kept distinct so a list of them
    /// maps to its own field type.
    @inline(__always)
    static func knownNode<T: Encodable>(_ value: T, path: @autoclosure () -> CodingPath) throws
        -> EncodedNode?
    {
        typealias C = FieldConversion
        if T.self == String.self { return .string(C.cast(value)) }
        if T.self == Int.self { return .int(Int64(C.cast(value) as Int)) }
        if T.self == Double.self { return .double(try C.finite(C.cast(value), codingPath: path().keys)) }
        if T.self == Bool.self { return .bool(C.cast(value)) }
        if T.self == UUID.self { return .string(UUIDFormatting.string(C.cast(value))) }
        if T.self == Date.self { return .date(C.cast(value)) }
        if T.self == Data.self { return .data(C.cast(value)) }
        if T.self == URL.self { return .string((C.cast(value) as URL).absoluteString) }
        if T.self == Decimal.self { return .decimal(C.cast(value)) }
        if T.self == ReferenceValue.self { return .reference((C.cast(value) as ReferenceValue).reference) }
        return nil
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: ObjectNode
        if case .object(let existing) = node {
            object = existing
        } else {
            object = ObjectNode()
            node = .object(object)
        }
        return KeyedEncodingContainer(TreeKeyedEncodingContainer<Key>(object: object, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        TreeUnkeyedEncodingContainer(array: rootArray(), path: path)
    }

    /// The array the value's unkeyed container appends to, made on first use.
    func rootArray() -> ArrayNode {
        if case .array(let existing) = node { return existing }
        let array = ArrayNode()
        node = .array(array)
        return array
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        TreeSingleValueEncodingContainer(encoder: self)
    }
}

struct TreeKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: ObjectNode
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }

    private func set(_ key: Key, _ node: EncodedNode) { object.set(key.stringValue, node) }

    mutating func encodeNil(forKey key: Key) throws { set(key, .null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(key, .bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(key, .string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(key, .double(try FieldConversion.finite(value, codingPath: path.appending(key).keys)))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        _ = try FieldConversion.finite(Double(value), codingPath: path.appending(key).keys)
        set(key, .float(value))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(key, .int(Int64(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(key, .int(Int64(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(key, .int(Int64(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(key, .int(Int64(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(key, .int(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(key, .unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(key, .int(Int64(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(key, .int(Int64(value))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(key, .int(Int64(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(key, .unsigned(value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(key, try TreeEncoder.node(for: value, path: path.appending(key)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = ObjectNode()
        set(key, .object(nested))
        return KeyedEncodingContainer(TreeKeyedEncodingContainer<NestedKey>(object: nested, path: path.appending(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = ArrayNode()
        set(key, .array(nested))
        return TreeUnkeyedEncodingContainer(array: nested, path: path.appending(key))
    }

    mutating func superEncoder() -> any Encoder {
        let key = AnyCodingKey("super")
        let encoder = TreeEncoder(path: path.appending(key))
        object.set(key.stringValue, .slot(encoder))
        return encoder
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let encoder = TreeEncoder(path: path.appending(key))
        set(key, .slot(encoder))
        return encoder
    }
}

struct TreeUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let array: ArrayNode
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var count: Int { array.items.count }

    private func append(_ node: EncodedNode) { array.items.append(node) }
    private var nextPath: CodingPath { path.appending(index: array.items.count) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws {
        append(.double(try FieldConversion.finite(value, codingPath: nextPath.keys)))
    }
    mutating func encode(_ value: Float) throws {
        _ = try FieldConversion.finite(Double(value), codingPath: nextPath.keys)
        append(.float(value))
    }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: UInt) throws { append(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(.unsigned(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try TreeEncoder.node(for: value, path: nextPath))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = ObjectNode()
        let nestedPath = nextPath
        append(.object(nested))
        return KeyedEncodingContainer(TreeKeyedEncodingContainer<NestedKey>(object: nested, path: nestedPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = ArrayNode()
        let nestedPath = nextPath
        append(.array(nested))
        return TreeUnkeyedEncodingContainer(array: nested, path: nestedPath)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = TreeEncoder(path: nextPath)
        append(.slot(encoder))
        return encoder
    }
}

struct TreeSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: TreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ node: EncodedNode) { encoder.node = node }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws {
        set(.double(try FieldConversion.finite(value, codingPath: codingPath)))
    }
    mutating func encode(_ value: Float) throws {
        _ = try FieldConversion.finite(Double(value), codingPath: codingPath)
        set(.float(value))
    }
    mutating func encode(_ value: Int) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.int(value)) }
    mutating func encode(_ value: UInt) throws { set(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { set(.unsigned(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        set(try TreeEncoder.node(for: value, path: encoder.path))
    }
}

extension EncodedNode {
    /// An unsigned integer: `.int` when it fits, `.uint` otherwise.
    static func unsigned(_ value: UInt64) -> EncodedNode {
        value <= UInt64(Int64.max) ? .int(Int64(value)) : .uint(value)
    }
}
