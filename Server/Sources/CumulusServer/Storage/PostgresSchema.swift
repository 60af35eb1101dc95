import CloudCodable
import CloudProtocol
import Logging
import PostgresNIO

/// The schema of the PostgreSQL database, versioned in `cumulus_schema`
/// (one row per version applied) so that later versions can migrate older
/// databases.
enum PostgresSchema {
    /// The version this server writes.
    static let version = 13

    /// The advisory lock that serialises servers migrating one database at
    /// once ("cumulus" in ASCII).
    static let migrationLock: Int64 = 0x63_75_6d_75_6c_75_73

    /// Brings the schema up to ``version`` in one transaction, under the
    /// migration lock; refuses a database of a newer version.
    static func migrate(_ connection: PostgresTransactionConnection) async throws {
        try await connection.run("BEGIN")
        do {
            // A migration may rewrite big tables: the requests' statement timeout is not for it.
            try await connection.run("SET LOCAL statement_timeout = 0")
            try await connection.run("SELECT pg_advisory_xact_lock(\(migrationLock))")
            try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS cumulus_schema (version INTEGER PRIMARY KEY,
                    applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """)
            let rows = try await connection.run("SELECT coalesce(max(version), 0) AS version FROM cumulus_schema").rows
            guard let row = rows.first else {
                throw CloudError(.internalError, reason: "the PostgreSQL database's schema version cannot be read")
            }
            let current: Int = try PostgresColumns(row, table: "cumulus_schema").value("version")
            guard current <= version else {
                throw CloudError(
                    .internalError,
                    reason: "the PostgreSQL database has schema version \(current); this server knows \(version)")
            }
            if current < 1 {
                for statement in versionOne { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (1)")
            }
            if current < 2 {
                for statement in versionTwo { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (2)")
            }
            if current < 3 {
                for statement in versionThree { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (3)")
            }
            if current < 4 {
                for statement in versionFour { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (4)")
            }
            if current < 5 {
                for statement in versionFive { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (5)")
            }
            if current < 6 {
                for statement in identitiesVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (6)")
            }
            if current < 7 {
                for statement in credentialsVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (7)")
            }
            if current < 8 {
                for statement in emailHoldersVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (8)")
            }
            if current < 9 {
                for statement in namesVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (9)")
            }
            if current < 10 {
                for statement in restoresVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (10)")
            }
            if current < 11 {
                for statement in consoleVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (11)")
            }
            if current < 12 {
                for statement in byteOrderVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (12)")
            }
            if current < 13 {
                for statement in originsVersion { try await connection.run(statement) }
                try await connection.run("INSERT INTO cumulus_schema (version) VALUES (13)")
            }
            try await connection.run("COMMIT")
        } catch {
            do {
                if !connection.connection.isClosed { try await connection.run("ROLLBACK") }
            } catch {
                // A connection whose transaction may still be open must not go back to the pool.
                try? await connection.connection.close()
            }
            throw error
        }
    }

    /// Query subscriptions: a subscription keeps its query and firing
    /// reasons (both NULL for a zone subscription, as every existing row
    /// is), and the notifications they fire are kept for the channels'
    /// polls, by database and user in serial order.
    private static let versionFour: [PostgresQuery] = [
        "ALTER TABLE subscriptions ADD COLUMN query TEXT, ADD COLUMN fires_on TEXT",
        """
        CREATE TABLE query_notifications (id BIGSERIAL PRIMARY KEY,
            database_id BIGINT NOT NULL REFERENCES databases, serial BIGINT NOT NULL, user_name TEXT NOT NULL,
            subscription_id TEXT NOT NULL, zone_name TEXT NOT NULL, record_name TEXT NOT NULL, reason TEXT NOT NULL,
            logged BIGINT NOT NULL)
        """,
        "CREATE INDEX query_notifications_by_user ON query_notifications (database_id, user_name, serial, id)",
        "CREATE INDEX query_notifications_by_time ON query_notifications (logged)",
    ]

    /// Version six signs users in with identity tokens: each container's
    /// issuers (their audiences, and the key set's URL or the key set
    /// itself), and which user each issuer's subject is.
    private static let identitiesVersion: [PostgresQuery] = [
        """
        CREATE TABLE identity_issuers (container TEXT NOT NULL, issuer TEXT NOT NULL, audiences TEXT[] NOT NULL,
            jwks_url TEXT, jwks TEXT, PRIMARY KEY (container, issuer))
        """,
        """
        CREATE TABLE user_identities (container TEXT NOT NULL, issuer TEXT NOT NULL, subject TEXT NOT NULL,
            user_record_name TEXT NOT NULL, PRIMARY KEY (container, issuer, subject))
        """,
        "CREATE INDEX user_identities_by_user ON user_identities (container, user_record_name)",
    ]

    /// Version five keeps assets: their rows, the upload tickets and
    /// receipts that lead to them, the secret download URLs are signed with
    /// (one for every server on the database), and their bytes in chunks,
    /// stored uncompressed (`EXTERNAL`: assets are mostly compressed
    /// already, and a range reads only its part of a chunk). Zone ids are
    /// never reused, so the rows name zones without a foreign key: a
    /// deleted zone's assets stay until the collector deletes them.
    private static let versionFive: [PostgresQuery] = [
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

    /// Sharing: records keep their parent and the share that covers them
    /// (with an index to walk a hierarchy), the zone log keys an entry by
    /// owner and zone name (a shared database holds other users' zones),
    /// shares get their tables, and users an email address. Existing rows
    /// keep their values; their new columns start empty.
    private static let versionThree: [PostgresQuery] = [
        """
        ALTER TABLE records ADD COLUMN parent TEXT, ADD COLUMN share_key TEXT, ADD COLUMN former_share_key TEXT
        """,
        "CREATE INDEX records_by_parent ON records (zone_id, parent) WHERE NOT deleted AND parent IS NOT NULL",
        """
        ALTER TABLE zone_log ADD COLUMN owner_record_name TEXT NOT NULL DEFAULT '', DROP CONSTRAINT zone_log_pkey,
            ADD PRIMARY KEY (database_id, owner_record_name, zone_name)
        """,
        """
        CREATE TABLE shares (zone_id BIGINT NOT NULL REFERENCES zones ON DELETE CASCADE, record_name TEXT NOT NULL,
            short_guid TEXT NOT NULL UNIQUE, container TEXT NOT NULL, environment TEXT NOT NULL, owner TEXT NOT NULL,
            zone_name TEXT NOT NULL, root_record_name TEXT, public_permission TEXT NOT NULL,
            participants BYTEA NOT NULL, PRIMARY KEY (zone_id, record_name))
        """,
        // One row per participant who accepted, to find a user's shares by index.
        """
        CREATE TABLE share_acceptances (zone_id BIGINT NOT NULL, record_name TEXT NOT NULL,
            container TEXT NOT NULL, environment TEXT NOT NULL, user_name TEXT NOT NULL,
            PRIMARY KEY (container, environment, user_name, zone_id, record_name),
            FOREIGN KEY (zone_id, record_name) REFERENCES shares (zone_id, record_name) ON DELETE CASCADE)
        """,
        "CREATE INDEX share_acceptances_by_share ON share_acceptances (zone_id, record_name)",
        """
        ALTER TABLE users ADD COLUMN email_address TEXT, ADD COLUMN discoverable BOOLEAN NOT NULL DEFAULT false
        """,
        "CREATE INDEX users_by_record_name ON users (container, record_name)",
        "CREATE INDEX users_by_email ON users (container, email_address) WHERE email_address IS NOT NULL",
    ]

    /// Notification channels in storage, so that any server answers their polls.
    private static let versionTwo: [PostgresQuery] = [
        """
        CREATE TABLE notification_channels (token_hash TEXT PRIMARY KEY, container TEXT NOT NULL,
            environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, user_name TEXT NOT NULL,
            start BIGINT NOT NULL, last_used BIGINT NOT NULL)
        """,
        "CREATE INDEX notification_channels_by_use ON notification_channels (last_used)",
    ]

    private static let versionOne: [PostgresQuery] = [
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
        CREATE TABLE quotas (container TEXT NOT NULL, environment TEXT NOT NULL, user_name TEXT NOT NULL,
            PRIMARY KEY (container, environment, user_name))
        """,
        """
        CREATE TABLE databases (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, container TEXT NOT NULL,
            environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, incarnation BIGINT NOT NULL,
            serial BIGINT NOT NULL, UNIQUE (container, environment, scope, owner))
        """,
        """
        CREATE TABLE zones (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            database_id BIGINT NOT NULL REFERENCES databases, name TEXT NOT NULL, incarnation BIGINT NOT NULL,
            serial BIGINT NOT NULL, UNIQUE (database_id, name))
        """,
        """
        CREATE TABLE zone_log (database_id BIGINT NOT NULL REFERENCES databases, zone_name TEXT NOT NULL,
            serial BIGINT NOT NULL, deleted BOOLEAN NOT NULL, PRIMARY KEY (database_id, zone_name))
        """,
        "CREATE INDEX zone_log_by_serial ON zone_log (database_id, serial)",
        """
        CREATE TABLE records (zone_id BIGINT NOT NULL REFERENCES zones ON DELETE CASCADE, name TEXT NOT NULL,
            type TEXT NOT NULL, serial BIGINT NOT NULL, deleted BOOLEAN NOT NULL, creator TEXT, body BYTEA,
            PRIMARY KEY (zone_id, name))
        """,
        "CREATE INDEX records_by_serial ON records (zone_id, serial)",
        "CREATE INDEX records_by_type ON records (zone_id, type) WHERE NOT deleted",
        """
        CREATE TABLE delete_self_references (zone_id BIGINT NOT NULL REFERENCES zones ON DELETE CASCADE,
            source TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (zone_id, source, target))
        """,
        "CREATE INDEX delete_self_references_by_target ON delete_self_references (zone_id, target)",
        """
        CREATE TABLE subscriptions (database_id BIGINT NOT NULL REFERENCES databases, user_name TEXT NOT NULL,
            id TEXT NOT NULL, zone_name TEXT NOT NULL, PRIMARY KEY (database_id, user_name, id))
        """,
        """
        CREATE TABLE field_types (container TEXT NOT NULL, environment TEXT NOT NULL, record_type TEXT NOT NULL,
            field TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY (container, environment, record_type, field))
        """,
    ]
}

extension PostgresSchema {
    /// Version 12: record names sort in byte order in their own column, so
    /// that the primary key serves `ORDER BY name COLLATE "C"` (a page of a
    /// zone by name) instead of a scan and a sort of the zone. Equality was
    /// byte-exact before too (default collations are deterministic).
    static let byteOrderVersion: [PostgresQuery] = [
        #"ALTER TABLE records ALTER COLUMN name TYPE TEXT COLLATE "C""#
    ]
}
