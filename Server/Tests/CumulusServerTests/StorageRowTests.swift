import Cumulus
import Foundation
import Logging
import PostgresNIO
import SQLiteNIO
import Testing

@testable import CumulusServer

/// Storage reads back what it stored or fails: a row the schema says cannot
/// exist (NULL where a value must be, a value of the wrong type, an unknown
/// field type, a live record without a body) is `INTERNAL_ERROR` naming its
/// table and column, never a `0` or `""`, and the log says the same without
/// the row's values.
@Suite("Storage refuses impossible rows")
struct StorageRowTests {
    /// A row made impossible behind the storage's back, and the read that meets it.
    struct Corruption: Sendable, CustomTestStringConvertible {
        var column: String
        var statements: [String]
        var read: @Sendable (any StorageTransaction, Written) async throws -> Void

        var testDescription: String { column }
    }

    /// What the fixture wrote; every name and value holds "zqx", which the log must not.
    struct Written: Sendable {
        var database: Int64
        var zone: Int64
    }

    static let listZones: @Sendable (any StorageTransaction, Written) async throws -> Void = { transaction, written in
        _ = try await transaction.zones(inDatabase: written.database, named: nil)
    }
    static let readRecord: @Sendable (any StorageTransaction, Written) async throws -> Void = { transaction, written in
        _ = try await transaction.records(named: ["zqx-record"], inZone: written.zone)
    }
    static let readFieldTypes: @Sendable (any StorageTransaction, Written) async throws -> Void = { transaction, _ in
        _ = try await transaction.fieldTypes(container: "iCloud.zqx", environment: .development)
    }
    static let readShare: @Sendable (any StorageTransaction, Written) async throws -> Void = { transaction, _ in
        _ = try await transaction.share(shortGUID: "zqx-guid")
    }
    static let readSubscriptions: @Sendable (any StorageTransaction, Written) async throws -> Void = {
        transaction, written in
        _ = try await transaction.subscriptions(inDatabase: written.database, user: nil)
    }

    static let sqliteCorruptions = [
        Corruption(
            column: "zones.incarnation", statements: ["UPDATE zones SET incarnation = 'x-zqx'"], read: listZones),
        Corruption(column: "zones.name", statements: ["UPDATE zones SET name = CAST(name AS BLOB)"], read: listZones),
        Corruption(
            column: "field_types.type", statements: ["UPDATE field_types SET type = 'x-zqx'"], read: readFieldTypes),
        Corruption(column: "records.body", statements: ["UPDATE records SET body = NULL"], read: readRecord),
        Corruption(column: "records.deleted", statements: ["UPDATE records SET deleted = 2"], read: readRecord),
        Corruption(
            column: "subscriptions.zone_name", statements: ["UPDATE subscriptions SET zone_name = CAST(x'ff' AS TEXT)"],
            read: readSubscriptions),
        Corruption(
            column: "shares.participants", statements: ["UPDATE shares SET participants = x'7a7178'"], read: readShare),
        Corruption(
            column: "shares.public_permission", statements: ["UPDATE shares SET public_permission = 'x-zqx'"],
            read: readShare),
    ]

    static let postgresCorruptions = [
        Corruption(
            column: "zones.incarnation",
            statements: [
                "ALTER TABLE zones ALTER COLUMN incarnation DROP NOT NULL", "UPDATE zones SET incarnation = NULL",
            ], read: listZones),
        Corruption(
            column: "zones.serial",
            statements: ["ALTER TABLE zones ALTER COLUMN serial TYPE text", "UPDATE zones SET serial = 'x-zqx'"],
            read: listZones),
        Corruption(
            column: "field_types.type", statements: ["UPDATE field_types SET type = 'x-zqx'"], read: readFieldTypes),
        Corruption(column: "records.body", statements: ["UPDATE records SET body = NULL"], read: readRecord),
        Corruption(
            column: "subscriptions.zone_name",
            statements: [
                "ALTER TABLE subscriptions ALTER COLUMN zone_name DROP NOT NULL",
                "UPDATE subscriptions SET zone_name = NULL",
            ], read: readSubscriptions),
        Corruption(
            column: "shares.participants", statements: ["UPDATE shares SET participants = '\\x7a7178'"], read: readShare
        ),
        Corruption(
            column: "shares.public_permission", statements: ["UPDATE shares SET public_permission = 'x-zqx'"],
            read: readShare),
    ]

