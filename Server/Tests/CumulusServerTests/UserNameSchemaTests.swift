import Cumulus
import CumulusServer
import Foundation
import PostgresNIO
import SQLiteNIO
import Testing

/// The schema step of names and blocked identities (SQLite 10, PostgreSQL
/// 9): a file or database of the version before it opens with its users
/// unnamed and nobody blocked, and then keeps names and blocks.
@Suite("User name schema migration")
struct UserNameSchemaTests {
    /// SQLite's version nine (one holder per address) as it shipped, kept verbatim.
    static let sqliteVersionNine = [
        """
        CREATE TEMP TABLE email_holders_cleared AS SELECT u.container, u.record_name FROM users u
            WHERE u.email_address IS NOT NULL
            AND EXISTS (SELECT 1 FROM users o WHERE o.container = u.container
                AND o.email_address = u.email_address AND o.record_name <> u.record_name)
            AND (EXISTS (SELECT 1 FROM user_identities i
                    WHERE i.container = u.container AND i.user_record_name = u.record_name)
                OR (SELECT count(*) FROM users o WHERE o.container = u.container
                    AND o.email_address = u.email_address
                    AND NOT EXISTS (SELECT 1 FROM user_identities i
                        WHERE i.container = o.container AND i.user_record_name = o.record_name)) > 1)
        """,
        """
        UPDATE users SET email_address = NULL
            WHERE (container, record_name) IN (SELECT container, record_name FROM email_holders_cleared)
        """,
        "DROP TABLE email_holders_cleared",
        "DROP INDEX users_by_email",
        "CREATE UNIQUE INDEX users_by_email ON users (container, email_address) WHERE email_address IS NOT NULL",
    ]

    /// PostgreSQL's version eight (one holder per address) as it shipped, kept verbatim.
    static let postgresVersionEight: [PostgresQuery] = [
        """
        CREATE TEMP TABLE email_holders_cleared AS SELECT u.container, u.record_name FROM users u
            WHERE u.email_address IS NOT NULL
            AND EXISTS (SELECT 1 FROM users o WHERE o.container = u.container
                AND o.email_address = u.email_address AND o.record_name <> u.record_name)
            AND (EXISTS (SELECT 1 FROM user_identities i
                    WHERE i.container = u.container AND i.user_record_name = u.record_name)
                OR (SELECT count(*) FROM users o WHERE o.container = u.container
                    AND o.email_address = u.email_address
                    AND NOT EXISTS (SELECT 1 FROM user_identities i
                        WHERE i.container = o.container AND i.user_record_name = o.record_name)) > 1)
        """,
        """
        UPDATE users SET email_address = NULL
            WHERE (container, record_name) IN (SELECT container, record_name FROM email_holders_cleared)
        """,
        "DROP TABLE email_holders_cleared",
        "DROP INDEX users_by_email",
        "CREATE UNIQUE INDEX users_by_email ON users (container, email_address) WHERE email_address IS NOT NULL",
    ]

