import Cumulus
import CumulusServer
import PostgresNIO
import Testing

/// A page of a zone's records by name is a range of the records' primary
/// key on PostgreSQL, as on SQLite: no scan and sort of the zone.
@Suite("PostgreSQL record names in byte order", .enabled(if: PostgresTestDatabase.isEnabled))
struct PostgresByteOrderTests {
    @Test("the console's page of a zone is read from the primary key, in byte order")
    func pageUsesThePrimaryKey() async throws {
        try await PostgresTestDatabase.with { url in
            let storage = try await PostgresStorage(url: url, logger: quietLogger)
            do {
                let key = DatabaseKey(
                    container: "iCloud.order", environment: .development, scope: .private, owner: "_alice")
                // Names whose byte order differs from a linguistic one.
                let names = ["b", "B", "a", "é", "e\u{301}", "Z", "_z", "~"]
                let zoneID = try await storage.write { transaction in
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
                let firstPage = try await storage.read {
                    try await $0.liveRecords(inZone: zoneID, after: nil, limit: 3)
                }
                let secondPage = try await storage.read {
                    try await $0.liveRecords(inZone: zoneID, after: firstPage.last?.name, limit: 10)
                }
                let byBytes = names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
                #expect((firstPage + secondPage).map { Array($0.name.utf8) } == byBytes.map { Array($0.utf8) })
                try await PostgresTestDatabase.connect(to: url) { connection, logger in
                    try await connection.query("SET enable_seqscan = off", logger: logger)
                    let rows = try await connection.query(
                        """
                        EXPLAIN SELECT name FROM records WHERE zone_id = \(zoneID) AND NOT deleted
                            AND name COLLATE "C" > 'a' ORDER BY name COLLATE "C" LIMIT 51
                        """, logger: logger)
                    var plan: [String] = []
                    for try await line in rows.decode(String.self) { plan.append(line) }
                    #expect(!plan.contains { $0.contains("Sort") }, "\(plan)")
                    #expect(plan.contains { $0.contains("records_pkey") }, "\(plan)")
                }
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }
}
