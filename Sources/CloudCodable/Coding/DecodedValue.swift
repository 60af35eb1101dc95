import Foundation

/// A value being decoded: a record field (or an element of a list field),
/// a piece of the JSON that a `BYTES` field holds, or nothing (what a
/// super-decoder sees for an absent key).
enum DecodedValue {
    case field(FieldValue)
    /// A field still in its wire text, for the types whose values are
    /// better read from the text than from a ``FieldValue`` (a `UUID` from
    /// a `STRING`, a list of strings, JSON in `BYTES`); see ``field(_:at:)``.
    case wire(WireFields, Int)
    case json(EmbeddedJSON)
    case null

    /// Field `i` of `fields`: its value, or, for the types that read better
    /// from the text, the field itself.
    @inline(__always)
    static func field(_ fields: RecordFields, at i: Int) -> DecodedValue {
        guard let wire = fields.wire else { return .field(fields.entries[i].value) }
        switch wire.slot(i).type {
        case .string, .stringList, .bytes: return .wire(wire, i)
        default: return .field(wire.value(at: i))
        }
    }

    /// The value with a field in wire text read.
    var materialized: DecodedValue {
        guard case .wire(let wire, let i) = self else { return self }
        return .field(wire.value(at: i))
    }

    /// The value with a field in wire text read, unless it is `BYTES`
    /// (whose JSON is read from the text).
    var materializedUnlessBytes: DecodedValue {
        if wireType == .bytes { return self }
        return materialized
    }

    /// The wire type of a field in wire text.
    @inline(__always)
    private var wireType: FieldType? {
        guard case .wire(let wire, let i) = self else { return nil }
        return wire.slot(i).type
    }

    /// How the value is described in errors: its field type or JSON kind.
    var kind: String {
        switch self {
        case .field(let value): return value.type.rawValue
        case .wire(let wire, let i): return wire.slot(i).type.rawValue
        case .json(let value): return value.description
        case .null: return "null"
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
        switch self {
        case .null: return true
        case .json(let value): return value.kind == .null
        case .field, .wire: return false
        }
    }

    func bool(_ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch self {
        case .wire: return try materialized.bool(path())
        case .field(.int64(let v)): return v != 0
        case .json(let json):
            guard let v = json.bool else { throw mismatch(Bool.self, path()) }
            return v
        default: throw mismatch(Bool.self, path())
        }
    }

    func string(_ path: @autoclosure () -> [any CodingKey]) throws -> String {
        switch self {
        case .field(.string(let v)): return v
        case .wire(let wire, let i) where wireType == .string: return wire.string(at: i)
        case .wire: return try materialized.string(path())
        case .json(let json):
            guard let v = json.string else { throw mismatch(String.self, path()) }
            return v
        default: throw mismatch(String.self, path())
        }
    }

    func double(_ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch self {
        case .wire: return try materialized.double(path())
        case .field(.double(let v)): return v
        case .field(.int64(let v)): return Double(v)
        case .json(let json):
            guard let v = json.double else { throw mismatch(Double.self, path()) }
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
        case .wire: return try materialized.integer(path())
        case .field(.int64(let v)):
            guard let result = T(exactly: v) else { throw corrupted("\(v) does not fit in \(T.self)", path()) }
            return result
        case .field(.double(let v)):
            guard let result = T(exactly: v) else { throw mismatch(T.self, path()) }
            return result
        case .json(let json):
            if let result = json.exactInteger(T.self) { return result }
            guard let text = json.numberText else { throw mismatch(T.self, path()) }
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
        case .wire: return try materialized.date(path())
        case .field(.timestamp(let v)): return v
        case .json(let json) where json.kind == .number:
            return Date(timeIntervalSinceReferenceDate: try double(path()))
        default: throw mismatch(Date.self, path())
        }
    }

    func data(_ path: @autoclosure () -> [any CodingKey]) throws -> Data {
        switch self {
        case .wire: return try materialized.data(path())
        case .field(.bytes(let v)): return v
        case .json(let json) where json.kind == .string:
            let text = try string(path())
            guard let v = Data(base64Encoded: text) else { throw corrupted("invalid base64 data", path()) }
            return v
        default: throw mismatch(Data.self, path())
        }
    }

    func uuid(_ path: @autoclosure () -> [any CodingKey]) throws -> UUID {
        if case .wire(let wire, let i) = self, wireType == .string, let v = wire.uuid(at: i) { return v }
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
        case .wire: return try materialized.decimal(path())
        case .field(.string(let text)):
            return try Self.decimal(text, path())
        case .json(let json) where json.kind == .number:
            return try Self.decimal(json.numberText ?? "", path())
        case .field(.double(let v)): return Decimal(v)
        case .field(.int64(let v)): return Decimal(v)
        default: throw mismatch(Decimal.self, path())
        }
    }

