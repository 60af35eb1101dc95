import Foundation

/// The conversions between Swift values and field values that the record
/// encoder and decoder share.
enum FieldConversion {
    /// A date as a timestamp field holds it: rounded to the millisecond.
    @inline(__always)
    static func timestamp(_ date: Date, codingPath: @autoclosure () -> [any CodingKey]) throws -> Date {
        guard let ms = Milliseconds.exact(date) else {
            throw EncodingError.invalidValue(
                date,
                .init(
                    codingPath: codingPath(),
                    debugDescription: "\(date) cannot be stored as a millisecond timestamp"))
        }
        return Milliseconds.date(ms)
    }

    /// An integer as `INT64`, or an error when it does not fit.
    @inline(__always)
    static func int64<T: FixedWidthInteger>(_ value: T, codingPath: @autoclosure () -> [any CodingKey])
        throws -> Int64
    {
        guard let v = Int64(exactly: value) else {
            throw EncodingError.invalidValue(
                value,
                .init(
                    codingPath: codingPath(),
                    debugDescription: "\(value) does not fit in a 64-bit signed integer (INT64)"))
        }
        return v
    }

    /// A finite double, or an error: JSON and the wire form have no NaN or infinity.
    @inline(__always)
    static func finite(_ value: Double, codingPath: @autoclosure () -> [any CodingKey]) throws -> Double {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                .init(
                    codingPath: codingPath(),
                    debugDescription: "\(value) is not a finite number and cannot be stored"))
        }
        return value
    }

    /// The field for a value whose type maps to a field directly, or `nil`
    /// when the type needs the general path. The checks compare type
    /// metadata only, so an unknown type costs a few pointer comparisons
    /// (the metadata of each array type is cached at its comparison, which
    /// is cheaper than reading a lazily initialised global).
    @inline(__always)
    static func knownField<T: Encodable>(_ value: T, codingPath: @autoclosure () -> [any CodingKey])
        throws -> FieldValue?
    {
        if T.self == String.self { return .string(cast(value)) }
        if T.self == UUID.self { return .string(UUIDFormatting.string(cast(value))) }
        if T.self == Date.self { return .timestamp(try timestamp(cast(value), codingPath: codingPath())) }
        if T.self == [String].self { return .stringList(cast(value)) }
        if T.self == Int.self { return .int64(Int64(cast(value) as Int)) }
        if T.self == Double.self { return .double(try finite(cast(value), codingPath: codingPath())) }
        if T.self == Bool.self { return .int64((cast(value) as Bool) ? 1 : 0) }
        if T.self == Data.self { return .bytes(cast(value)) }
        if T.self == URL.self { return .string((cast(value) as URL).absoluteString) }
        if T.self == Decimal.self { return .string((cast(value) as Decimal).description) }
        if T.self == [Int].self { return .int64List((cast(value) as [Int]).map { Int64($0) }) }
        if T.self == [Int64].self { return .int64List(cast(value)) }
        if T.self == [Double].self {
            let list: [Double] = cast(value)
            for v in list { _ = try finite(v, codingPath: codingPath()) }
            return .doubleList(list)
        }
        if T.self == [Bool].self { return .int64List((cast(value) as [Bool]).map { $0 ? 1 : 0 }) }
        if T.self == [Date].self {
            return .timestampList(try (cast(value) as [Date]).map { try timestamp($0, codingPath: codingPath()) })
        }
        if T.self == [UUID].self { return .stringList((cast(value) as [UUID]).map(UUIDFormatting.string)) }
        if T.self == [Data].self { return .bytesList(cast(value)) }
        if T.self == FieldValue.self { return cast(value) }
        if T.self == Reference.self { return .reference(cast(value)) }
        if T.self == Location.self { return .location(cast(value)) }
        if T.self == Asset.self { return .asset(cast(value)) }
        if T.self == [Reference].self { return .referenceList(cast(value)) }
        if T.self == [Location].self { return .locationList(cast(value)) }
        if T.self == [Asset].self { return .assetList(cast(value)) }
        if T.self == CloudAsset.self { return .asset(CloudAsset.encoded(cast(value))) }
        if T.self == [CloudAsset].self { return .assetList((cast(value) as [CloudAsset]).map(CloudAsset.encoded)) }
        return nil
    }

    /// Reinterprets a generic value as the concrete type its metadata was
    /// just compared with. Only called after `T.self == U.self`.
    @inline(__always)
    static func cast<T, U>(_ value: T, to type: U.Type = U.self) -> U {
        unsafeBitCast(value, to: U.self)
    }
}

extension EncodingError {
    static func int64Overflow(_ value: UInt64, codingPath: [any CodingKey]) -> EncodingError {
        .invalidValue(
            value,
            .init(
                codingPath: codingPath,
                debugDescription: "\(value) does not fit in a 64-bit signed integer (INT64)"))
    }
}
