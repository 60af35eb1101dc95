import CloudCodable
import Foundation

/// The inputs the committed corpora start from. For `FuzzCodec`: records of
/// both models with every field set, entries, and the JSON of nested values
/// and documents, each after its mode byte (see ``fuzzCodec(_:_:)``). For
/// `FuzzJournal`: the journal of an engine with synced and pending changes.
/// For `FuzzProtocol`: ``ProtocolSeeds``.
public enum Seeds {
    /// A strict model, every property set.
    static let strict = StrictModel(
        id: UUID(uuidString: "52F26551-746F-4575-AF55-5973C2BB7486")!, name: "Sydney Opera House",
        point: .init(latitude: 11.564, longitude: 94.5436), tags: ["hike", "castle", "view"], visits: 454,
        when: Date(timeIntervalSince1970: 1_632_691_424.18), flag: false)

    /// The record of ``strict``.
    static let strictRecord: Record = {
        do {
            return try RecordEncoder().encode(strict)
        } catch {
            fatalError("the strict seed model does not encode: \(error)")
        }
    }()

    static func codec() throws -> [(name: String, bytes: [UInt8])] {
        let encoder = RecordEncoder()
        let inner = FuzzModel.Inner(
            label: "a \"quoted\" label \u{1F600}", value: -12.625, count: -8, when: Date(timeIntervalSince1970: 1e9),
            blob: Data([0, 1, 2, 254, 255]), list: [1, 65535],
            child: [FuzzModel.Inner(label: "leaf", map: ["x": 1])], map: ["k": -3])
        var full = FuzzModel()
        full.string = "text with \\ escapes \n and é"
        full.int = -42
        full.int8 = 127
        full.int32 = -2_147_483_648
        full.uint = 7
        full.uint64 = UInt64(Int64.max)
        full.double = 0.1
        full.float = 1.5
        full.bool = true
        full.date = Date(timeIntervalSince1970: 1_700_000_000.123)
        full.data = Data("bytes".utf8)
        full.uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        full.url = URL(string: "https://example.com/a?b=c")
        full.decimal = Decimal(string: "123.4500")
        full.strings = ["one", "two", ""]
        full.ints = [1, -1, Int(Int32.max)]
        full.bools = [true, false]
        full.doubles = [1e-300, 2.5, -0.0]
        full.dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -1)]
        full.uuids = [UUID(uuidString: "00000000-0000-0000-0000-000000000001")!]
        full.blobs = [Data(), Data([1])]
        full.kind = .second
        full.level = .high
        full.kinds = [.first, .second]
        full.inner = inner
        full.inners = [inner, FuzzModel.Inner()]
        full.set = ["s"]
        full.map = ["pi": 3.14159]
        full.reference = Reference(recordName: "target", action: .deleteSelf)
        full.location = Location(latitude: 51.5, longitude: -0.12)
        full.asset = Asset(fileChecksum: "abc", size: 3, downloadURL: "https://example.com/f")
        full.references = [Reference(recordName: "r1", action: .none)]
        full.field = .int64List([1, 2])
        let nested: [(String, String)] = [
            (
                "inner",
                #"{"label":"x","value":1.5,"count":3,"when":-1.25e2,"blob":"AAE=","list":[1,2],"child":[{}],"map":{"a":1}}"#
            ),
            ("array", #"[{"label":"\u00e9\ud83d\ude00"},{"value":1e308},null]"#),
            ("strings", #"["first","second","first"]"#),
            ("map", #"{"a":1.5,"b":-0,"c":12345678901234567890}"#),
            ("point", #" {"latitude":37.8199,"longitude":-122.4783} "#),
            ("field", #"{"int64List":[1,2]}"#),
        ]
        var seeds: [(String, [UInt8])] = [
            ("wire-fuzz-model", [0] + (try WireFormat.encode(try encoder.encode(full)))),
            ("wire-strict-model", [0] + (try WireFormat.encode(strictRecord))),
            ("wire-empty-model", [0] + (try WireFormat.encode(try encoder.encode(FuzzModel())))),
        ]
        seeds += nested.map { ("json-\($0.0)", [1] + Array($0.1.utf8)) }
        seeds.append(
            ("entry-deleted", [2] + Array(#"{"recordName":"gone","deleted":true,"zoneID":{"zoneName":"z"}}"#.utf8)))
        seeds.append(("entry-record", [2] + (try WireFormat.encode(strictRecord))))
        seeds.append(
            ("document", [3] + Array(#"{"a":[1,-2.5e-3,true,null,"\u00e9\n"],"b":{},"a":""}"#.utf8)))
        return seeds
    }

    /// Writes the seeds into `directory`: those of `FuzzCodec` into
    /// `codec/`, the journal of `FuzzJournal` into `journal/`, those of
    /// `FuzzProtocol` (``ProtocolSeeds``) into `protocol/`.
    public static func write(to directory: String) async throws {
        let root = URL(fileURLWithPath: directory)
        let journal: [(name: String, bytes: [UInt8])] = [("seed-engine", try await JournalScratch.seed())]
        for (folder, seeds) in [("codec", try codec()), ("journal", journal), ("protocol", try ProtocolSeeds.all())] {
            let target = root.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            for (name, bytes) in seeds {
                try Data(bytes).write(to: target.appendingPathComponent(name))
            }
        }
    }
}
