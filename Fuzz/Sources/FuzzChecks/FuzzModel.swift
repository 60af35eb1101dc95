import CloudCodable
import Foundation

/// A model with a property of every kind the record coders map, all
/// optional, so that a damaged record still decodes as far as it can and
/// the fuzzer reaches the code behind each field.
struct FuzzModel: CloudCodable, Equatable {
    enum Kind: String, Codable, Equatable { case first, second }
    enum Level: Int, Codable, Equatable {
        case low = 1
        case high = 9
    }

    struct Inner: Codable, Equatable {
        var label: String?
        var value: Double?
        var count: Int8?
        var when: Date?
        var blob: Data?
        var list: [UInt16]?
        var child: [Inner]?
        var map: [String: Int]?
    }

    var cloudIdentifier: String { "fuzz" }
    var cloudMetadata: RecordMetadata?

    var string: String?
    var int: Int?
    var int8: Int8?
    var int32: Int32?
    var uint: UInt?
    var uint64: UInt64?
    var double: Double?
    var float: Float?
    var bool: Bool?
    var date: Date?
    var data: Data?
    var uuid: UUID?
    var url: URL?
    var decimal: Decimal?
    var strings: [String]?
    var ints: [Int]?
    var bools: [Bool]?
    var doubles: [Double]?
    var dates: [Date]?
    var uuids: [UUID]?
    var blobs: [Data]?
    var kind: Kind?
    var level: Level?
    var kinds: [Kind]?
    var inner: Inner?
    var inners: [Inner]?
    var set: Set<String>?
    var map: [String: Double]?
    var reference: Reference?
    var location: Location?
    var asset: Asset?
    var references: [Reference]?
    var field: FieldValue?
}

/// A model whose properties are all required, as most models' are: a record
/// that lacks one, or holds one of the wrong type, must fail with an error.
struct StrictModel: CloudCodable, Equatable {
    struct Point: Codable, Equatable {
        var latitude: Double
        var longitude: Double
    }

    var id: UUID
    var name: String
    var point: Point
    var tags: [String]
    var visits: Int
    var when: Date
    var flag: Bool
    var cloudMetadata: RecordMetadata?

    var cloudIdentifier: String { id.uuidString }
}
