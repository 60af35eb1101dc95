import Cumulus
import CumulusServer
import Foundation
import SQLiteNIO
import Testing

/// The SQLite file's schema versions: a file of an older version opens with
/// every row, migrated; one of a newer version is refused.
@Suite("SQLite schema")
struct SQLiteSchemaTests {
    /// Version one as it shipped, with the `user` columns that version three
    /// renames; kept here verbatim so that the test does not follow the code.
    static let versionOne = [
        "CREATE TABLE containers (name TEXT PRIMARY KEY, token_hash TEXT NOT NULL)",
        """
        CREATE TABLE users (container TEXT NOT NULL, name TEXT NOT NULL, record_name TEXT NOT NULL,
            token_hash TEXT NOT NULL, PRIMARY KEY (container, name))
        """,
        "CREATE UNIQUE INDEX users_by_token ON users (container, token_hash)",
        """
        CREATE TABLE server_keys (container TEXT NOT NULL, key_id TEXT NOT NULL, pem TEXT NOT NULL,
            PRIMARY KEY (container, key_id))
        """,
        """
        CREATE TABLE quotas (container TEXT NOT NULL, environment TEXT NOT NULL, user TEXT NOT NULL,
            PRIMARY KEY (container, environment, user))
        """,
        """
        CREATE TABLE databases (id INTEGER PRIMARY KEY, container TEXT NOT NULL, environment TEXT NOT NULL,
            scope TEXT NOT NULL, owner TEXT NOT NULL, incarnation INTEGER NOT NULL, serial INTEGER NOT NULL,
            UNIQUE (container, environment, scope, owner))
        """,
        """
        CREATE TABLE zones (id INTEGER PRIMARY KEY AUTOINCREMENT, database_id INTEGER NOT NULL REFERENCES databases,
            name TEXT NOT NULL, incarnation INTEGER NOT NULL, serial INTEGER NOT NULL, UNIQUE (database_id, name))
        """,
        """
        CREATE TABLE zone_log (database_id INTEGER NOT NULL REFERENCES databases, zone_name TEXT NOT NULL,
            serial INTEGER NOT NULL, deleted INTEGER NOT NULL, PRIMARY KEY (database_id, zone_name))
        """,
        "CREATE INDEX zone_log_by_serial ON zone_log (database_id, serial)",
        """
        CREATE TABLE records (zone_id INTEGER NOT NULL REFERENCES zones ON DELETE CASCADE, name TEXT NOT NULL,
            type TEXT NOT NULL, serial INTEGER NOT NULL, deleted INTEGER NOT NULL, creator TEXT, body BLOB,
            PRIMARY KEY (zone_id, name))
        """,
        "CREATE INDEX records_by_serial ON records (zone_id, serial)",
        "CREATE INDEX records_by_type ON records (zone_id, type) WHERE deleted = 0",
        """
        CREATE TABLE delete_self_references (zone_id INTEGER NOT NULL REFERENCES zones ON DELETE CASCADE,
            source TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (zone_id, source, target))
        """,
        "CREATE INDEX delete_self_references_by_target ON delete_self_references (zone_id, target)",
        """
        CREATE TABLE subscriptions (database_id INTEGER NOT NULL REFERENCES databases, user TEXT NOT NULL,
            id TEXT NOT NULL, zone_name TEXT NOT NULL, PRIMARY KEY (database_id, user, id))
        """,
        """
        CREATE TABLE field_types (container TEXT NOT NULL, environment TEXT NOT NULL, record_type TEXT NOT NULL,
            field TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY (container, environment, record_type, field))
        """,
    ]

