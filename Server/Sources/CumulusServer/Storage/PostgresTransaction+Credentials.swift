import CloudCodable
import CloudProtocol
import Foundation
import PostgresNIO

extension PostgresSchema {
    /// Version seven gives credentials a lifecycle: several web auth tokens per user, each
    /// with an optional expiry, in their own table (the one token each user
    /// had moves there, made now and never expiring); a container keeps the
    /// API token its last rotation replaced until the overlap ends; and one
    /// row counts the changes that took a credential away.
    static let credentialsVersion: [PostgresQuery] = [
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
}

extension PostgresTransaction {
    // MARK: Users

    func createUser(named name: String, recordName: String, container: String) async throws -> Bool {
        try await !query(
            """
            INSERT INTO users (container, name, record_name) VALUES (\(container), \(name), \(recordName))
                ON CONFLICT DO NOTHING RETURNING 1
            """
        ).isEmpty
    }

    func userAccount(named name: String, container: String, activeAt time: Int64) async throws -> StoredUserAccount? {
        try await accounts(
            query(
                """
                SELECT name, record_name, email_address, discoverable, given_name, family_name,
                    (SELECT count(*) FROM user_tokens AS t
                    WHERE t.container = users.container AND t.record_name = users.record_name
                    AND (t.expires IS NULL OR t.expires > \(time))) AS active_tokens
                    FROM users WHERE container = \(container) AND name = \(name)
                """)
        ).first
    }

    func userAccounts(container: String, activeAt time: Int64) async throws -> [StoredUserAccount] {
        try await accounts(
            query(
                """
                SELECT name, record_name, email_address, discoverable, given_name, family_name,
                    (SELECT count(*) FROM user_tokens AS t
                    WHERE t.container = users.container AND t.record_name = users.record_name
                    AND (t.expires IS NULL OR t.expires > \(time))) AS active_tokens
                    FROM users WHERE container = \(container) ORDER BY name COLLATE "C"
                """))
    }

    private func accounts(_ rows: [PostgresRow]) throws -> [StoredUserAccount] {
        try rows.map { row in
            try read(row, table: "users") { columns in
                StoredUserAccount(
                    name: try columns.value("name"), recordName: try columns.value("record_name"),
                    emailAddress: try columns.optional("email_address"),
                    isDiscoverable: try columns.value("discoverable"),
                    activeTokens: Int(try columns.value("active_tokens", as: Int64.self)),
                    nameComponents: try Self.name(columns))
            }
        }
    }

    func deleteUser(recordName: String, container: String) async throws -> Bool {
        try await !query(
            "DELETE FROM users WHERE container = \(container) AND record_name = \(recordName) RETURNING 1"
        ).isEmpty
    }

    // MARK: Web auth tokens

    func saveUserToken(_ token: StoredUserToken, container: String) async throws {
        try await query(
            """
            INSERT INTO user_tokens (container, token_hash, id, record_name, created, expires)
                VALUES (\(container), \(token.tokenHash), \(token.id), \(token.userRecordName), \(token.created),
                \(token.expires))
            """)
    }

    func userToken(tokenHash: String, container: String) async throws -> StoredUserToken? {
        try await tokens(
            query(
                """
                SELECT token_hash, record_name, created, expires FROM user_tokens
                    WHERE container = \(container) AND token_hash = \(tokenHash)
                """)
        ).first
    }

    func userTokens(id: String, container: String) async throws -> [StoredUserToken] {
        try await tokens(
            query(
                """
                SELECT token_hash, record_name, created, expires FROM user_tokens
                    WHERE container = \(container) AND id = \(id) ORDER BY created, token_hash
                """))
    }

    func userTokens(ofUser recordName: String, container: String) async throws -> [StoredUserToken] {
        try await tokens(
            query(
                """
                SELECT token_hash, record_name, created, expires FROM user_tokens
                    WHERE container = \(container) AND record_name = \(recordName) ORDER BY created, token_hash
                """))
    }

