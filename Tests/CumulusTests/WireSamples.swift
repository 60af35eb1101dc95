import Cumulus
import Foundation
import Testing

/// Records, zones and helpers for the wire codec tests.
enum WireFixtures {
    static let zone = ZoneID(zoneName: "Notes", ownerRecordName: "_owner1")
    static let otherZone = ZoneID(zoneName: "Ünïcødé 🌍 \"zone\"\n")

    /// A record with every field type, Unicode, metadata and an owned zone.
    static func fullRecord(_ name: String = "rec-1", zone: ZoneID = zone) -> Record {
        var record = Record(recordType: "Everything", recordName: name, zoneID: zone)
        let reference = Reference(recordName: "other", zoneID: zone, action: .deleteSelf)
        let asset = Asset(fileChecksum: "abc", size: 42, receipt: "r1", downloadURL: "https://x/y")
        let location = Location(latitude: 37.5, longitude: -122.25, horizontalAccuracy: 5, altitude: 10, timestamp: 17)
        record["string"] = .string("héllo \"wörld\" \\ \u{1F600}\n\t")
        record["int"] = .int64(.min)
        record["double"] = .double(-0.1)
        record["date"] = .timestamp(Date(timeIntervalSince1970: 1_700_000_000.5))
        record["bytes"] = .bytes(Data([0, 1, 2, 250, 255]))
        record["reference"] = .reference(reference)
        record["asset"] = .asset(asset)
        record["location"] = .location(location)
        record["strings"] = .stringList(["a", "ß", ""])
        record["ints"] = .int64List([1, -2, .max])
        record["doubles"] = .doubleList([1.5, 1e-300])
        record["dates"] = .timestampList([Date(timeIntervalSince1970: 1), Date(timeIntervalSince1970: 2.5)])
        record["bytesList"] = .bytesList([Data(), Data([9])])
        record["references"] = .referenceList([reference, Reference(recordName: "r2")])
        record["assets"] = .assetList([asset, Asset()])
        record["locations"] = .locationList([location])
        record.metadata = RecordMetadata(
            changeTag: "tag-1", zoneID: zone,
            created: RecordStamp(timestamp: 1_700_000_000_000, userRecordName: "_u1", deviceID: "d1"),
            modified: RecordStamp(timestamp: 1_700_000_000_500, userRecordName: "_u2"))
        return record
    }

    /// A plain note in `zone`.
    static func note(_ index: Int, zone: ZoneID = zone) -> Record {
        var record = Record(recordType: "Note", recordName: "note-\(index)", zoneID: zone)
        record["title"] = .string("Note number \(index) — ✓")
        record["count"] = .int64(Int64(index))
        record["tags"] = .stringList(["a\(index)", "b"])
        record.metadata = RecordMetadata(
            changeTag: "t\(index)", zoneID: zone, created: RecordStamp(timestamp: Int64(index)),
            modified: RecordStamp(timestamp: Int64(index) + 1, userRecordName: "_u"))
        return record
    }

    /// A conflict error that carries the server's record.
    static func conflict() -> CloudError {
        CloudError(
            .conflict, reason: "the record changed", retryAfter: nil, recordName: "rec-1", zoneID: zone,
            serverRecord: fullRecord(), uuid: "uuid-1")
    }
}

/// The UTF-8 of `text`.
func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The `CloudError` that `body` throws, or `nil` (recorded as an issue) when it does not throw one.
func cloudError<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> CloudError? {
    do {
        let value = try body()
        Issue.record("expected a CloudError, got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch let error as CloudError {
        return error
    } catch {
        Issue.record("expected a CloudError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
