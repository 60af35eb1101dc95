import CloudCodable
import Foundation

/// The benchmark model: a landmark with every common kind of property.
struct Landmark: CloudCodable, Identifiable, Hashable {
    struct Coordinate: Codable, Hashable, Sendable {
        var latitude: Double
        var longitude: Double
    }

    var id: UUID
    var name: String
    var coordinate: Coordinate
    var tags: [String]
    var visits: Int
    var lastVisited: Date
    var isFavorite: Bool
    var cloudMetadata: RecordMetadata?

    static func sample(name: String = "Golden Gate Bridge") -> Landmark {
        Landmark(
            id: UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, name: name,
            coordinate: Coordinate(latitude: 37.8199, longitude: -122.4783),
            tags: ["bridge", "landmark", "san-francisco"], visits: 42,
            lastVisited: Date(timeIntervalSince1970: 1_700_000_000.123), isFavorite: true)
    }
}

enum Mood: String, Codable, Hashable, Sendable { case happy, sad }
enum Priority: Int, Codable, Hashable, Sendable {
    case low = 1
    case high = 9
}

/// A model with one property of every mapped kind.
struct Everything: CloudCodable, Hashable {
    struct Inner: Codable, Hashable, Sendable {
        var label: String
        var when: Date
        var blob: Data
        var big: UInt64
        var maybe: Int?
    }

    var cloudIdentifier: String { key }
    var cloudMetadata: RecordMetadata?
    var key: String
    var int: Int = -7
    var int8: Int8 = .min
    var int16: Int16 = .max
    var int32: Int32 = .min
    var int64: Int64 = .max
    var uint: UInt = 12
    var uint8: UInt8 = .max
    var uint16: UInt16 = .max
    var uint32: UInt32 = .max
    var uint64: UInt64 = UInt64(Int64.max)
    var bool: Bool = true
    var double: Double = 2.5
    var float: Float = 0.1
    var string: String = "héllo \"quoted\"\n"
    var uuid: UUID = UUID(uuidString: "00000000-0000-0000-0000-0000000000FF")!
    var url: URL = URL(string: "https://example.com/a?b=c")!
    var data: Data = Data([0, 1, 2, 255])
    var date: Date = Date(timeIntervalSince1970: -12_345.678)
    var decimal: Decimal = Decimal(string: "12345678901234567890.123456789")!
    var mood: Mood = .sad
    var priority: Priority = .high
    var optionalPresent: String? = "here"
    var optionalAbsent: String? = nil
    var strings: [String] = ["a", "b"]
    var ints: [Int] = [1, -2, 3]
    var doubles: [Double] = [1.5, -0.0]
    var bools: [Bool] = [true, false]
    var dates: [Date] = [Date(timeIntervalSince1970: 1), Date(timeIntervalSince1970: 2.5)]
    var uuids: [UUID] = [UUID(uuidString: "00000000-0000-0000-0000-000000000001")!]
    var datas: [Data] = [Data([1]), Data()]
    var moods: [Mood] = [.happy, .sad]
    var emptyMoods: [Mood] = []
    var set: Set<String> = ["x", "y"]
    var dictionary: [String: Int] = ["one": 1, "two": 2]
    var inner: Inner = Inner(
        label: "in", when: Date(timeIntervalSinceReferenceDate: 1000.25), blob: Data([9, 8]), big: .max)
    var inners: [Inner] = [
        Inner(label: "a", when: Date(timeIntervalSinceReferenceDate: 0), blob: Data(), big: 0, maybe: 3)
    ]
    var optionalInts: [Int?] = [1, nil]
    var nested: [[String]] = [["a"], []]
    var location: Location = Location(latitude: 1, longitude: 2)
    var reference: Reference = Reference(recordName: "other", action: .deleteSelf)
}
