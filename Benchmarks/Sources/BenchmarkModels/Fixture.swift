import CloudCodable
import Foundation

/// A batch of models with every input the codec paths need, computed once:
/// the models, their records, their wire bytes and their Foundation JSON and
/// binary property-list encodings.
///
/// ```swift
/// let fixture = try Fixture<Landmark>(count: 1_000)
/// let checksum = try fixture.run(.modelToWire)  // encodes all 1,000
/// ```
///
/// ``run(_:)`` processes the whole batch once and returns a checksum derived
/// from every result, so the optimiser cannot drop the work. The coders are
/// created once per fixture, for Cumulus and Foundation alike.
public final class Fixture<Model: BenchmarkModel>: Sendable {
    /// The models, `count` distinct samples.
    public let models: [Model]
    /// `RecordEncoder().encode(model)` of each model.
    public let records: [Record]
    /// `WireFormat.encode(record)` of each record.
    public let wire: [[UInt8]]
    /// `JSONEncoder().encode(model)` of each model.
    public let json: [Data]
    /// Binary `PropertyListEncoder().encode(model)` of each model.
    public let propertyList: [Data]

    /// The total size of ``wire`` in bytes.
    public let wireByteCount: Int
    /// The total size of ``json`` in bytes.
    public let jsonByteCount: Int
    /// The total size of ``propertyList`` in bytes.
    public let propertyListByteCount: Int

    private let recordEncoder = RecordEncoder()
    private let recordDecoder = RecordDecoder()
    private let jsonEncoder = JSONEncoder()
    private let jsonDecoder = JSONDecoder()
    private let propertyListEncoder: PropertyListEncoder
    private let propertyListDecoder = PropertyListDecoder()
    private let floor = CodableFloor()

    /// Makes `count` samples of `Model` and encodes them every way.
    public convenience init(count: Int) throws {
        try self.init(models: (0..<count).map(Model.sample))
    }

    /// Takes `models` and encodes them every way.
    public init(models: [Model]) throws {
        let propertyListEncoder = PropertyListEncoder()
        propertyListEncoder.outputFormat = .binary
        self.propertyListEncoder = propertyListEncoder
        self.models = models
        records = try models.map(recordEncoder.encode)
        wire = try records.map(WireFormat.encode)
        json = try models.map(jsonEncoder.encode)
        propertyList = try models.map(propertyListEncoder.encode)
        wireByteCount = wire.reduce(0) { $0 + $1.count }
        jsonByteCount = json.reduce(0) { $0 + $1.count }
        propertyListByteCount = propertyList.reduce(0) { $0 + $1.count }
    }

    /// The number of models in the batch.
    public var count: Int { models.count }

    /// The bytes one pass of `path` produces or consumes: the wire JSON for
    /// the Cumulus paths and the floors (for the model↔record halves too, so their MB/s
    /// reads against the same volume), Foundation's own output for the
    /// baselines.
    public func byteCount(of path: CodecPath) -> Int {
        switch path {
        case .jsonEncoder, .jsonDecoder: jsonByteCount
        case .propertyListEncoder, .propertyListDecoder: propertyListByteCount
        default: wireByteCount
        }
    }

    /// Runs `path` over the whole batch once and returns a checksum of the results.
    @inline(never)
    public func run(_ path: CodecPath) throws -> Int {
        var checksum = 0
        switch path {
        case .modelToRecord:
            for model in models {
                checksum &+= try recordEncoder.encode(model).fields.count
            }
        case .recordToWire:
            for record in records {
                checksum &+= try WireFormat.encode(record).count
            }
        case .modelToWire:
            for model in models {
                checksum &+= try WireFormat.encode(recordEncoder.encode(model)).count
            }
        case .wireToRecord:
            for bytes in wire {
                checksum &+= try WireFormat.decodeRecord(from: bytes).fields.count
            }
        case .recordToModel:
            for record in records {
                checksum &+= try recordDecoder.decode(Model.self, from: record).checksum
            }
        case .wireToModel:
            for bytes in wire {
                checksum &+= try recordDecoder.decode(Model.self, from: WireFormat.decodeRecord(from: bytes)).checksum
            }
        case .jsonEncoder:
            for model in models {
                checksum &+= try jsonEncoder.encode(model).count
            }
        case .jsonDecoder:
            for data in json {
                checksum &+= try jsonDecoder.decode(Model.self, from: data).checksum
            }
        case .propertyListEncoder:
            for model in models {
                checksum &+= try propertyListEncoder.encode(model).count
            }
        case .propertyListDecoder:
            for data in propertyList {
                checksum &+= try propertyListDecoder.decode(Model.self, from: data).checksum
            }
        case .floorEncode:
            for model in models {
                checksum &+= try floor.encode(model)
            }
        case .floorDecode:
            for _ in models {
                checksum &+= try floor.decode(Model.self).checksum
            }
        }
        return checksum
    }

    /// Checks that every path gives back what went in: records decode to the
    /// models, wire bytes to the records. Returns one line per mismatch
    /// (empty when all is well), so a benchmark of a broken codec is noticed.
    public func verify() -> [String] {
        var problems: [String] = []
        let name = Model.displayName
        for (index, model) in models.enumerated() {
            do {
                let decoded = try recordDecoder.decode(Model.self, from: records[index])
                if decoded != model { problems.append("\(name) #\(index): record → model differs from the model") }
                let record = try WireFormat.decodeRecord(from: wire[index])
                if record.fields != records[index].fields || record.recordName != records[index].recordName
                    || record.recordType != records[index].recordType
                {
                    problems.append("\(name) #\(index): wire → record differs from the record")
                }
            } catch {
                problems.append("\(name) #\(index): \(error)")
            }
            if problems.count >= 3 { break }
        }
        return problems
    }
}
