import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import SQLiteNIO
import Testing

/// A page of a zone's records by name is a range of the records' primary
/// key on SQLite: no sort of the rest of the zone.
@Suite("SQLite pages of a zone")
struct SQLiteZonePageTests {
    @Test("a page of a zone is read in byte order from the primary key, with no sort", arguments: [false, true])
    func pageUsesThePrimaryKey(afterName: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-page-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cumulus.sqlite").path
        let storage = try await SQLiteStorage(path: path, logger: quietLogger)
        // Names whose byte order differs from a linguistic one.
        let names = ["b", "B", "a", "é", "e\u{301}", "Z", "_z", "~"]
        let zoneID: Int64
        do {
            zoneID = try await storage.write { transaction in
                let key = DatabaseKey(
                    container: "iCloud.page", environment: .development, scope: .private, owner: "_alice")
                let database = try await transaction.createDatabase(key, incarnation: 1)
                let zone = try await transaction.createZone(named: "Z", inDatabase: database.id, incarnation: 1)
                let rows = names.enumerated().map { index, name in
                    StoredRecord(
                        name: name, recordType: "Note", serial: Int64(index + 1), creator: "_alice",
                        record: Record(recordType: "Note", recordName: name, zoneID: ZoneID(zoneName: "Z")),
                        deleteSelfTargets: [])
                }
                try await transaction.saveRecords(rows, inZone: zone.id)
                return zone.id
            }
            let first = try await storage.read { try await $0.liveRecords(inZone: zoneID, after: nil, limit: 3) }
            let rest = try await storage.read {
                try await $0.liveRecords(inZone: zoneID, after: first.last?.name, limit: 10)
            }
            let byBytes = names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            #expect((first + rest).map { Array($0.name.utf8) } == byBytes.map { Array($0.utf8) })
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()

        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let plan = try await connection.query(
            "EXPLAIN QUERY PLAN " + SQLiteStorage.zonePageStatement(afterName: afterName),
            [.integer(Int(zoneID)), .text(afterName ? "a" : ""), .integer(51)])
        try await connection.close()
        let steps = plan.compactMap { $0.column("detail")?.string }
        #expect(!steps.isEmpty)
        #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")
        #expect(steps.contains { $0.contains("sqlite_autoindex_records_1") }, "\(steps)")
    }
}
