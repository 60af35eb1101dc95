import Foundation
import Testing

@testable import CloudCodable

/// A small seeded generator (SplitMix64), so that "random" tests are the same
/// on every run.
struct WireRandom: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The UTF-8 of `text`.
func wireUTF8(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The error `body` throws, or `nil` when it returns.
func wireError<T>(_ body: () throws -> T) -> WireFormatError? {
    do {
        _ = try body()
        return nil
    } catch let error as WireFormatError {
        return error
    } catch {
        Issue.record("expected a WireFormatError, got \(type(of: error)): \(error)")
        return nil
    }
}

/// Records and values for the wire tests.
enum WireSamples {
    static let zone = ZoneID(zoneName: "Places", ownerRecordName: "_owner")

    /// A date on a whole millisecond, as the wire holds it.
    static func date(_ milliseconds: Int64) -> Date { Milliseconds.date(milliseconds) }

    /// The record of the speed goal.
    static func landmark() -> Record {
        var record = Record(recordType: "Landmark", recordName: "8A1F0F2C-3D4E-4F60-9A7B-1C2D3E4F5A6B")
        record["id"] = .string("8A1F0F2C-3D4E-4F60-9A7B-1C2D3E4F5A6B")
        record["name"] = .string("Golden Gate Bridge")
        record["coordinate"] = .bytes(Data((0..<40).map { UInt8(truncatingIfNeeded: $0 &* 37) }))
        record["tags"] = .stringList(["bridge", "landmark", "san francisco"])
        record["visits"] = .int64(1234)
        record["lastVisited"] = .timestamp(date(1_700_000_000_123))
        record["isFavorite"] = .int64(1)
        record.metadata = RecordMetadata(
            changeTag: "lq2z5k9a", zoneID: .defaultZone,
            created: RecordStamp(timestamp: 1_699_000_000_000, userRecordName: "_a1b2c3", deviceID: "2"),
            modified: RecordStamp(timestamp: 1_700_000_000_123, userRecordName: "_a1b2c3", deviceID: "2"))
        return record
    }

    static let awkwardStrings: [String] = [
        "", "plain", "quote \" backslash \\ slash /", "\u{0}\u{1}\u{1F}\u{7F}", "tab\tnew\nline\rfeed\u{8}\u{C}",
        "é ü ñ 中文 🏳️‍🌈 👍🏽 e\u{301}", "\u{FEFF}bom", "\u{2028}\u{2029}", "a\u{0}b", String(repeating: "x\"", count: 40),
        "\u{10FFFF}\u{E000}", "</script>",
    ]

    /// One field of every type, with edge values.
    static func everyType() -> Record {
        let reference = Reference(recordName: "other \"one\"", zoneID: zone, action: .deleteSelf)
        let asset = Asset(
            fileChecksum: "AZ9+/=", size: 123_456_789, referenceChecksum: "ref", wrappingKey: "wrap",
            receipt: "receipt\n", downloadURL: "https://example.com/a?b=c&d=%20")
        let location = Location(
            latitude: 37.819_722, longitude: -122.478_611, horizontalAccuracy: 5, verticalAccuracy: 0.5,
            altitude: -12.25, speed: 0, course: 359.999, timestamp: -1)
        var record = Record(recordType: "Everything", recordName: "all\u{1}types", zoneID: zone)
        record["string"] = .string("é \"quoted\" \\ / \n\t\u{0}\u{1F} 🏳️‍🌈")
        record["emptyString"] = .string("")
        record["int64"] = .int64(Int64.min)
        record["int64Max"] = .int64(Int64.max)
        record["double"] = .double(-0.0)
        record["subnormal"] = .double(Double.leastNonzeroMagnitude)
        record["largestSubnormal"] = .double(Double.leastNormalMagnitude.nextDown)
        record["doubleMax"] = .double(.greatestFiniteMagnitude)
        record["tenth"] = .double(0.1)
        record["timestamp"] = .timestamp(date(-1_234_567_890_123))
        record["bytes"] = .bytes(Data([0, 1, 2, 253, 254, 255]))
        record["emptyBytes"] = .bytes(Data())
        record["reference"] = .reference(reference)
        record["plainReference"] = .reference(Reference(recordName: "r"))
        record["asset"] = .asset(asset)
        record["emptyAsset"] = .asset(Asset())
        record["location"] = .location(location)
        record["plainLocation"] = .location(Location(latitude: -90, longitude: 180))
        record["stringList"] = .stringList(awkwardStrings)
        record["int64List"] = .int64List([0, -1, 1, .min, .max, 10, 99, 100, 1_000_000_007])
        record["doubleList"] = .doubleList([1, -0.0, 1e-5, 1e20, 1e16, 123_456.789, .leastNonzeroMagnitude, -.pi])
        record["timestampList"] = .timestampList([date(0), date(-1), date(253_402_300_799_999)])
        record["bytesList"] = .bytesList([
            Data(), Data([1]), Data([1, 2]), Data([1, 2, 3]), Data(repeating: 0xFF, count: 100),
        ])
        record["referenceList"] = .referenceList([reference, Reference(recordName: "x", action: .validate)])
        record["assetList"] = .assetList([asset, Asset(size: 0)])
        record["locationList"] = .locationList([location, Location(latitude: 1, longitude: 2, timestamp: 3)])
        for type in FieldType.allCases where type.isList {
            record["empty \(type.rawValue)"] = emptyList(type)
        }
        record.metadata = RecordMetadata(
            changeTag: "tag\"1", zoneID: zone,
            created: RecordStamp(timestamp: -5, userRecordName: "_creator"),
            modified: RecordStamp(timestamp: 1_700_000_000_000, deviceID: "device"))
        return record
    }

    static func emptyList(_ type: FieldType) -> FieldValue {
        switch type {
        case .stringList: .stringList([])
        case .int64List: .int64List([])
        case .doubleList: .doubleList([])
        case .timestampList: .timestampList([])
        case .bytesList: .bytesList([])
        case .referenceList: .referenceList([])
        case .assetList: .assetList([])
        case .locationList: .locationList([])
        default: preconditionFailure("not a list type")
        }
    }

    // MARK: - Random values

    static func string(_ random: inout WireRandom) -> String {
        let alphabet: [String] = [
            "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "€", "中", "😀", "🏳️‍🌈",
            "e\u{301}", "\u{FFFD}",
        ]
        let length = Int.random(in: 0...24, using: &random)
        var text = ""
        for _ in 0..<length {
            // Mostly ASCII letters, as real data is.
            if Bool.random(using: &random) {
                text.append(Character(Unicode.Scalar(UInt8.random(in: 0x61...0x7A, using: &random))))
            } else {
                text += alphabet.randomElement(using: &random)!
            }
        }
        return text
    }

    static func double(_ random: inout WireRandom) -> Double {
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
            while true {
                let value = Double(bitPattern: random.next())
                if value.isFinite { return value }
            }
        case 1:
            return [
                0.0, -0.0, Double.leastNonzeroMagnitude, -Double.leastNonzeroMagnitude,
                Double.leastNormalMagnitude.nextDown, .greatestFiniteMagnitude, 1e16, 1e-5,
            ][
                Int.random(in: 0..<8, using: &random)]
        case 2: return Double(Int64.random(in: -1_000_000...1_000_000, using: &random))
        case 3: return Double.random(in: -1...1, using: &random)
        default: return Double.random(in: -1e6...1e6, using: &random)
        }
    }

    static func int64(_ random: inout WireRandom) -> Int64 {
        switch Int.random(in: 0..<4, using: &random) {
        case 0: Int64(bitPattern: random.next())
        case 1: [Int64.min, .max, 0, -1, 9, 10, -10][Int.random(in: 0..<7, using: &random)]
        default: Int64.random(in: -100_000...100_000, using: &random)
        }
    }

    static func date(_ random: inout WireRandom) -> Date {
        date(Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &random))
    }

    static func data(_ random: inout WireRandom) -> Data {
        Data((0..<Int.random(in: 0...50, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    static func zone(_ random: inout WireRandom) -> ZoneID {
        ZoneID(zoneName: string(&random), ownerRecordName: Bool.random(using: &random) ? string(&random) : nil)
    }

    static func reference(_ random: inout WireRandom) -> Reference {
        Reference(
            recordName: string(&random), zoneID: Bool.random(using: &random) ? zone(&random) : nil,
            action: Reference.Action.allCases.randomElement(using: &random)!)
    }

    static func asset(_ random: inout WireRandom) -> Asset {
        func maybe(_ random: inout WireRandom) -> String? { Bool.random(using: &random) ? string(&random) : nil }
        return Asset(
            fileChecksum: maybe(&random), size: Bool.random(using: &random) ? int64(&random) : nil,
            referenceChecksum: maybe(&random), wrappingKey: maybe(&random), receipt: maybe(&random),
            downloadURL: maybe(&random))
    }

    static func location(_ random: inout WireRandom) -> Location {
        func maybe(_ random: inout WireRandom) -> Double? { Bool.random(using: &random) ? double(&random) : nil }
        return Location(
            latitude: double(&random), longitude: double(&random), horizontalAccuracy: maybe(&random),
            verticalAccuracy: maybe(&random), altitude: maybe(&random), speed: maybe(&random),
            course: maybe(&random), timestamp: Bool.random(using: &random) ? int64(&random) : nil)
    }

    static func list<T>(_ random: inout WireRandom, _ element: (inout WireRandom) -> T) -> [T] {
        (0..<Int.random(in: 0...4, using: &random)).map { _ in element(&random) }
    }

    static func value(_ random: inout WireRandom) -> FieldValue {
        switch FieldType.allCases.randomElement(using: &random)! {
        case .string: .string(string(&random))
        case .int64: .int64(int64(&random))
        case .double: .double(double(&random))
        case .timestamp: .timestamp(date(&random))
        case .bytes: .bytes(data(&random))
        case .reference: .reference(reference(&random))
        case .asset: .asset(asset(&random))
        case .location: .location(location(&random))
        case .stringList: .stringList(list(&random, string))
        case .int64List: .int64List(list(&random, int64))
        case .doubleList: .doubleList(list(&random, double))
        case .timestampList: .timestampList(list(&random, date))
        case .bytesList: .bytesList(list(&random, data))
        case .referenceList: .referenceList(list(&random, reference))
        case .assetList: .assetList(list(&random, asset))
        case .locationList: .locationList(list(&random, location))
        }
    }

    static func fields(_ random: inout WireRandom) -> RecordFields {
        var fields = RecordFields()
        for _ in 0..<Int.random(in: 0...8, using: &random) {
            fields[string(&random)] = value(&random)
        }
        return fields
    }

    static func record(_ random: inout WireRandom) -> Record {
        let zone = Bool.random(using: &random) ? ZoneID.defaultZone : zone(&random)
        var record = Record(
            recordType: string(&random), recordName: string(&random), zoneID: zone, fields: fields(&random))
        if Bool.random(using: &random) {
            func stamp(_ random: inout WireRandom) -> RecordStamp? {
                guard Bool.random(using: &random) else { return nil }
                return RecordStamp(
                    timestamp: int64(&random), userRecordName: Bool.random(using: &random) ? string(&random) : nil,
                    deviceID: Bool.random(using: &random) ? string(&random) : nil)
            }
            record.metadata = RecordMetadata(
                changeTag: string(&random), zoneID: zone, created: stamp(&random), modified: stamp(&random))
        }
        return record
    }
}

/// Whether two field values are the same, telling `-0.0` from `0.0`
/// (which `==` does not).
func wireIdentical(_ a: FieldValue, _ b: FieldValue) -> Bool {
    func bits(_ values: [Double]) -> [UInt64] { values.map(\.bitPattern) }
    func bits(_ location: Location) -> [UInt64?] {
        [
            location.latitude.bitPattern, location.longitude.bitPattern, location.horizontalAccuracy?.bitPattern,
            location.verticalAccuracy?.bitPattern, location.altitude?.bitPattern, location.speed?.bitPattern,
            location.course?.bitPattern,
        ]
    }
    switch (a, b) {
    case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
    case (.doubleList(let x), .doubleList(let y)): return bits(x) == bits(y)
    case (.location(let x), .location(let y)): return x == y && bits(x) == bits(y)
    case (.locationList(let x), .locationList(let y)):
        return x == y && x.map(bits) == y.map(bits)
    default: return a == b
    }
}

/// Whether two records are the same, telling `-0.0` from `0.0`.
func wireIdentical(_ a: Record, _ b: Record) -> Bool {
    guard a == b else { return false }
    return a.fields.allSatisfy { name, value in wireIdentical(value, b.fields[name]!) }
}

/// Whether Foundation's JSONSerialization read `a` where `b` was written.
/// On Linux it parses many doubles a few units in the last place off
/// (0.30000000000000004 reads as 0.3000000000000001, about 40% of random
/// doubles are off by up to 4 ulp); exactness is checked with JSONDecoder
/// and our own parser instead.
func wireSameDouble(_ a: Double, _ b: Double) -> Bool {
    a == b || abs(a - b) <= 16 * max(a.ulp, b.ulp)
}

/// Whether Foundation's JSONSerialization read `a` where `b` was written.
/// On Linux it drops a byte order mark at the start of a string.
func wireSameString(_ a: String?, _ b: String?) -> Bool {
    guard let a, let b else { return a == nil && b == nil }
    return a == b || (b.hasPrefix("\u{FEFF}") && a == String(b.dropFirst()))
}