    private func tokens(_ rows: [PostgresRow]) throws -> [StoredUserToken] {
        try rows.map { row in
            try read(row, table: "user_tokens") { columns in
                StoredUserToken(
                    tokenHash: try columns.value("token_hash"), userRecordName: try columns.value("record_name"),
                    created: try columns.value("created"), expires: try columns.optional("expires"))
            }
        }
    }

    func deleteUserTokens(hashes: [String], container: String) async throws {
        guard !hashes.isEmpty else { return }
        try await query("DELETE FROM user_tokens WHERE container = \(container) AND token_hash = ANY(\(hashes))")
    }

    // MARK: Containers and keys

    func containerCredentials(named name: String) async throws -> StoredContainerCredentials? {
        let rows = try await query(
            "SELECT token_hash, previous_token_hash, previous_token_expires FROM containers WHERE name = \(name)")
        return try rows.first.map { row in
            try read(row, table: "containers") { columns in
                StoredContainerCredentials(
                    tokenHash: try columns.value("token_hash"),
                    previousTokenHash: try columns.optional("previous_token_hash"),
                    previousTokenExpires: try columns.optional("previous_token_expires"))
            }
        }
    }

    func setContainerCredentials(_ credentials: StoredContainerCredentials, named name: String) async throws -> Bool {
        try await !query(
            """
            UPDATE containers SET token_hash = \(credentials.tokenHash),
                previous_token_hash = \(credentials.previousTokenHash),
                previous_token_expires = \(credentials.previousTokenExpires) WHERE name = \(name) RETURNING 1
            """
        ).isEmpty
    }

    func serverKeys(container: String) async throws -> [StoredServerKey] {
        let rows = try await query(
            "SELECT key_id, pem FROM server_keys WHERE container = \(container) ORDER BY key_id COLLATE \"C\"")
        return try rows.map { row in
            try read(row, table: "server_keys") { columns in
                StoredServerKey(id: try columns.value("key_id"), publicKeyPEM: try columns.value("pem"))
            }
        }
    }

    func deleteServerKey(id: String, container: String) async throws -> Bool {
        try await !query(
            "DELETE FROM server_keys WHERE container = \(container) AND key_id = \(id) RETURNING 1"
        ).isEmpty
    }

    // MARK: Epoch

    /// Moves the epoch on and notifies every server's listening connection
    /// (PostgreSQL delivers the notification when the transaction commits,
    /// and not at all when it rolls back).
    func recordCredentialChange() async throws {
        try await query("UPDATE credentials_epoch SET epoch = epoch + 1 WHERE id = 1")
        try await query("SELECT pg_notify(\(PostgresChangeBroadcaster.credentialsChannel), '')")
    }

    func credentialsEpoch() async throws -> Int64 {
        let rows = try await query("SELECT epoch FROM credentials_epoch WHERE id = 1")
        guard let row = rows.first else {
            throw CloudError(.internalError, reason: "the credentials epoch has no row")
        }
        return try read(row, table: "credentials_epoch") { try $0.value("epoch") }
    }

    // MARK: A removed user's data

    func deleteZoneLog(inDatabase database: Int64) async throws {
        try await query("DELETE FROM zone_log WHERE database_id = \(database)")
    }

    func liveRecordNames(createdBy creator: String, inZone zone: Int64, limit: Int) async throws -> [String] {
        let rows = try await query(
            """
            SELECT name FROM records WHERE zone_id = \(zone) AND creator = \(creator) AND NOT deleted
                ORDER BY name COLLATE "C" LIMIT \(limit)
            """)
        return try rows.map { row in try read(row, table: "records") { try $0.value("name") } }
    }

    func deleteChannels(ofUser user: String, container: String) async throws {
        try await query("DELETE FROM notification_channels WHERE container = \(container) AND user_name = \(user)")
    }
}
