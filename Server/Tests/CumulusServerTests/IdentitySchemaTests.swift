import Cumulus
import CumulusServer
import Foundation
import PostgresNIO
import SQLiteNIO
import Testing

/// The schema step that adds identity issuers and identities: a file or
/// database of the version before it opens with its rows and then keeps
/// issuers and identities.
@Suite("Identity schema")
struct IdentitySchemaTests {
    /// SQLite's version six (assets) as it shipped, kept verbatim so that the test does not follow the code.
    static let sqliteVersionSix = [
        "CREATE TABLE asset_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret BLOB NOT NULL)",
        """
        CREATE TABLE asset_upload_tickets (id TEXT PRIMARY KEY, container TEXT NOT NULL, environment TEXT NOT NULL,
            scope TEXT NOT NULL, owner TEXT NOT NULL, zone_id INTEGER NOT NULL, record_name TEXT NOT NULL,
            record_type TEXT NOT NULL, field_name TEXT NOT NULL, user_name TEXT NOT NULL, expires INTEGER NOT NULL)
        """,
        "CREATE INDEX asset_upload_tickets_by_expiry ON asset_upload_tickets (expires)",
        """
        CREATE TABLE assets (id TEXT PRIMARY KEY, zone_id INTEGER NOT NULL, record_name TEXT NOT NULL,
            field_name TEXT NOT NULL, user_name TEXT NOT NULL, size INTEGER, checksum TEXT, created INTEGER NOT NULL,
            unheld_since INTEGER)
        """,
        "CREATE INDEX assets_by_unheld ON assets (unheld_since) WHERE unheld_since IS NOT NULL",
        "CREATE INDEX assets_held_by_zone ON assets (zone_id) WHERE unheld_since IS NULL",
        """
        CREATE TABLE asset_receipts (id TEXT PRIMARY KEY, asset_id TEXT NOT NULL, zone_id INTEGER NOT NULL,
            record_name TEXT NOT NULL, field_name TEXT NOT NULL, user_name TEXT NOT NULL, expires INTEGER NOT NULL)
        """,
        "CREATE INDEX asset_receipts_by_expiry ON asset_receipts (expires)",
    ]

    /// PostgreSQL's version five (assets) as it shipped, kept verbatim.
    static let postgresVersionFive: [PostgresQuery] = [
        "CREATE TABLE asset_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret BYTEA NOT NULL)",
        """
        CREATE TABLE asset_upload_tickets (id TEXT PRIMARY KEY, container TEXT NOT NULL, environment TEXT NOT NULL,
            scope TEXT NOT NULL, owner TEXT NOT NULL, zone_id BIGINT NOT NULL, record_name TEXT NOT NULL,
            record_type TEXT NOT NULL, field_name TEXT NOT NULL, user_name TEXT NOT NULL, expires BIGINT NOT NULL)
        """,
        "CREATE INDEX asset_upload_tickets_by_expiry ON asset_upload_tickets (expires)",
        """
        CREATE TABLE assets (id TEXT PRIMARY KEY, zone_id BIGINT NOT NULL, record_name TEXT NOT NULL,
            field_name TEXT NOT NULL, user_name TEXT NOT NULL, size BIGINT, checksum TEXT, created BIGINT NOT NULL,
            unheld_since BIGINT)
        """,
        "CREATE INDEX assets_by_unheld ON assets (unheld_since) WHERE unheld_since IS NOT NULL",
        "CREATE INDEX assets_held_by_zone ON assets (zone_id) WHERE unheld_since IS NULL",
        """
        CREATE TABLE asset_receipts (id TEXT PRIMARY KEY, asset_id TEXT NOT NULL, zone_id BIGINT NOT NULL,
            record_name TEXT NOT NULL, field_name TEXT NOT NULL, user_name TEXT NOT NULL, expires BIGINT NOT NULL)
        """,
        "CREATE INDEX asset_receipts_by_expiry ON asset_receipts (expires)",
        """
        CREATE TABLE asset_chunks (asset_id TEXT NOT NULL, start BIGINT NOT NULL, bytes BYTEA NOT NULL,
            PRIMARY KEY (asset_id, start))
        """,
        "ALTER TABLE asset_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL",
        // The first chunk of each asset, for the collector's list of what is stored.
        "CREATE INDEX asset_chunks_first ON asset_chunks (asset_id) WHERE start = 0",
    ]

    @Test("a version-six SQLite file opens with its users; it then keeps issuers and identities")
    func migratesSQLite() async throws {
        try await SQLiteSchemaTests.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                let statements =
                    SQLiteSchemaTests.versionOne + SQLiteSchemaTests.versionsTwoAndThree + SQLiteSchemaTests.versionFour
                    + SQLiteSchemaTests.versionFive + Self.sqliteVersionSix
                for statement in statements + [
                    "INSERT INTO containers VALUES ('iCloud.old', 'hash')",
                    "INSERT INTO users (container, name, record_name, token_hash) VALUES ('iCloud.old', 'al', '_al', 'h')",
                    "PRAGMA user_version = 6",
                ] {
                    _ = try await connection.query(statement)
                }
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()
            let storage = try await SQLiteStorage(path: path, logger: quietLogger)
            do {
                try await Self.checkMigrated(storage)
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
            let check = try await SQLiteConnection.open(storage: .file(path: path))
            let version = try await check.query("PRAGMA user_version").first?.column("user_version")?.integer
            try await check.close()
            #expect(version == 13)
        }
    }

    @Test(
        "a version-five PostgreSQL database opens with its users; it then keeps issuers and identities",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func migratesPostgres() async throws {
        try await PostgresTestDatabase.with { url in
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                let statements =
                    PostgresSchemaTests.versionTwo + PostgresSchemaTests.versionThree + PostgresSchemaTests.versionFour
                    + Self.postgresVersionFive
                for statement in statements + [
                    "INSERT INTO cumulus_schema (version) VALUES (3), (4), (5)",
                    "INSERT INTO containers VALUES ('iCloud.old', 'hash')",
                    "INSERT INTO users (container, name, record_name, token_hash) VALUES ('iCloud.old', 'al', '_al', 'h')",
                ] {
                    try await connection.query(statement, logger: logger)
                }
            }
            let storage = try await PostgresStorage(url: url, logger: quietLogger)
            do {
                try await Self.checkMigrated(storage)
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
            var versions: [Int32] = []
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                for try await version in try await connection.query(
                    "SELECT version FROM cumulus_schema ORDER BY version", logger: logger
                ).decode(Int32.self) {
                    versions.append(version)
                }
            }
            #expect(versions == Array(1...13))
        }
    }

    /// The old user is still there; an issuer and an identity can be kept.
    static func checkMigrated(_ storage: some ServerStorage) async throws {
        let issuer = StoredIdentityIssuer(
            issuer: "https://appleid.apple.com", audiences: ["com.example.notes"],
            keySetURL: "https://appleid.apple.com/auth/keys", keySet: nil)
        try await storage.write { transaction in
            #expect(try await transaction.users(withRecordNames: ["_al"], container: "iCloud.old").count == 1)
            try await transaction.saveIdentityIssuer(issuer, container: "iCloud.old")
            #expect(
                try await transaction.createIdentity(
                    issuer: issuer.issuer, subject: "s", userRecordName: "_al", container: "iCloud.old"))
        }
        let (issuers, user) = try await storage.read { transaction in
            (
                try await transaction.identityIssuers(container: "iCloud.old"),
                try await transaction.identityUser(issuer: issuer.issuer, subject: "s", container: "iCloud.old")
            )
        }
        #expect(issuers == [issuer] && user == "_al")
    }
}
