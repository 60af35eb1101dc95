import Cumulus
import CumulusServer
import Foundation
import PostgresNIO
import SQLiteNIO
import Testing

/// The schema step that gives an address one holder (SQLite 9, PostgreSQL
/// 8): a file or database of the version before it, where several users
/// held one address, opens with the address kept by its one provisioned
/// holder or by nobody, and refuses a second holder afterwards.
@Suite("Email holder schema migration")
struct EmailHolderSchemaTests {
    /// SQLite's versions seven (identities) and eight (credentials) as they shipped, kept verbatim.
    static let sqliteVersionsSevenAndEight = [
        """
        CREATE TABLE identity_issuers (container TEXT NOT NULL, issuer TEXT NOT NULL, audiences TEXT NOT NULL,
            jwks_url TEXT, jwks TEXT, PRIMARY KEY (container, issuer))
        """,
        """
        CREATE TABLE user_identities (container TEXT NOT NULL, issuer TEXT NOT NULL, subject TEXT NOT NULL,
            user_record_name TEXT NOT NULL, PRIMARY KEY (container, issuer, subject))
        """,
        "CREATE INDEX user_identities_by_user ON user_identities (container, user_record_name)",
        """
        CREATE TABLE user_tokens (container TEXT NOT NULL, token_hash TEXT NOT NULL, id TEXT NOT NULL,
            record_name TEXT NOT NULL, created INTEGER NOT NULL, expires INTEGER, PRIMARY KEY (container, token_hash))
        """,
        "CREATE INDEX user_tokens_by_user ON user_tokens (container, record_name)",
        "CREATE INDEX user_tokens_by_id ON user_tokens (container, id)",
        """
        INSERT INTO user_tokens (container, token_hash, id, record_name, created, expires)
            SELECT container, token_hash, substr(token_hash, 1, 16), record_name,
                CAST(strftime('%s', 'now') AS INTEGER) * 1000, NULL FROM users
        """,
        "DROP INDEX users_by_token",
        "ALTER TABLE users DROP COLUMN token_hash",
        "ALTER TABLE containers ADD COLUMN previous_token_hash TEXT",
        "ALTER TABLE containers ADD COLUMN previous_token_expires INTEGER",
        "CREATE TABLE credentials_epoch (id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL)",
        "INSERT INTO credentials_epoch (id, epoch) VALUES (1, 0)",
    ]

    /// PostgreSQL's versions six (identities) and seven (credentials) as they shipped, kept verbatim.
    static let postgresVersionsSixAndSeven: [PostgresQuery] = [
        """
        CREATE TABLE identity_issuers (container TEXT NOT NULL, issuer TEXT NOT NULL, audiences TEXT[] NOT NULL,
            jwks_url TEXT, jwks TEXT, PRIMARY KEY (container, issuer))
        """,
        """
        CREATE TABLE user_identities (container TEXT NOT NULL, issuer TEXT NOT NULL, subject TEXT NOT NULL,
            user_record_name TEXT NOT NULL, PRIMARY KEY (container, issuer, subject))
        """,
        "CREATE INDEX user_identities_by_user ON user_identities (container, user_record_name)",
        """
        CREATE TABLE user_tokens (container TEXT NOT NULL, token_hash TEXT NOT NULL, id TEXT NOT NULL,
            record_name TEXT NOT NULL, created BIGINT NOT NULL, expires BIGINT, PRIMARY KEY (container, token_hash))
        """,
        "CREATE INDEX user_tokens_by_user ON user_tokens (container, record_name)",
        "CREATE INDEX user_tokens_by_id ON user_tokens (container, id)",
        """
        INSERT INTO user_tokens (container, token_hash, id, record_name, created, expires)
            SELECT container, token_hash, substr(token_hash, 1, 16), record_name,
                (extract(epoch FROM now()) * 1000)::bigint, NULL FROM users
        """,
        "ALTER TABLE users DROP COLUMN token_hash",
        "ALTER TABLE containers ADD COLUMN previous_token_hash TEXT, ADD COLUMN previous_token_expires BIGINT",
        "CREATE TABLE credentials_epoch (id INTEGER PRIMARY KEY CHECK (id = 1), epoch BIGINT NOT NULL)",
        "INSERT INTO credentials_epoch (id, epoch) VALUES (1, 0)",
    ]

