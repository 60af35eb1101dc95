import Foundation

/// A value being decoded: a record field (or an element of a list field),
/// or a piece of the JSON that a `BYTES` field holds.
enum DecodedValue {
    case field(FieldValue)
    case json(JSONValue)

    /// How the value is described in errors: its field type or JSON kind.
    var kind: String {
        switch self {
        case .field(let value): return value.type.rawValue
        case .json(let value):
            switch value {
            case .null: return "null"
            case .bool: return "a boolean"
            case .number: return "a number"
            case .string: return "a string"
            case .array: return "an array"
            case .object: return "an object"
            }
        }
    }

    func mismatch<T>(_ type: T.Type, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError {
        let keys = path()
        let place = keys.isEmpty ? "the value" : "'\(keys.map(\.stringValue).joined(separator: "."))'"
        return .typeMismatch(
            type, .init(codingPath: keys, debugDescription: "\(place) is \(kind), expected \(type)"))
    }

    func corrupted(_ description: String, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError {
        .dataCorrupted(.init(codingPath: path(), debugDescription: description))
    }

    // MARK: Scalars

    var isNull: Bool {
        if case .json(.null) = self { return true }
        return false
    }

    func bool(_ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch self {
        case .field(.int64(let v)): return v != 0
        case .json(.bool(let v)): return v
        default: throw mismatch(Bool.self, path())
        }
    }

    func string(_ path: @autoclosure () -> [any CodingKey]) throws -> String {
        switch self {
        case .field(.string(let v)), .json(.string(let v)): return v
        default: throw mismatch(String.self, path())
        }
    }

    func double(_ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch self {
        case .field(.double(let v)): return v
        case .field(.int64(let v)): return Double(v)
        case .json(.number(let text)):
            guard let v = Double(text) else { throw corrupted("'\(text)' is not a number", path()) }
            return v
        default: throw mismatch(Double.self, path())
        }
    }

    func float(_ path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let v = try double(path())
        let f = Float(v)
        guard f.isFinite || !v.isFinite else {
            throw corrupted("\(v) does not fit in Float", path())
        }
        return f
    }

    func integer<T: FixedWidthInteger>(_ path: @autoclosure () -> [any CodingKey]) throws -> T {
        switch self {
        case .field(.int64(let v)):
            guard let result = T(exactly: v) else { throw corrupted("\(v) does not fit in \(T.self)", path()) }
            return result
        case .field(.double(let v)):
            guard let result = T(exactly: v) else { throw mismatch(T.self, path()) }
            return result
        case .json(.number(let text)):
            if let result = T(text) { return result }
            if let v = Double(text), v.rounded() == v {
                guard let result = T(exactly: v) else {
                    throw corrupted("\(text) does not fit in \(T.self)", path())
                }
                return result
            }
            throw corrupted("\(text) is not a whole number that fits in \(T.self)", path())
        default: throw mismatch(T.self, path())
        }
    }

    func date(_ path: @autoclosure () -> [any CodingKey]) throws -> Date {
        switch self {
        case .field(.timestamp(let v)): return v
        case .json(.number): return Date(timeIntervalSinceReferenceDate: try double(path()))
        default: throw mismatch(Date.self, path())
        }
    }

    func data(_ path: @autoclosure () -> [any CodingKey]) throws -> Data {
        switch self {
        case .field(.bytes(let v)): return v
        case .json(.string(let text)):
            guard let v = Data(base64Encoded: text) else { throw corrupted("invalid base64 data", path()) }
            return v
        default: throw mismatch(Data.self, path())
        }
    }

    func uuid(_ path: @autoclosure () -> [any CodingKey]) throws -> UUID {
        let text = try string(path())
        guard let v = UUIDFormatting.parse(text) else { throw corrupted("'\(text)' is not a UUID", path()) }
        return v
    }

    func url(_ path: @autoclosure () -> [any CodingKey]) throws -> URL {
        let text = try string(path())
        guard let v = URL(string: text) else { throw corrupted("'\(text)' is not a URL", path()) }
        return v
    }

    func decimal(_ path: @autoclosure () -> [any CodingKey]) throws -> Decimal {
        switch self {
        case .field(.string(let text)), .json(.number(let text)):
            guard Self.looksNumeric(text), let v = Decimal(string: text, locale: nil) else {
                throw corrupted("'\(text)' is not a decimal number", path())
            }
            return v
        case .field(.double(let v)): return Decimal(v)
        case .field(.int64(let v)): return Decimal(v)
        default: throw mismatch(Decimal.self, path())
        }
    }

    /// Whether `text` is made of the characters of a decimal number only;
    /// `Decimal(string:)` would otherwise accept a numeric prefix of anything.
    private static func looksNumeric(_ text: String) -> Bool {
        var digits = 0
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
            case UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): break
            default: return false
            }
        }
        return digits > 0
    }

    // MARK: Any type

    /// Decodes `T`, directly for types with a fixed representation and
    /// through `init(from:)` otherwise.
    func decode<T: Decodable>(_ type: T.Type, path: @autoclosure () -> CodingPath) throws -> T {
        typealias C = FieldConversion
        if T.self == String.self { return C.cast(try string(path().keys)) }
        if T.self == UUID.self { return C.cast(try uuid(path().keys)) }
        if T.self == Date.self { return C.cast(try date(path().keys)) }
        if T.self == Int.self { return C.cast(try integer(path().keys) as Int) }
        if T.self == Double.self { return C.cast(try double(path().keys)) }
        if T.self == Bool.self { return C.cast(try bool(path().keys)) }
        if T.self == Data.self { return C.cast(try data(path().keys)) }
        if T.self == URL.self { return C.cast(try url(path().keys)) }
        if T.self == Decimal.self { return C.cast(try decimal(path().keys)) }
        if case .field(let field) = self {
            if ObjectIdentifier(T.self) == ArrayTypes.strings, case .stringList(let v) = field { return C.cast(v) }
            if T.self == FieldValue.self { return C.cast(field) }
            if T.self == Reference.self, case .reference(let v) = field { return C.cast(v) }
            if T.self == Location.self, case .location(let v) = field { return C.cast(v) }
            if T.self == Asset.self, case .asset(let v) = field { return C.cast(v) }
            if ObjectIdentifier(T.self) == ArrayTypes.references, case .referenceList(let v) = field {
                return C.cast(v)
            }
            if ObjectIdentifier(T.self) == ArrayTypes.locations, case .locationList(let v) = field { return C.cast(v) }
            if ObjectIdentifier(T.self) == ArrayTypes.assets, case .assetList(let v) = field { return C.cast(v) }
        }
        return try T(from: ValueDecoder(value: self, path: path()))
    }
}
