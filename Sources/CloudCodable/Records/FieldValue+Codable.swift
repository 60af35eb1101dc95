import Foundation

/// A field value is coded as the wire form of a field: `{"type": "STRING",
/// "value": …}`, with the same value encodings as ``WireFormat``: timestamps
/// as whole milliseconds since 1970 (`Int64`), bytes as a padded base64
/// string, references, assets and locations as their dictionaries, lists as
/// arrays.
///
/// ```swift
/// let json = try JSONEncoder().encode(FieldValue.int64(3))
/// // {"type":"INT64","value":3}
/// ```
///
/// Decoding checks the value against the type: an unknown type string, a
/// value of the wrong kind, bad base64 or an out-of-range integer is a
/// `DecodingError`.
extension FieldValue: Codable {
    private enum CodingKeys: String, CodingKey {
        case type, value
    }

    /// Decodes `{"type": …, "value": …}`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let typeName = try container.decode(String.self, forKey: .type)
        guard let type = FieldType(rawValue: typeName) else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "Unknown field type '\(typeName)'.")
        }
        switch type {
        case .string: self = .string(try container.decode(String.self, forKey: .value))
        case .int64: self = .int64(try container.decode(Int64.self, forKey: .value))
        case .double: self = .double(try container.decode(Double.self, forKey: .value))
        case .timestamp:
            self = .timestamp(Milliseconds.date(try container.decode(Int64.self, forKey: .value)))
        case .bytes:
            self = .bytes(try Self.bytes(container.decode(String.self, forKey: .value), in: container))
        case .reference: self = .reference(try container.decode(Reference.self, forKey: .value))
        case .asset: self = .asset(try container.decode(Asset.self, forKey: .value))
        case .location: self = .location(try container.decode(Location.self, forKey: .value))
        case .stringList: self = .stringList(try container.decode([String].self, forKey: .value))
        case .int64List: self = .int64List(try container.decode([Int64].self, forKey: .value))
        case .doubleList: self = .doubleList(try container.decode([Double].self, forKey: .value))
        case .timestampList:
            self = .timestampList(try container.decode([Int64].self, forKey: .value).map(Milliseconds.date))
        case .bytesList:
            let texts = try container.decode([String].self, forKey: .value)
            var list: [Data] = []
            list.reserveCapacity(texts.count)
            for text in texts { list.append(try Self.bytes(text, in: container)) }
            self = .bytesList(list)
        case .referenceList: self = .referenceList(try container.decode([Reference].self, forKey: .value))
        case .assetList: self = .assetList(try container.decode([Asset].self, forKey: .value))
        case .locationList: self = .locationList(try container.decode([Location].self, forKey: .value))
        }
    }

    /// Encodes `{"type": …, "value": …}`.
    ///
    /// - Throws: `EncodingError.invalidValue` for a timestamp whose
    ///   milliseconds do not fit `Int64`; a double that is not finite fails
    ///   as the encoder's strategy for such numbers says.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type.rawValue, forKey: .type)
        switch self {
        case .string(let value): try container.encode(value, forKey: .value)
        case .int64(let value): try container.encode(value, forKey: .value)
        case .double(let value): try container.encode(value, forKey: .value)
        case .timestamp(let date):
            try container.encode(Self.milliseconds(date, container), forKey: .value)
        case .bytes(let data): try container.encode(Base64.encodeToString(data), forKey: .value)
        case .reference(let value): try container.encode(value, forKey: .value)
        case .asset(let value): try container.encode(value, forKey: .value)
        case .location(let value): try container.encode(value, forKey: .value)
        case .stringList(let value): try container.encode(value, forKey: .value)
        case .int64List(let value): try container.encode(value, forKey: .value)
        case .doubleList(let value): try container.encode(value, forKey: .value)
        case .timestampList(let dates):
            var list: [Int64] = []
            list.reserveCapacity(dates.count)
            for date in dates { list.append(try Self.milliseconds(date, container)) }
            try container.encode(list, forKey: .value)
        case .bytesList(let value): try container.encode(value.map(Base64.encodeToString), forKey: .value)
        case .referenceList(let value): try container.encode(value, forKey: .value)
        case .assetList(let value): try container.encode(value, forKey: .value)
        case .locationList(let value): try container.encode(value, forKey: .value)
        }
    }

    private static func bytes(_ text: String, in container: KeyedDecodingContainer<CodingKeys>) throws -> Data {
        var text = text
        guard let data = text.withUTF8(Base64.decodeData) else {
            throw DecodingError.dataCorruptedError(
                forKey: .value, in: container, debugDescription: "Invalid base64 in a BYTES value.")
        }
        return data
    }

    private static func milliseconds(_ date: Date, _ container: KeyedEncodingContainer<CodingKeys>) throws -> Int64 {
        guard let milliseconds = Milliseconds.exact(date) else {
            throw EncodingError.invalidValue(
                date,
                EncodingError.Context(
                    codingPath: container.codingPath + [CodingKeys.value],
                    debugDescription: "The date's milliseconds since 1970 do not fit Int64."))
        }
        return milliseconds
    }
}
