/// The type of a record field, as CloudKit Web Services names it on the wire.
public enum FieldType: String, Sendable, Hashable, Codable, CaseIterable {
    /// A string.
    case string = "STRING"
    /// A signed 64-bit integer; booleans are stored as `0` and `1`.
    case int64 = "INT64"
    /// A double-precision floating-point number.
    case double = "DOUBLE"
    /// A moment in time, in whole milliseconds since 1970.
    case timestamp = "TIMESTAMP"
    /// Raw bytes, base64 on the wire.
    case bytes = "BYTES"
    /// A reference to another record.
    case reference = "REFERENCE"
    /// A file stored beside the record.
    case asset = "ASSETID"
    /// A geographic location.
    case location = "LOCATION"
    /// A list of strings.
    case stringList = "STRING_LIST"
    /// A list of 64-bit integers.
    case int64List = "INT64_LIST"
    /// A list of doubles.
    case doubleList = "DOUBLE_LIST"
    /// A list of timestamps.
    case timestampList = "TIMESTAMP_LIST"
    /// A list of byte strings.
    case bytesList = "BYTES_LIST"
    /// A list of references.
    case referenceList = "REFERENCE_LIST"
    /// A list of assets.
    case assetList = "ASSETID_LIST"
    /// A list of locations.
    case locationList = "LOCATION_LIST"

    /// Whether this is one of the `_LIST` types.
    public var isList: Bool {
        switch self {
        case .string, .int64, .double, .timestamp, .bytes, .reference, .asset, .location: false
        default: true
        }
    }
}
