import Foundation

/// The least that any coder built on `Codable` pays for a model: an encoder
/// that takes every value the model's `encode(to:)` hands it and writes
/// nothing, and a decoder that answers every request of `init(from:)` with
/// a fixed value and reads nothing.
///
/// What they cost is the dispatch through the standard library's container
/// boxes, the generic-metadata lookups the calls need and the model's own
/// synthesized code: work that `RecordEncoder`, `RecordDecoder`,
/// `JSONEncoder` and `JSONDecoder` all do before they do anything useful.
/// The floor coders reuse their containers (as the record coders do), treat
/// the same types as leaves as the record coders do (strings, UUIDs, dates,
/// data and arrays of those, which need no further `Codable` calls), and
/// count the keys they see so that the work cannot be optimised away.
///
/// `JSONEncoder` time ÷ floor time is the highest ratio any `Codable` path
/// could reach on this machine: the ceiling that the 10× targets are read
/// against.
public final class CodableFloor: @unchecked Sendable {
    // @unchecked: one fixture uses its floor from one thread at a time, as
    // it does its coders.
    private let encoder = FloorEncoder()
    private let decoder = FloorDecoder()

    /// Creates the two floor coders.
    public init() {}

    /// Walks `model` through its `encode(to:)`; returns the number of keys it wrote.
    public func encode<Model: Encodable>(_ model: Model) throws -> Int {
        encoder.keys = 0
        try model.encode(to: encoder)
        return encoder.keys
    }

    /// Makes a `Model` through its `init(from:)` from fixed values.
    public func decode<Model: Decodable>(_ type: Model.Type) throws -> Model {
        try Model(from: decoder)
    }
}

/// Whether `T` is one of the types the record coders map without further
/// `Codable` calls.
@inline(__always)
private func isLeaf<T>(_: T.Type) -> Bool {
    T.self == String.self || T.self == UUID.self || T.self == Date.self || T.self == Data.self
        || T.self == [String].self || T.self == [Int].self || T.self == [Double].self || T.self == [Date].self
}

/// Keyed containers by key type, each kept as the one reference it is made
/// of (the standard library's box), so that handing it out again needs no
/// more than the metadata of the container type itself.
private struct KeptContainers {
    private var keyTypes: [ObjectIdentifier] = []
    private var boxes: [AnyObject] = []

    @inline(__always)
    mutating func container<Key, Container>(_: Key.Type, make: () -> Container) -> Container {
        let id = ObjectIdentifier(Key.self)
        for i in keyTypes.indices where keyTypes[i] == id {
            return withUnsafeBytes(of: boxes[i]) { $0.load(as: Container.self) }
        }
        let made = make()
        if MemoryLayout<Container>.size == MemoryLayout<AnyObject>.size {
            keyTypes.append(id)
            boxes.append(withUnsafeBytes(of: made) { $0.load(as: AnyObject.self) })
        }
        return made
    }
}

private final class FloorEncoder: Encoder {
    var keys = 0
    private var kept = KeptContainers()
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        kept.container(Key.self) { KeyedEncodingContainer(FloorKeyedEncodingContainer<Key>(encoder: self)) }
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer { FloorUnkeyedEncodingContainer(encoder: self) }
    func singleValueContainer() -> any SingleValueEncodingContainer { FloorUnkeyedEncodingContainer(encoder: self) }
}

private struct FloorKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    unowned(unsafe) let encoder: FloorEncoder
    var codingPath: [any CodingKey] { [] }

    @inline(__always)
    private func note(_ key: Key) { encoder.keys &+= key.stringValue.utf8.count }

    mutating func encodeNil(forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: String, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { note(key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { note(key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        note(key)
        if !isLeaf(T.self) { try value.encode(to: encoder) }
    }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        guard let value else { return }
        try encode(value, forKey: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        encoder.container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        encoder.unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { encoder }
    mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
}

/// Takes elements and single values alike.
private struct FloorUnkeyedEncodingContainer: UnkeyedEncodingContainer, SingleValueEncodingContainer {
    unowned(unsafe) let encoder: FloorEncoder
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }

    mutating func encodeNil() throws { encoder.keys &+= 1 }
    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.keys &+= 1
        if !isLeaf(T.self) { try value.encode(to: encoder) }
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        encoder.container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { encoder }
}

/// The error for a type the floor decoder has no fixed value for.
public struct CodableFloorError: Error, CustomStringConvertible {
    /// The type that was asked for.
    public var type: String
    /// What the floor could not make.
    public var description: String { "the Codable floor has no fixed value for \(type)" }
}

private final class FloorDecoder: Decoder {
    var keys = 0
    private var kept = KeptContainers()
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        kept.container(Key.self) { KeyedDecodingContainer(FloorKeyedDecodingContainer<Key>(decoder: self)) }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw CodableFloorError(type: "an unkeyed container")
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw CodableFloorError(type: "a single value")
    }
}

private struct FloorKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    unowned(unsafe) let decoder: FloorDecoder
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    @inline(__always)
    private func note(_ key: Key) { decoder.keys &+= key.stringValue.utf8.count }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool {
        note(key)
        return false
    }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        note(key)
        return true
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        note(key)
        return ""
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try number(key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try number(key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try number(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try number(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try number(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try number(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try number(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try number(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try number(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try number(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try number(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try number(key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        note(key)
        // Each leaf returned as `T` itself: going through a `T?` would cost
        // a metadata lookup for `Optional<T>` that no real decoder pays.
        if T.self == String.self { return unsafeBitCast("", to: T.self) }
        if T.self == UUID.self {
            return unsafeBitCast(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)), to: T.self)
        }
        if T.self == Date.self { return unsafeBitCast(Date(timeIntervalSince1970: 1_700_000_000), to: T.self) }
        if T.self == Data.self { return unsafeBitCast(Data(), to: T.self) }
        if T.self == [String].self { return unsafeBitCast([String](), to: T.self) }
        if T.self == [Int].self { return unsafeBitCast([Int](), to: T.self) }
        if T.self == [Double].self { return unsafeBitCast([Double](), to: T.self) }
        if T.self == [Date].self { return unsafeBitCast([Date](), to: T.self) }
        return try T(from: decoder)
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        note(key)
        return nil
    }

    @inline(__always)
    private func number<T: Numeric>(_ key: Key) throws -> T {
        note(key)
        return 1
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try decoder.container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder.unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
}