    private static func decimal(_ text: String, _ path: @autoclosure () -> [any CodingKey]) throws -> Decimal {
        guard looksNumeric(text), let v = Decimal(string: text, locale: nil) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path(), debugDescription: "'\(text)' is not a decimal number"))
        }
        return v
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

    /// The UUIDs of a `STRING_LIST`, or `nil` when one is not a UUID.
    private static func uuids(_ texts: [String]) -> [UUID]? {
        var uuids: [UUID] = []
        uuids.reserveCapacity(texts.count)
        for text in texts {
            guard let uuid = UUIDFormatting.parse(text) else { return nil }
            uuids.append(uuid)
        }
        return uuids
    }

    /// The integers of an `INT64_LIST` as `Int`s, or `nil` when one does not fit.
    private static func ints(_ values: [Int64]) -> [Int]? {
        var ints: [Int] = []
        ints.reserveCapacity(values.count)
        for value in values {
            guard let int = Int(exactly: value) else { return nil }
            ints.append(int)
        }
        return ints
    }

    /// Decodes `T`, directly for types with a fixed representation and
    /// through `init(from:)` otherwise. `recordZone` is the zone of the
    /// record whose field this is, which a ``CloudReference`` must point into.
    func decode<T: Decodable>(
        _ type: T.Type, path: @autoclosure () -> CodingPath, recordZone: @autoclosure () -> ZoneID? = nil
    ) throws -> T {
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
        if case .wire(let wire, let i) = self {
            if T.self == [String].self, wireType == .stringList { return C.cast(wire.stringList(at: i)) }
            // Nested values (JSON in BYTES) read the text; the rest read the value.
            if wireType != .bytes { return try materialized.decode(T.self, path: path(), recordZone: recordZone()) }
        }
        if case .field(let field) = self {
            // Lists as arrays of the matching type, without a Codable call
            // per element. (Each check returns `T` itself: a helper that
            // returned `T?` would cost a metadata lookup for `Optional<T>`.)
            // A list with an element the type cannot hold goes the general
            // way, which reports it.
            if T.self == [String].self, case .stringList(let v) = field { return C.cast(v) }
            if T.self == [UUID].self, case .stringList(let v) = field, let uuids = Self.uuids(v) {
                return C.cast(uuids)
            }
            if T.self == [Int].self, case .int64List(let v) = field, let ints = Self.ints(v) { return C.cast(ints) }
            if T.self == [Int64].self, case .int64List(let v) = field { return C.cast(v) }
            if T.self == [Bool].self, case .int64List(let v) = field { return C.cast(v.map { $0 != 0 }) }
            if T.self == [Double].self, case .doubleList(let v) = field { return C.cast(v) }
            if T.self == [Date].self, case .timestampList(let v) = field { return C.cast(v) }
            if T.self == [Data].self, case .bytesList(let v) = field { return C.cast(v) }
            if T.self == FieldValue.self { return C.cast(field) }
            if T.self == Reference.self, case .reference(let v) = field { return C.cast(v) }
            if T.self == Location.self, case .location(let v) = field { return C.cast(v) }
            if T.self == Asset.self, case .asset(let v) = field { return C.cast(v) }
            if T.self == [Reference].self, case .referenceList(let v) = field {
                return C.cast(v)
            }
            if T.self == [Location].self, case .locationList(let v) = field { return C.cast(v) }
            if T.self == [Asset].self, case .assetList(let v) = field { return C.cast(v) }
            if T.self == CloudAsset.self, case .asset(let v) = field, let asset = CloudAsset(v) {
                return C.cast(asset)
            }
            if T.self == [CloudAsset].self, case .assetList(let v) = field {
                let assets = v.compactMap(CloudAsset.init)
                if assets.count == v.count { return C.cast(assets) }
            }
            // A CloudReference (or a list): generic, so known by conformance, asked of reference fields only.
            if case .reference(let v) = field, let made = T.self as? any ReferenceFieldDecodable.Type {
                return try made.init(field: v, recordZone: recordZone(), codingPath: path().keys) as! T
            }
            if case .referenceList(let v) = field, let made = T.self as? any ReferenceListFieldDecodable.Type {
                return try made.init(field: v, recordZone: recordZone(), codingPath: path().keys) as! T
            }
        }
        return try ValueDecoder.decode(T.self, from: self, path: path())
    }
}
