/// One thing a serialisation benchmark measures: a Cumulus path or the
/// Foundation baseline it is read against.
public enum CodecPath: String, CaseIterable, Sendable {
    /// `RecordEncoder().encode(model)`.
    case modelToRecord = "encode model→record"
    /// `WireFormat.encode(record)`.
    case recordToWire = "encode record→wire"
    /// Both encoding steps: what an upload costs.
    case modelToWire = "encode model→wire"
    /// `WireFormat.decodeRecord(from:)`.
    case wireToRecord = "decode wire→record"
    /// `RecordDecoder().decode(_:from:)`.
    case recordToModel = "decode record→model"
    /// Both decoding steps: what a fetched change costs.
    case wireToModel = "decode wire→model"
    /// Foundation's `JSONEncoder().encode(model)`.
    case jsonEncoder = "baseline JSONEncoder"
    /// Foundation's `JSONDecoder().decode(_:from:)`.
    case jsonDecoder = "baseline JSONDecoder"
    /// Foundation's `PropertyListEncoder` with the binary format.
    case propertyListEncoder = "baseline PropertyListEncoder"
    /// Foundation's `PropertyListDecoder` on binary property lists.
    case propertyListDecoder = "baseline PropertyListDecoder"
    /// ``CodableFloor/encode(_:)``: what the model's `encode(to:)` costs
    /// any `Codable` encoder before it writes anything.
    case floorEncode = "floor Codable encode"
    /// ``CodableFloor/decode(_:)``: what the model's `init(from:)` costs
    /// any `Codable` decoder before it reads anything.
    case floorDecode = "floor Codable decode"

    /// The six Cumulus paths.
    public static let cumulus: [CodecPath] = [
        .modelToRecord, .recordToWire, .modelToWire, .wireToRecord, .recordToModel, .wireToModel,
    ]

    /// The four Foundation baselines.
    public static let baselines: [CodecPath] = [
        .jsonEncoder, .jsonDecoder, .propertyListEncoder, .propertyListDecoder,
    ]

    /// The two ``CodableFloor`` paths.
    public static let floors: [CodecPath] = [.floorEncode, .floorDecode]

    /// Whether the path turns values into bytes (as opposed to bytes into values).
    public var encodes: Bool {
        switch self {
        case .modelToRecord, .recordToWire, .modelToWire, .jsonEncoder, .propertyListEncoder, .floorEncode: true
        case .wireToRecord, .recordToModel, .wireToModel, .jsonDecoder, .propertyListDecoder, .floorDecode: false
        }
    }

    /// The Foundation baseline a Cumulus path is compared with: `JSONEncoder`
    /// for the encoding paths and `JSONDecoder` for the decoding paths.
    public var jsonBaseline: CodecPath { encodes ? .jsonEncoder : .jsonDecoder }

    /// The property-list baseline in the same direction.
    public var propertyListBaseline: CodecPath { encodes ? .propertyListEncoder : .propertyListDecoder }
}
