import Foundation

/// The `Decoder` for values below a record's top level: a field's value, an
/// element of a list field, or JSON held in a `BYTES` field.
///
/// Threads reuse one decoder, with its buffers, for the nested values of
/// records (``decode(_:from:path:)``); the containers it makes hold copies
/// of what they read, never the decoder, so reusing it cannot change them.
final class ValueDecoder: Decoder {
    @exclusivity(unchecked) private(set) var value: DecodedValue
    @exclusivity(unchecked) private(set) var path: CodingPath
    /// Buffers for the JSON text of a `BYTES` field and the members of its
    /// object, kept between values (a container still holding them makes
    /// the next value use new ones).
    @exclusivity(unchecked) private var text: [UInt8] = []
    @exclusivity(unchecked) private var members: [EmbeddedJSONObject.Member] = []
    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: DecodedValue, path: CodingPath) {
        self.value = value
        self.path = path
    }

    private static let cache = ThreadLocalCache<ValueDecoder>()

    /// Decodes `T` from `value` with this thread's decoder (or a new one
    /// when it is busy further up the stack).
    static func decode<T: Decodable>(_ type: T.Type, from value: DecodedValue, path: CodingPath) throws -> T {
        var decoder = cache.take() ?? ValueDecoder(value: .null, path: CodingPath())
        decoder.value = value
        decoder.path = path
        defer {
            // The path stays until the next value replaces it: resetting
            // it costs as much as setting it, and it holds no data.
            decoder.value = .null
            if decoder.text.capacity > 1 << 16 { decoder.text = [] }
            if decoder.members.capacity > 1024 { decoder.members = [] }
            cache.give(&decoder)
        }
        return try T(from: decoder)
    }

    /// The JSON inside a `BYTES` field (checked as a whole when it is
    /// opened), or the JSON value itself, with the members of an object;
    /// `nil` for other fields.
    private func json() throws -> (value: EmbeddedJSON, members: [EmbeddedJSONObject.Member]?)? {
        switch value {
        case .json(let json): return (json, nil)
        case .field(.bytes), .wire:
            text.removeAll(keepingCapacity: true)
            switch value {
            case .field(.bytes(let data)): EmbeddedJSON.append(data, to: &text)
            case .wire(let wire, let i) where wire.slot(i).type == .bytes: wire.appendBytes(at: i, to: &text)
            default: return nil
            }
            do {
                members.removeAll(keepingCapacity: true)
                let root = try EmbeddedJSON.open(text, members: &members)
                return (root, members)
            } catch {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: codingPath,
                        debugDescription: "the BYTES field does not hold valid JSON: \(error)",
                        underlyingError: error))
            }
        case .field, .null: return nil
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let (json, members) = try json(), json.kind == .object else {
            throw value.mismatch([String: Any].self, codingPath)
        }
        let object = EmbeddedJSONObject(text: json.text, members: members ?? json.members())
        return KeyedDecodingContainer(JSONKeyedDecodingContainer<Key>(object: object, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if case .field(let field) = value.materializedUnlessBytes, let list = FieldList(field) {
            return ListUnkeyedDecodingContainer(list: list, path: path)
        }
        guard let (json, _) = try json(), json.kind == .array else {
            throw value.mismatch([Any].self, codingPath)
        }
        return JSONUnkeyedDecodingContainer(
            source: JSONElements(text: json.text, elements: json.elements()), path: path)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ValueSingleValueDecodingContainer(decoder: self)
    }
}

