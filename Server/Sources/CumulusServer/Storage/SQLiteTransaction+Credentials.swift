import CloudCodable
import CloudProtocol
import Foundation
import Logging
import SQLiteNIO

extension SQLiteSchema {
    /// Version eight gives credentials a lifecycle: several web auth tokens
    /// per user, each with an optional expiry, in their own table (the one
    /// token each user had moves there, made now and never expiring); a
    /// container keeps the API token its last rotation replaced until the
    /// overlap ends; and one row counts the changes that took a credential
    /// away, which the running server compares to drop what it trusted.
    static let credentialsVersion = [
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
}

extension SQLiteTransaction {
    // MARK: Users

    func createUser(named name: String, recordName: String, container: String) async throws -> Bool {
        try await !query(
            "INSERT OR IGNORE INTO users (container, name, record_name) VALUES (?, ?, ?) RETURNING 1",
            [.text(container), .text(name), .text(recordName)]
        ).isEmpty
    }

    func userAccount(named name: String, container: String, activeAt time: Int64) async throws -> StoredUserAccount? {
        try await accounts(where: "name = ?", [.text(name)], container: container, time: time).first
    }

    func userAccounts(container: String, activeAt time: Int64) async throws -> [StoredUserAccount] {
        try await accounts(where: "1", [], container: container, time: time)
    }

    private func accounts(where condition: String, _ binds: [SQLiteData], container: String, time: Int64)
        async throws -> [StoredUserAccount]
    {
        let rows = try await query(
            """
            SELECT \(SQLiteColumns.exact(["name", "record_name", "email_address", "given_name", "family_name"])),
                discoverable,
                (SELECT count(*) FROM user_tokens WHERE user_tokens.container = users.container
                    AND user_tokens.record_name = users.record_name
                    AND (expires IS NULL OR expires > ?)) AS active_tokens
                FROM users WHERE container = ? AND \(condition)
            """, [.integer(Int(time)), .text(container)] + binds)
        return try rows.map { row in
            try read(row, table: "users") { columns in
                StoredUserAccount(
                    name: try columns.text("name"), recordName: try columns.text("record_name"),
                    emailAddress: try columns.optionalText("email_address"),
                    isDiscoverable: try columns.bool("discoverable"),
                    activeTokens: Int(try columns.integer("active_tokens")),
                    nameComponents: try Self.name(columns))
            }
        }.sorted { ExactName($0.name) < ExactName($1.name) }
    }

    func deleteUser(recordName: String, container: String) async throws -> Bool {
        try await !query(
            "DELETE FROM users WHERE container = ? AND record_name = ? RETURNING 1",
            [.text(container), .text(recordName)]
        ).isEmpty
    }

    // MARK: Web auth tokens

    func saveUserToken(_ token: StoredUserToken, container: String) async throws {
        try await query(
            """
            INSERT INTO user_tokens (container, token_hash, id, record_name, created, expires)
                VALUES (?, ?, ?, ?, ?, ?)
            """,
            [
                .text(container), .text(token.tokenHash), .text(token.id), .text(token.userRecordName),
                .integer(Int(token.created)), token.expires.map { .integer(Int($0)) } ?? .null,
            ])
    }

    func userToken(tokenHash: String, container: String) async throws -> StoredUserToken? {
        try await tokens(where: "token_hash = ?", .text(tokenHash), container: container).first
    }

    func userTokens(id: String, container: String) async throws -> [StoredUserToken] {
        try await tokens(where: "id = ?", .text(id), container: container)
    }

    func userTokens(ofUser recordName: String, container: String) async throws -> [StoredUserToken] {
        try await tokens(where: "record_name = ?", .text(recordName), container: container)
    }

    private func tokens(where condition: String, _ value: SQLiteData, container: String) async throws
        -> [StoredUserToken]
    {
        let rows = try await query(
            """
            SELECT \(SQLiteColumns.exact(["token_hash", "record_name"])), created, expires FROM user_tokens
                WHERE container = ? AND \(condition) ORDER BY created, token_hash
            """, [.text(container), value])
        return try rows.map { row in
            try read(row, table: "user_tokens") { columns in
                StoredUserToken(
                    tokenHash: try columns.text("token_hash"), userRecordName: try columns.text("record_name"),
                    created: try columns.integer("created"), expires: try columns.optionalInteger("expires"))
            }
        }
    }

