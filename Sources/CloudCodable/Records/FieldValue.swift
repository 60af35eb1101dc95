import Foundation

/// The value of one record field: exactly the field types of CloudKit Web Services.
///
/// Timestamps are held as `Date` but stored and sent in whole milliseconds;
/// ``RecordEncoder`` and the wire reader round to the millisecond, so a value
/// read back from the server equals the one that was written.
public enum FieldValue: Sendable, Hashable {
    /// `STRING`
    case string(String)
    /// `INT64`
    case int64(Int64)
    /// `DOUBLE`
    case double(Double)
    /// `TIMESTAMP`
    case timestamp(Date)
    /// `BYTES`
    case bytes(Data)
    /// `REFERENCE`
    indirect case reference(Reference)
    /// `ASSETID`
    indirect case asset(Asset)
    /// `LOCATION`
    indirect case location(Location)
    /// `STRING_LIST`
    case stringList([String])
    /// `INT64_LIST`
    case int64List([Int64])
    /// `DOUBLE_LIST`
    case doubleList([Double])
    /// `TIMESTAMP_LIST`
    case timestampList([Date])
    /// `BYTES_LIST`
    case bytesList([Data])
    /// `REFERENCE_LIST`
    case referenceList([Reference])
    /// `ASSETID_LIST`
    case assetList([Asset])
    /// `LOCATION_LIST`
    case locationList([Location])

    /// The field's wire type.
    public var type: FieldType {
        switch self {
        case .string: .string
        case .int64: .int64
        case .double: .double
        case .timestamp: .timestamp
        case .bytes: .bytes
        case .reference: .reference
        case .asset: .asset
        case .location: .location
        case .stringList: .stringList
        case .int64List: .int64List
        case .doubleList: .doubleList
        case .timestampList: .timestampList
        case .bytesList: .bytesList
        case .referenceList: .referenceList
        case .assetList: .assetList
        case .locationList: .locationList
        }
    }

    /// The number of elements of a list value, or `nil` for a single value.
    public var listCount: Int? {
        switch self {
        case .stringList(let v): v.count
        case .int64List(let v): v.count
        case .doubleList(let v): v.count
        case .timestampList(let v): v.count
        case .bytesList(let v): v.count
        case .referenceList(let v): v.count
        case .assetList(let v): v.count
        case .locationList(let v): v.count
        default: nil
        }
    }
}