    /// Checks, through the storage's API, that the old rows read unnamed
    /// and unblocked, and that names and blocks are kept afterwards.
    static func checkMigrated(_ storage: any ServerStorage) async throws {
        try await storage.write { transaction async throws in
            let users = try await transaction.users(withRecordNames: ["_ida", "vic"], container: "iCloud.old")
            #expect(users.map(\.recordName) == ["_ida", "vic"])
            #expect(users.allSatisfy { $0.nameComponents == nil })
            #expect(try await !transaction.isUserBlocked("_ida", container: "iCloud.old"))
            #expect(
                try await transaction.identities(container: "iCloud.old") == [
                    StoredIdentity(issuer: "https://i", subject: "ida", userRecordName: "_ida")
                ])
            let name = UserNameComponents(givenName: "Ida", familyName: "Entity")
            #expect(try await transaction.setUserName(name, recordName: "_ida", container: "iCloud.old"))
            #expect(try await !transaction.setUserName(name, recordName: "_nobody", container: "iCloud.old"))
            let block = StoredBlockedIdentity(issuer: "https://i", subject: "ida", blocked: 1_000)
            #expect(try await transaction.blockIdentity(block, container: "iCloud.old"))
            #expect(try await !transaction.blockIdentity(block, container: "iCloud.old"))
        }
        try await storage.read { transaction async throws in
            let ida = try await transaction.users(withRecordNames: ["_ida"], container: "iCloud.old").first
            #expect(ida?.nameComponents == UserNameComponents(givenName: "Ida", familyName: "Entity"))
            let accounts = try await transaction.userAccounts(container: "iCloud.old", activeAt: 0)
            #expect(accounts.first { $0.recordName == "_ida" }?.nameComponents?.displayName == "Ida Entity")
            #expect(try await transaction.isUserBlocked("_ida", container: "iCloud.old"))
            #expect(try await !transaction.isUserBlocked("vic", container: "iCloud.old"))
            #expect(
                try await transaction.isIdentityBlocked(issuer: "https://i", subject: "ida", container: "iCloud.old"))
            // Exact bytes: another spelling or another container is not blocked.
            #expect(
                try await !transaction.isIdentityBlocked(issuer: "https://I", subject: "ida", container: "iCloud.old"))
            #expect(
                try await !transaction.isIdentityBlocked(issuer: "https://i", subject: "ida", container: "iCloud.other")
            )
            #expect(
                try await transaction.blockedIdentities(container: "iCloud.old") == [
                    StoredBlockedIdentity(issuer: "https://i", subject: "ida", blocked: 1_000)
                ])
        }
        try await storage.write { transaction async throws in
            #expect(try await transaction.unblockIdentity(issuer: "https://i", subject: "ida", container: "iCloud.old"))
            #expect(
                try await !transaction.unblockIdentity(issuer: "https://i", subject: "ida", container: "iCloud.old"))
            #expect(try await !transaction.isUserBlocked("_ida", container: "iCloud.old"))
        }
    }

    @Test("a version-nine SQLite file opens with its users unnamed; names and blocks are kept")
    func sqlite() async throws {
        try await SQLiteSchemaTests.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                let older =
                    SQLiteSchemaTests.versionOne + SQLiteSchemaTests.versionsTwoAndThree + SQLiteSchemaTests.versionFour
                    + SQLiteSchemaTests.versionFive + IdentitySchemaTests.sqliteVersionSix
                    + EmailHolderSchemaTests.sqliteVersionsSevenAndEight + Self.sqliteVersionNine
                for statement in older + [
                    "INSERT INTO containers VALUES ('iCloud.old', 'h1', NULL, NULL)",
                    "INSERT INTO users VALUES ('iCloud.old', 'vic', 'vic', 'vic@example.com', 1)",
                    "INSERT INTO users VALUES ('iCloud.old', '_ida', '_ida', NULL, 0)",
                    "INSERT INTO user_identities VALUES ('iCloud.old', 'https://i', 'ida', '_ida')",
                    "PRAGMA user_version = 9",
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
        }
    }

    @Test(
        "a version-eight PostgreSQL database opens with its users unnamed; names and blocks are kept",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func postgres() async throws {
        try await PostgresTestDatabase.with { url in
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                let older =
                    PostgresSchemaTests.versionTwo + PostgresSchemaTests.versionThree + PostgresSchemaTests.versionFour
                    + IdentitySchemaTests.postgresVersionFive + EmailHolderSchemaTests.postgresVersionsSixAndSeven
                    + Self.postgresVersionEight
                for statement in older + [
                    "INSERT INTO cumulus_schema (version) VALUES (3), (4), (5), (6), (7), (8)",
                    "INSERT INTO containers VALUES ('iCloud.old', 'h1', NULL, NULL)",
                    "INSERT INTO users VALUES ('iCloud.old', 'vic', 'vic', 'vic@example.com', true)",
                    "INSERT INTO users VALUES ('iCloud.old', '_ida', '_ida', NULL, false)",
                    "INSERT INTO user_identities VALUES ('iCloud.old', 'https://i', 'ida', '_ida')",
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
        }
    }
}
