import Cumulus
import CumulusServer
import Foundation
import PostgresNIO
import SQLiteNIO
import Testing

/// The schema step that gives credentials a lifecycle (SQLite 8,
/// PostgreSQL 7): a file or database of the version before identities
/// (SQLite 6, PostgreSQL 5) opens through both steps with each user's one
/// token moved to the tokens table, working and never expiring. The
/// verbatim copies of those versions are ``IdentitySchemaTests``'s.
@Suite("Credential schema migration")
struct CredentialSchemaTests {
    /// Checks what the migration kept and added, through the storage's API.
    static func checkMigrated(_ storage: any ServerStorage) async throws {
        let before = Int64((Date().timeIntervalSince1970 - 3600) * 1000)
        try await storage.read { transaction async throws in
            let token = try #require(try await transaction.userToken(tokenHash: "user-hash", container: "iCloud.old"))
            #expect(token.userRecordName == "_alice" && token.expires == nil && token.id == "user-hash")
            #expect(token.created > before)
            let accounts = try await transaction.userAccounts(container: "iCloud.old", activeAt: 0)
            #expect(accounts.map(\.name) == ["alice"] && accounts.first?.activeTokens == 1)
            let container = try #require(try await transaction.containerCredentials(named: "iCloud.old"))
            #expect(container == StoredContainerCredentials(tokenHash: "hash"))
            #expect(try await transaction.credentialsEpoch() == 0)
        }
        // A second user needs no token column any more, and the epoch moves.
        try await storage.write { transaction async throws in
            #expect(try await transaction.createUser(named: "bob", recordName: "_bob", container: "iCloud.old"))
            try await transaction.recordCredentialChange()
        }
        try await storage.read { transaction async throws in
            #expect(try await transaction.credentialsEpoch() == 1)
            #expect(try await transaction.userTokens(ofUser: "_bob", container: "iCloud.old").isEmpty)
        }
    }

    @Test("a version-six SQLite file opens at eight with each user's token moved, never expiring")
    func sqlite() async throws {
        try await SQLiteSchemaTests.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                let older =
                    SQLiteSchemaTests.versionOne + SQLiteSchemaTests.versionsTwoAndThree + SQLiteSchemaTests.versionFour
                    + SQLiteSchemaTests.versionFive + IdentitySchemaTests.sqliteVersionSix
                for statement in older + [
                    "INSERT INTO containers VALUES ('iCloud.old', 'hash')",
                    "INSERT INTO users VALUES ('iCloud.old', 'alice', '_alice', 'user-hash', NULL, 0)",
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
        }
    }

    @Test(
        "a version-five PostgreSQL database opens at seven with each user's token moved, never expiring",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func postgres() async throws {
        try await PostgresTestDatabase.with { url in
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                let older =
                    PostgresSchemaTests.versionTwo + PostgresSchemaTests.versionThree + PostgresSchemaTests.versionFour
                    + IdentitySchemaTests.postgresVersionFive
                for statement in older + [
                    "INSERT INTO cumulus_schema (version) VALUES (3), (4), (5)",
                    "INSERT INTO containers VALUES ('iCloud.old', 'hash')",
                    "INSERT INTO users VALUES ('iCloud.old', 'alice', '_alice', 'user-hash', NULL, false)",
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
