import BenchmarkModels
import Cumulus
import CumulusServer
import Foundation
import Logging
import PostgresNIO
import SQLiteNIO

/// Write throughput: 200-record requests from one or many clients, and the
/// floors of the stores themselves.
enum Throughput {
    static let zone = ZoneID(zoneName: "Landmark")

    /// `count` landmarks from `offset` as records, in batches of 200.
    static func batches(count: Int, offset: Int = 0) throws -> [[Record]] {
        let encoder = RecordEncoder(zoneID: zone)
        return try stride(from: 0, to: count, by: 200).map { start in
            try (offset + start..<offset + min(start + 200, count)).map { try encoder.encode(Landmark.sample($0)) }
        }
    }

    /// Writes `count` landmarks in 200-record requests from one client;
    /// returns records per second.
    static func writeRate(into database: any CloudDatabase, count: Int) async throws -> Double {
        _ = try await database.modifyZones([.create(zone)])
        let batches = try batches(count: count)
        let clock = ContinuousClock()
        let start = clock.now
        for batch in batches { try await write(batch, into: database) }
        return Double(count) / (clock.now - start).seconds
    }

    static func write(_ batch: [Record], into database: any CloudDatabase) async throws {
        let results = try await database.modifyRecords(
            batch.map { RecordOperation(.forceReplace, $0) }, zoneID: zone, atomic: false)
        if let failure = results.lazy.compactMap(\.error).first { throw failure }
    }