    @Test("SQLite: an impossible row is INTERNAL_ERROR naming its column", arguments: sqliteCorruptions)
    func sqlite(_ corruption: Corruption) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-rows-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cumulus.sqlite").path
        let lines = LogLines()
        let storage = try await SQLiteStorage(path: path, logger: lines.logger())
        do {
            let written = try await Self.write(storage)
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            for statement in corruption.statements { _ = try await connection.query(statement) }
            try await connection.close()
            try await Self.expectRefused(corruption, storage, written, lines)
        } catch {
            try? await storage.close()
            throw error
        }
        try await storage.close()
    }

    @Test(
        "PostgreSQL: an impossible row is INTERNAL_ERROR naming its column",
        .enabled(if: PostgresTestDatabase.isEnabled), arguments: postgresCorruptions)
    func postgres(_ corruption: Corruption) async throws {
        try await PostgresTestDatabase.with { url in
            let lines = LogLines()
            let storage = try await PostgresStorage(url: url, maximumConnections: 2, logger: lines.logger())
            do {
                let written = try await Self.write(storage)
                try await PostgresTestDatabase.connect(to: url) { connection, logger in
                    for statement in corruption.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                }
                try await Self.expectRefused(corruption, storage, written, lines)
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }

    /// A database with a zone, a record, a share, a subscription and a field type.
    static func write(_ storage: any ServerStorage) async throws -> Written {
        try await storage.write { transaction in
            let key = DatabaseKey(
                container: "iCloud.zqx", environment: .development, scope: .private, owner: "zqx-owner")
            let database = try await transaction.createDatabase(key, incarnation: 1)
            let zone = try await transaction.createZone(named: "zqx-zone", inDatabase: database.id, incarnation: 1)
            let record = Record(
                recordType: "Secret", recordName: "zqx-record", zoneID: ZoneID(zoneName: "zqx-zone"),
                fields: ["zqx-field": .string("zqx-value")])
            try await transaction.saveRecords(
                [
                    StoredRecord(
                        name: "zqx-record", recordType: "Secret", serial: 1, creator: "zqx-owner",
                        record: record, deleteSelfTargets: [])
                ], inZone: zone.id)
            try await transaction.saveShare(
                StoredShare(
                    shortGUID: "zqx-guid", container: "iCloud.zqx", environment: .development, owner: "zqx-owner",
                    zone: zone.id, zoneName: "zqx-zone", recordName: "zqx-share", rootRecordName: "zqx-record",
                    publicPermission: .none,
                    participants: [
                        ShareParticipant(
                            userRecordName: "zqx-owner", role: .owner, acceptanceStatus: .accepted,
                            permission: .readWrite)
                    ]))
            try await transaction.saveSubscription(
                StoredSubscription(
                    user: "zqx-owner",
                    subscription: Subscription(subscriptionID: "zqx-sub", zoneID: ZoneID(zoneName: "zqx-zone"))),
                inDatabase: database.id)
            try await transaction.addFieldTypes(
                [StoredFieldType(recordType: "Secret", fieldName: "zqx-field", type: .string)],
                container: "iCloud.zqx", environment: .development)
            return Written(database: database.id, zone: zone.id)
        }
    }

    static func expectRefused(
        _ corruption: Corruption, _ storage: any ServerStorage, _ written: Written, _ lines: LogLines
    ) async throws {
        do {
            try await storage.read { transaction in try await corruption.read(transaction, written) }
            Issue.record("the impossible row was read")
        } catch let error as CloudError {
            #expect(error.code == .internalError, "\(error)")
            #expect(error.reason.contains(corruption.column), "\(error.reason)")
            #expect(!error.reason.contains("zqx"), "\(error.reason)")
        }
        let logged = lines.all.filter { $0.contains("impossible row") }
        #expect(logged.count == 1, "\(lines.all)")
        let (table, column) = (corruption.column.split(separator: ".")[0], corruption.column.split(separator: ".")[1])
        #expect(logged.allSatisfy { $0.contains("table=\(table)") && $0.contains("column=\(column)") }, "\(logged)")
        // postgres-nio's own trace and debug lines are the operator's choice; ours must not carry values.
        let ours = lines.all.filter { !$0.hasPrefix("trace") && !$0.hasPrefix("debug") }
        #expect(!ours.contains { $0.contains("zqx") }, "a value was logged: \(ours)")
    }
}