    @Test("a version-one file opens with its quotas, subscriptions and records; its user columns are user_name")
    func migratesVersionOne() async throws {
        try await Self.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                for statement in Self.versionOne { _ = try await connection.query(statement) }
                for statement in [
                    "INSERT INTO containers VALUES ('iCloud.old', 'hash')",
                    "INSERT INTO users VALUES ('iCloud.old', 'alice', '_alice', 'user-hash')",
                    "INSERT INTO quotas VALUES ('iCloud.old', 'development', '_alice')",
                    "INSERT INTO databases VALUES (1, 'iCloud.old', 'development', 'private', '_alice', 7, 1)",
                    "INSERT INTO zones VALUES (1, 1, 'Notes', 3, 0)",
                    "INSERT INTO zone_log VALUES (1, 'Notes', 1, 0)",
                    "INSERT INTO subscriptions VALUES (1, '_alice', 'sub-1', 'Notes')",
                    "INSERT INTO subscriptions VALUES (1, '', 'sub-key', 'Notes')",
                    "PRAGMA user_version = 1",
                ] {
                    _ = try await connection.query(statement)
                }
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()

            let storage = try await SQLiteStorage(path: path, logger: quietLogger)
            let key = DatabaseKey(container: "iCloud.old", environment: .development, scope: .private, owner: "_alice")
            try await storage.read { transaction in
                #expect(try await transaction.containerTokenHash(named: "iCloud.old") == "hash")
                #expect(
                    try await transaction.userRecordName(container: "iCloud.old", tokenHash: "user-hash") == "_alice")
                #expect(
                    try await transaction.isQuotaExceeded(
                        user: "_alice", container: "iCloud.old", environment: .development))
                let database = try #require(try await transaction.database(key))
                #expect(database.incarnation == 7 && database.serial == 1)
                let zones = try await transaction.zones(inDatabase: database.id, named: nil)
                #expect(zones.map(\.name) == ["Notes"] && zones.first?.incarnation == 3)
                let subscriptions = try await transaction.subscriptions(inDatabase: database.id, user: nil)
                #expect(subscriptions.map(\.user) == ["", "_alice"])
                #expect(subscriptions.map(\.subscription.subscriptionID) == ["sub-key", "sub-1"])
                let alices = try await transaction.subscriptions(inDatabase: database.id, user: "_alice")
                #expect(alices.map(\.subscription.subscriptionID) == ["sub-1"])
            }
            // The migrated file takes writes to the renamed columns.
            try await storage.write { transaction in
                try await transaction.setQuotaExceeded(
                    false, user: "_alice", container: "iCloud.old", environment: .development)
                let deleted = try await transaction.deleteSubscription("sub-1", user: "_alice", inDatabase: 1)
                #expect(deleted)
            }
            try await storage.close()

            let check = try await SQLiteConnection.open(storage: .file(path: path))
            defer { Task { try? await check.close() } }
            let version = try await check.query("PRAGMA user_version").first?.column("user_version")?.integer
            #expect(version == 3)
            let tables = try await check.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap {
                $0.column("name")?.string
            }
            #expect(tables.contains("notification_channels"), "\(tables)")
            for table in ["quotas", "subscriptions"] {
                let columns = try await check.query("PRAGMA table_info(\(table))").compactMap {
                    $0.column("name")?.string
                }
                #expect(columns.contains("user_name") && !columns.contains("user"), "\(table): \(columns)")
            }
            let left = try await check.query("SELECT count(*) AS n FROM subscriptions").first?.column("n")?.integer
            #expect(left == 1)
        }
    }

    @Test("a fresh file is created at version three with user_name columns; a file of a later version is refused")
    func freshFile() async throws {
        try await Self.withFile { path in
            let storage = try await SQLiteStorage(path: path, logger: quietLogger)
            try await storage.write { transaction in
                try await transaction.setQuotaExceeded(true, user: "bob", container: "c", environment: .production)
            }
            try await storage.close()
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            let version = try await connection.query("PRAGMA user_version").first?.column("user_version")?.integer
            #expect(version == 3)
            let columns = try await connection.query("PRAGMA table_info(quotas)").compactMap {
                $0.column("name")?.string
            }
            #expect(columns.contains("user_name"), "\(columns)")
            _ = try await connection.query("PRAGMA user_version = 4")
            try await connection.close()
            do {
                let storage = try await SQLiteStorage(path: path, logger: quietLogger)
                try await storage.close()
                Issue.record("a file of a later version was opened")
            } catch let error as CloudError {
                #expect(error.code == .internalError && error.reason.contains("4"))
            }
        }
    }

    static func withFile(_ body: (String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-schema-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(directory.appendingPathComponent("cumulus.sqlite").path)
    }
}