    /// The rows before the step: `vic` (provisioned) and two identity
    /// users share vic's address; two identity users share x's; two
    /// provisioned users share p's; `solo` and another container's `vic` hold theirs alone.
    static let rows: [(container: String, name: String, email: String, identity: Bool)] = [
        ("iCloud.old", "vic", "vic@example.com", false), ("iCloud.old", "_m1", "vic@example.com", true),
        ("iCloud.old", "_m2", "vic@example.com", true), ("iCloud.old", "_x1", "x@example.com", true),
        ("iCloud.old", "_x2", "x@example.com", true), ("iCloud.old", "p1", "p@example.com", false),
        ("iCloud.old", "p2", "p@example.com", false), ("iCloud.old", "solo", "solo@example.com", false),
        ("iCloud.other", "vic", "vic@example.com", false),
    ]

    /// Checks the holders the step left, through the storage's API, and that a second holder is refused.
    static func checkMigrated(_ storage: any ServerStorage) async throws {
        try await storage.read { transaction async throws in
            let addresses = ["vic@example.com", "x@example.com", "p@example.com", "solo@example.com"]
            let old = try await transaction.users(withEmailAddresses: addresses, container: "iCloud.old")
            #expect(old.map(\.recordName).sorted() == ["solo", "vic"])
            let other = try await transaction.users(withEmailAddresses: addresses, container: "iCloud.other")
            #expect(other.map(\.recordName) == ["vic"])
        }
        try await storage.write { transaction async throws in
            let held = try await EmailAddresses.assign(
                "vic@example.com", discoverable: true, to: "_m1", container: "iCloud.old", in: transaction)
            #expect(held == .heldByAnotherUser)
            let free = try await EmailAddresses.assign(
                "x@example.com", discoverable: true, to: "_x2", container: "iCloud.old", in: transaction)
            #expect(free == .assigned)
        }
        // The index refuses what the rule would: a write around it fails.
        await #expect(throws: (any Error).self) {
            try await storage.write { transaction async throws in
                _ = try await transaction.setUserEmail(
                    "solo@example.com", discoverable: true, recordName: "p1", container: "iCloud.old")
            }
        }
    }

    @Test("a version-eight SQLite file opens at nine with each address kept by one holder or none")
    func sqlite() async throws {
        try await SQLiteSchemaTests.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                let older =
                    SQLiteSchemaTests.versionOne + SQLiteSchemaTests.versionsTwoAndThree + SQLiteSchemaTests.versionFour
                    + SQLiteSchemaTests.versionFive + IdentitySchemaTests.sqliteVersionSix
                    + Self.sqliteVersionsSevenAndEight
                var statements = older + ["INSERT INTO containers VALUES ('iCloud.old', 'h1', NULL, NULL)"]
                statements.append("INSERT INTO containers VALUES ('iCloud.other', 'h2', NULL, NULL)")
                for row in Self.rows {
                    statements.append(
                        "INSERT INTO users VALUES ('\(row.container)', '\(row.name)', '\(row.name)', '\(row.email)', 1)"
                    )
                    if row.identity {
                        statements.append(
                            "INSERT INTO user_identities VALUES ('\(row.container)', 'https://i', '\(row.name)', '\(row.name)')"
                        )
                    }
                }
                for statement in statements + ["PRAGMA user_version = 8"] {
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
        }
    }

    @Test(
        "a version-seven PostgreSQL database opens at eight with each address kept by one holder or none",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func postgres() async throws {
        try await PostgresTestDatabase.with { url in
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                let older =
                    PostgresSchemaTests.versionTwo + PostgresSchemaTests.versionThree + PostgresSchemaTests.versionFour
                    + IdentitySchemaTests.postgresVersionFive + Self.postgresVersionsSixAndSeven
                for statement in older + [
                    "INSERT INTO cumulus_schema (version) VALUES (3), (4), (5), (6), (7)",
                    "INSERT INTO containers VALUES ('iCloud.old', 'h1', NULL, NULL), ('iCloud.other', 'h2', NULL, NULL)",
                ] {
                    try await connection.query(statement, logger: logger)
                }
                for row in Self.rows {
                    try await connection.query(
                        "INSERT INTO users VALUES (\(row.container), \(row.name), \(row.name), \(row.email), true)",
                        logger: logger)
                    if row.identity {
                        try await connection.query(
                            "INSERT INTO user_identities VALUES (\(row.container), 'https://i', \(row.name), \(row.name))",
                            logger: logger)
                    }
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
        }
    }
}