    /// `clients` clients, each its own user with its own
    /// `RemoteCloudDatabase` (and URL session), spread over the
    /// deployment's servers in turn, write `count` landmarks in all in
    /// 200-record requests, each client its share one request after
    /// another. Returns records per second, from the first request sent to
    /// the last answered.
    static func concurrentWriteRate(through deployment: Deployment, clients: Int, count: Int) async throws -> Double {
        var databases: [RemoteCloudDatabase] = []
        for client in 0..<clients {
            let user = try await deployment.addUser("writer-\(clients)-\(client)")
            let database = deployment.database(user, server: client)
            // Also opens the client's connection before the clock starts.
            _ = try await database.modifyZones([.create(zone)])
            databases.append(database)
        }
        let batches = try batches(count: count)
        let shares = (0..<clients).map { client in
            stride(from: client, to: batches.count, by: clients).map { batches[$0] }
        }
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (database, share) in zip(databases, shares) {
                group.addTask {
                    for batch in share { try await write(batch, into: database) }
                }
            }
            try await group.waitForAll()
        }
        return Double(count) / (clock.now - start).seconds
    }

    /// The records' wire JSON as (name, body) rows, in batches of 200.
    static func rows(count: Int) throws -> [[(name: String, body: [UInt8])]] {
        try batches(count: count).map { batch in try batch.map { ($0.recordName, try WireFormat.encode($0)) } }
    }

    /// The floor of the server's writes on SQLite: SQLite alone (WAL,
    /// `synchronous=FULL`, as the server opens it) inserting the same
    /// records' wire JSON, 200 rows per committed transaction, with no
    /// reads, no rules and no HTTP; with `smallStatements`, that many
    /// `SELECT 1` more in each transaction, each a round trip through
    /// sqlite-nio's thread pool (as the service's statements were before
    /// `SQLiteStorage` ran its transactions on a thread of its own).
    static func sqliteFloorRate(count: Int, smallStatements: Int = 0) async throws -> Double {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cumulus-floor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let connection = try await SQLiteConnection.open(
            storage: .file(path: directory.appendingPathComponent("floor.sqlite").path))
        _ = try await connection.query("PRAGMA journal_mode=WAL")
        _ = try await connection.query("PRAGMA synchronous=FULL")
        _ = try await connection.query("CREATE TABLE records (name TEXT PRIMARY KEY, body BLOB NOT NULL)")
        let batches = try rows(count: count).map { batch in
            batch.flatMap { [SQLiteData.text($0.name), .blob(ByteBuffer(bytes: $0.body))] }
        }
        let clock = ContinuousClock()
        let start = clock.now
        for batch in batches {
            _ = try await connection.query("BEGIN IMMEDIATE")
            let placeholders = Array(repeating: "(?, ?)", count: batch.count / 2).joined(separator: ", ")
            _ = try await connection.query("INSERT OR REPLACE INTO records (name, body) VALUES \(placeholders)", batch)
            for _ in 0..<smallStatements { _ = try await connection.query("SELECT 1") }
            _ = try await connection.query("COMMIT")
        }
        let rate = Double(count) / (clock.now - start).seconds
        try await connection.close()
        return rate
    }

    /// The floor of the service's writes on its own schema: `SQLiteStorage`
    /// alone making the storage calls a 200-record `records/modify` of new
    /// records makes (the database, zone, quota and records read, the rows
    /// with their indexes, zone, zone log and database written, the
    /// subscriptions read), with rows made before the clock starts: no
    /// rules, no encoding and no HTTP.
    static func storageFloorRate(count: Int, logger: Logger) async throws -> Double {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cumulus-storage-floor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try await SQLiteStorage(
            path: directory.appendingPathComponent("floor.sqlite").path, logger: logger)
        let key = DatabaseKey(container: "iCloud.floor", environment: .development, scope: .private, owner: "_floor")
        let zoneName = zone.zoneName
        try await storage.write { transaction in
            let database = try await transaction.createDatabase(key, incarnation: 1)
            _ = try await transaction.createZone(named: zoneName, inDatabase: database.id, incarnation: 1)
        }
        var serial: Int64 = 0
        let batches = try batches(count: count).map { batch in
            batch.map { record in
                serial += 1
                var saved = record
                saved.metadata = RecordMetadata(changeTag: "1-\(serial)", zoneID: zone)
                return StoredRecord(
                    name: record.recordName, recordType: record.recordType, serial: serial, creator: "_floor",
                    record: saved, deleteSelfTargets: [])
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        for rows in batches {
            try await storage.write { transaction in
                guard var database = try await transaction.database(key),
                    var zone = try await transaction.zones(inDatabase: database.id, named: [zoneName]).first
                else { throw CloudError(.internalError, reason: "the floor's zone is gone") }
                _ = try await transaction.isQuotaExceeded(
                    user: "_floor", container: key.container, environment: .development)
                _ = try await transaction.records(named: rows.map(\.name), inZone: zone.id)
                try await transaction.saveRecords(rows, inZone: zone.id)
                zone.serial = rows.last?.serial ?? zone.serial
                try await transaction.updateZone(zone)
                database.serial += 1
                try await transaction.logZoneChanges(
                    [ZoneLogEntry(zoneName: zoneName, serial: database.serial, deleted: false)],
                    inDatabase: database.id)
                try await transaction.updateDatabase(database)
                _ = try await transaction.subscriptions(inDatabase: database.id, user: nil)
            }
        }
        let rate = Double(count) / (clock.now - start).seconds
        try await storage.close()
        return rate
    }

    /// The floor of the server's writes on PostgreSQL: PostgreSQL alone,
    /// through postgres-nio, inserting the same records' wire JSON from
    /// `connections` connections at once, 200 rows per committed
    /// transaction (the cluster's own durability settings), with no reads,
    /// no rules and no HTTP. Runs in a fresh database of its own.
    static func postgresFloorRate(admin: PostgresAdmin, connections: Int, count: Int) async throws -> Double {
        let url = try await admin.createDatabase()
        do {
            let rate = try await postgresFloorRate(url: url, connections: connections, count: count)
            await admin.dropDatabase(url)
            return rate
        } catch {
            await admin.dropDatabase(url)
            throw error
        }
    }

    private static func postgresFloorRate(url: PostgresURL, connections: Int, count: Int) async throws -> Double {
        var opened: [PostgresConnection] = []
        do {
            let rate = try await postgresFloorRate(url: url, opened: &opened, connections: connections, count: count)
            for connection in opened { try? await connection.close() }
            return rate
        } catch {
            for connection in opened { try? await connection.close() }
            throw error
        }
    }

    private static func postgresFloorRate(
        url: PostgresURL, opened: inout [PostgresConnection], connections: Int, count: Int
    ) async throws -> Double {
        for index in 0..<connections {
            opened.append(
                try await PostgresConnection.connect(
                    configuration: url.connectionConfiguration(), id: index, logger: quietLogger))
        }
        try await opened[0].query(
            "CREATE TABLE records (name TEXT PRIMARY KEY, body BYTEA NOT NULL)", logger: quietLogger)
        let queries = try rows(count: count).map { batch in
            var bindings = PostgresBindings(capacity: batch.count * 2)
            var placeholders: [String] = []
            for (index, row) in batch.enumerated() {
                bindings.append(row.name)
                bindings.append(ByteBuffer(bytes: row.body))
                placeholders.append("($\(index * 2 + 1), $\(index * 2 + 2))")
            }
            return PostgresQuery(
                unsafeSQL: "INSERT INTO records (name, body) VALUES \(placeholders.joined(separator: ", "))"
                    + " ON CONFLICT (name) DO UPDATE SET body = excluded.body",
                binds: bindings)
        }
        let shares = (0..<connections).map { client in
            stride(from: client, to: queries.count, by: connections).map { queries[$0] }
        }
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (connection, share) in zip(opened, shares) {
                group.addTask {
                    for query in share {
                        try await connection.query("BEGIN", logger: quietLogger)
                        try await connection.query(query, logger: quietLogger)
                        try await connection.query("COMMIT", logger: quietLogger)
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(count) / (clock.now - start).seconds
    }
}