/// Reads the decoder's value. It holds the decoder itself, which keeps it
/// one reference wide (no allocation for the existential, as a copy of the
/// value and its path needed), and is still safe when a model keeps it: a
/// decoder that something else holds is never reused, and once its value
/// is done it holds `null`.
struct ValueSingleValueDecodingContainer: SingleValueDecodingContainer {
    let decoder: ValueDecoder
    private var value: DecodedValue { decoder.value }
    private var path: CodingPath { decoder.path }
    var codingPath: [any CodingKey] { path.keys }

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try value.bool(codingPath) }
    func decode(_ type: String.Type) throws -> String { try value.string(codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try value.double(codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try value.float(codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try value.integer(codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try value.integer(codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try value.integer(codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try value.integer(codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try value.integer(codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try value.integer(codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try value.integer(codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try value.integer(codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try value.integer(codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try value.integer(codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try value.decode(T.self, path: path) }
}

// MARK: - JSON objects and arrays

/// An object in the JSON of a `BYTES` field, read in place.
struct JSONKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: EmbeddedJSONObject
    let path: CodingPath

    init(object: EmbeddedJSONObject, path: CodingPath) {
        self.object = object
        self.path = path
    }

    var codingPath: [any CodingKey] { path.keys }
    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    private func lookup(_ key: Key) -> EmbeddedJSON? { object.value(forKey: key.stringValue) }

    /// Reads the value of `key` in place, in one borrow of the bytes; a
    /// value of another kind goes the general way, for its error.
    @inline(__always)
    private func read<T>(
        _ key: Key, _ kind: EmbeddedJSON.Kind, _ body: (inout JSONScanner) -> T?,
        orElse general: (DecodedValue, [any CodingKey]) throws -> T
    ) throws -> T {
        let result = object.withMember(named: key.stringValue) { scanner, i -> T? in
            EmbeddedJSON.kind(object.members[i].first) == kind ? body(&scanner) : nil
        }
        if let result { return result }
        return try general(try value(key), path.appending(key).keys)
    }

    private func value(_ key: Key) throws -> DecodedValue {
        guard let value = lookup(key) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no value for key '\(key.stringValue)'"))
        }
        return .json(value)
    }

    func contains(_ key: Key) -> Bool { lookup(key) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { try value(key).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(key).bool(path.appending(key).keys) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try read(key, .string, EmbeddedJSON.string) { try $0.string($1) }
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try read(key, .number, EmbeddedJSON.double) { try $0.double($1) }
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(key).float(path.appending(key).keys) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try value(key).decode(T.self, path: path.appending(key))
    }

    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try read(key, .number, { EmbeddedJSON.exactInteger(&$0, T.self) }, orElse: { try $0.integer($1) })
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ValueDecoder(value: try value(key), path: path.appending(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try value(key), path: path.appending(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { superDecoder(named: AnyCodingKey("super")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { superDecoder(named: AnyCodingKey(key.stringValue)) }

    private func superDecoder(named key: AnyCodingKey) -> any Decoder {
        let found = Key(stringValue: key.stringValue).flatMap(lookup).map(DecodedValue.json) ?? .null
        return ValueDecoder(value: found, path: path.appending(key))
    }
}

/// Walks a sequence of decoded values: the elements of a JSON array or of a list field.
protocol ElementSource {
    var count: Int { get }
    func element(at index: Int) -> DecodedValue
}

/// The elements of an array in the JSON of a `BYTES` field.
struct JSONElements: ElementSource {
    let text: [UInt8]
    let elements: [EmbeddedJSONObject.Element]
    var count: Int { elements.count }
    func element(at index: Int) -> DecodedValue {
        .json(EmbeddedJSON(text: text, offset: elements[index].offset, first: elements[index].first))
    }
}

/// The elements of a list field, each as a single field value.
struct FieldList: ElementSource {
    let count: Int
    private let element: (Int) -> FieldValue

    init?(_ field: FieldValue) {
        switch field {
        case .stringList(let v): (count, element) = (v.count, { .string(v[$0]) })
        case .int64List(let v): (count, element) = (v.count, { .int64(v[$0]) })
        case .doubleList(let v): (count, element) = (v.count, { .double(v[$0]) })
        case .timestampList(let v): (count, element) = (v.count, { .timestamp(v[$0]) })
        case .bytesList(let v): (count, element) = (v.count, { .bytes(v[$0]) })
        case .referenceList(let v): (count, element) = (v.count, { .reference(v[$0]) })
        case .assetList(let v): (count, element) = (v.count, { .asset(v[$0]) })
        case .locationList(let v): (count, element) = (v.count, { .location(v[$0]) })
        default: return nil
        }
    }

    func element(at index: Int) -> DecodedValue { .field(element(index)) }
}

typealias JSONUnkeyedDecodingContainer = ElementsUnkeyedDecodingContainer<JSONElements>
typealias ListUnkeyedDecodingContainer = ElementsUnkeyedDecodingContainer<FieldList>

extension ElementsUnkeyedDecodingContainer<FieldList> {
    init(list: FieldList, path: CodingPath) { self.init(source: list, path: path) }
}

struct ElementsUnkeyedDecodingContainer<Source: ElementSource>: UnkeyedDecodingContainer {
    let source: Source
    let path: CodingPath
    private(set) var currentIndex = 0

    init(source: Source, path: CodingPath) {
        self.source = source
        self.path = path
    }

    var codingPath: [any CodingKey] { path.keys }
    var count: Int? { source.count }
    var isAtEnd: Bool { currentIndex >= source.count }

    private var elementPath: CodingPath { path.appending(index: currentIndex) }

    /// The next element, consumed only once it decoded, so that a caller may
    /// retry it as another type after a mismatch. `decode` gets the element
    /// and its path, which is only built when something asks for it (an
    /// error, a nested decoder): building it for every element cost more
    /// than decoding a number.
    private mutating func next<T>(_ type: T.Type, _ decode: (DecodedValue, () -> CodingPath) throws -> T) throws -> T {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: elementPath.keys, debugDescription: "the list has no more elements"))
        }
        let index = currentIndex
        let path = self.path
        let result = try decode(source.element(at: index)) { path.appending(index: index) }
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any?.self, .init(codingPath: elementPath.keys, debugDescription: "the list has no more elements"))
        }
        if source.element(at: currentIndex).isNull {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try $0.bool($1().keys) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try $0.string($1().keys) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try $0.double($1().keys) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try $0.float($1().keys) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type) { try $0.decode(T.self, path: $1()) }
    }

    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        try next(T.self) { try $0.integer($1().keys) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try next(KeyedDecodingContainer<NestedKey>.self) {
            try ValueDecoder(value: $0, path: $1()).container(keyedBy: type)
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try ValueDecoder(value: $0, path: $1()).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next((any Decoder).self) { ValueDecoder(value: $0, path: $1()) }
    }
}
