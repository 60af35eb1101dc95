import CloudCodable
import CloudProtocol
import Foundation

/// The record that tells one life of a shared zone from the next.
///
/// Engines of several model types that share a zone each fetch only their
/// own type. When the zone is deleted on the server, the first engine to
/// notice creates it again with its own records; the others then see only
/// an expired sync token, which also happens when the server merely
/// forgets old changes. The marker settles which: whoever creates the zone
/// writes it with a fresh epoch, each engine remembers the epoch it knows,
/// and an engine whose token expired looks the marker up. The same epoch:
/// fetch the zone again. Another, or none: the zone is a new one, and the
/// engine sends its records again as if it had found the zone missing.
enum ZoneMarker {
    /// The marker's record type; no engine's model type asks for it.
    static let recordType = "CumulusZoneMarker"
    /// The marker's record name in its zone.
    static let recordName = "cumulus.zoneMarker"
    /// The field that holds the epoch (STRING).
    static let epochField = "epoch"

    /// A new marker for `zoneID`, with a fresh epoch.
    static func record(in zoneID: ZoneID) -> Record {
        Record(
            recordType: recordType, recordName: recordName, zoneID: zoneID,
            fields: [epochField: .string(UUID().uuidString)])
    }

    /// The epoch a marker record holds, or `nil` for another record.
    static func epoch(of record: Record) -> String? {
        guard record.recordType == recordType, case .string(let epoch)? = record[epochField] else { return nil }
        return epoch
    }
}

extension SyncEngine {
    /// Creates the zone's marker unless it has one, and answers the epoch
    /// it holds: the new one, or the one another engine wrote first.
    func markZone() async throws -> String {
        let database = try boundDatabaseForMarker()
        let results = try await database.modifyRecords(
            [RecordOperation(.create, ZoneMarker.record(in: zoneID))], zoneID: zoneID, atomic: false)
        if case .record(let saved)? = results.first, let epoch = ZoneMarker.epoch(of: saved) { return epoch }
        if let epoch = try await readZoneMarker() { return epoch }
        if case .failure(let error)? = results.first { throw error }
        throw CloudError(.internalError, reason: "the zone's marker was neither created nor found")
    }

    /// The epoch of the zone's marker, or `nil` when the zone has none.
    func readZoneMarker() async throws -> String? {
        let database = try boundDatabaseForMarker()
        let found = try await database.lookupRecords([ZoneMarker.recordName], zoneID: zoneID, desiredKeys: nil)
        guard case .record(let record)? = found.first else { return nil }
        return ZoneMarker.epoch(of: record)
    }

    private func boundDatabaseForMarker() throws -> any CloudDatabase {
        guard let boundDatabase else {
            preconditionFailure("Internal inconsistency: a data request before the account was checked")
        }
        return boundDatabase
    }
}