    func deleteUserTokens(hashes: [String], container: String) async throws {
        try await chunked(hashes) { chunk in
            try await query(
                "DELETE FROM user_tokens WHERE container = ? AND token_hash IN (\(placeholders(chunk.count)))",
                [.text(container)] + chunk.map(SQLiteData.text))
        }
    }

    // MARK: Containers and keys

    func containerCredentials(named name: String) async throws -> StoredContainerCredentials? {
        let rows = try await query(
            """
            SELECT \(SQLiteColumns.exact(["token_hash", "previous_token_hash"])), previous_token_expires
                FROM containers WHERE name = ?
            """, [.text(name)])
        return try rows.first.map { row in
            try read(row, table: "containers") { columns in
                StoredContainerCredentials(
                    tokenHash: try columns.text("token_hash"),
                    previousTokenHash: try columns.optionalText("previous_token_hash"),
                    previousTokenExpires: try columns.optionalInteger("previous_token_expires"))
            }
        }
    }

    func setContainerCredentials(_ credentials: StoredContainerCredentials, named name: String) async throws -> Bool {
        try await !query(
            """
            UPDATE containers SET token_hash = ?, previous_token_hash = ?, previous_token_expires = ?
                WHERE name = ? RETURNING 1
            """,
            [
                .text(credentials.tokenHash), credentials.previousTokenHash.map(SQLiteData.text) ?? .null,
                credentials.previousTokenExpires.map { .integer(Int($0)) } ?? .null, .text(name),
            ]
        ).isEmpty
    }

    func serverKeys(container: String) async throws -> [StoredServerKey] {
        let rows = try await query(
            "SELECT \(SQLiteColumns.exact(["key_id", "pem"])) FROM server_keys WHERE container = ?", [.text(container)])
        return try rows.map { row in
            try read(row, table: "server_keys") { columns in
                StoredServerKey(id: try columns.text("key_id"), publicKeyPEM: try columns.text("pem"))
            }
        }.sorted { ExactName($0.id) < ExactName($1.id) }
    }

    func deleteServerKey(id: String, container: String) async throws -> Bool {
        try await !query(
            "DELETE FROM server_keys WHERE container = ? AND key_id = ? RETURNING 1", [.text(container), .text(id)]
        ).isEmpty
    }

    // MARK: Epoch

    func recordCredentialChange() async throws {
        try await query("UPDATE credentials_epoch SET epoch = epoch + 1 WHERE id = 1")
    }

    func credentialsEpoch() async throws -> Int64 {
        try await Self.epoch(query("SELECT epoch FROM credentials_epoch WHERE id = 1"), logger: logger)
    }

    /// The epoch of the `credentials_epoch` row read by `rows`.
    static func epoch(_ rows: [SQLiteStoredRow], logger: Logger) throws -> Int64 {
        guard let row = rows.first else {
            throw CloudError(.internalError, reason: "the credentials epoch has no row")
        }
        do {
            return try SQLiteColumns(row, table: "credentials_epoch").integer("epoch")
        } catch let error as ImpossibleRow {
            throw error.cloudError(logging: logger)
        }
    }

    // MARK: A removed user's data

    func deleteZoneLog(inDatabase database: Int64) async throws {
        try await query("DELETE FROM zone_log WHERE database_id = ?", [.integer(Int(database))])
    }

    func liveRecordNames(createdBy creator: String, inZone zone: Int64, limit: Int) async throws -> [String] {
        let rows = try await query(
            """
            SELECT \(SQLiteColumns.exact("name")) FROM records WHERE zone_id = ? AND creator = ? AND deleted = 0
                ORDER BY records.name LIMIT ?
            """, [.integer(Int(zone)), .text(creator), .integer(limit)])
        return try rows.map { row in try read(row, table: "records") { try $0.text("name") } }
    }

    func deleteChannels(ofUser user: String, container: String) async throws {
        try await query(
            "DELETE FROM notification_channels WHERE container = ? AND user_name = ?", [.text(container), .text(user)])
    }
}
