import Cumulus
import CumulusServer

extension RemoteDevice {
    /// How many records of one type one zone holds.
    struct RecordCount: Equatable {
        var zoneName: String
        var recordType: String
        var count: Int
    }

    /// What the account's database holds besides the engine's own records
    /// (those of `recordType` in `zoneID`), by zone and type, so that the
    /// demo can say what its count of notes leaves out.
    static func otherRecords(in database: any CloudDatabase, besides recordType: String, in zoneID: ZoneID)
        async throws -> [RecordCount]
    {
        var counts: [RecordCount] = []
        for zone in try await database.listZones() {
            // Names are identities as exact bytes: a map keyed by `String` would merge two of them.
            var types: [ExactName: String] = [:]
            var token: SyncToken?
            var more = true
            while more {
                // No fields: the census needs each record's name and type alone.
                let request = ZoneChangesRequest(zoneID: zone.zoneID, syncToken: token, desiredKeys: [])
                guard let page = try await database.fetchZoneChanges([request]).first?.get() else { break }
                for result in page.records {
                    switch result {
                    case .record(let record): types[ExactName(record.recordName)] = record.recordType
                    case .deleted(let name, _): types[ExactName(name)] = nil
                    case .failure: break
                    }
                }
                token = page.syncToken
                more = page.moreComing
            }
            let own = zone.zoneID.zoneName.isExactly(zoneID.zoneName)
            var byType: [ExactName: Int] = [:]
            for type in types.values where !(own && type.isExactly(recordType)) {
                byType[ExactName(type), default: 0] += 1
            }
            counts += byType.map {
                RecordCount(zoneName: zone.zoneID.zoneName, recordType: $0.key.string, count: $0.value)
            }
        }
        return counts.sorted {
            (ExactName($0.zoneName), ExactName($0.recordType)) < (ExactName($1.zoneName), ExactName($1.recordType))
        }
    }

    /// The line that lists `counts`: "It also holds 8 records the demo does
    /// not count: 8 Landmark in the zone Landmark."
    static func otherRecordsLine(_ counts: [RecordCount]) -> String? {
        guard !counts.isEmpty else { return nil }
        let total = counts.reduce(0) { $0 + $1.count }
        let parts = counts.map { "\($0.count) \($0.recordType) in the zone \($0.zoneName)" }
        return "It also holds \(total) record\(total == 1 ? "" : "s") the demo does not count: "
            + parts.joined(separator: ", ") + "."
    }
}
