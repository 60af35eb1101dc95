import CloudCodable
import CloudProtocol
import Foundation
import Logging
import SQLiteNIO

/// ``ServerStorage`` in one SQLite file, for a server that runs as one process.
///
/// The file is in WAL mode with `synchronous=FULL`: a transaction that
/// committed survives a crash or a power cut. One connection runs one
/// transaction at a time (writes as `BEGIN IMMEDIATE`), which is what
/// gives each zone its gapless change feed. A transaction runs whole on
/// the connection's own thread (``SQLiteHandle``), its statements prepared
/// once and kept. The bytes of assets are files
/// in a directory beside it (``FileAssetStore``).
public final class SQLiteStorage: ServerStorage {
    /// The files of the assets' bytes.
    public let assetBytes: any AssetByteStore
    private let connection: SQLiteHandle
    private let logger: Logger
    private let gate = AsyncLock()
    private let closed = LockedState(false)
    /// Where failures are reported, for a server's metrics.
    let observer = StorageObserver()
    /// The file's `data_version` when the credentials epoch was last read, and that epoch.
    private let epochSeen = LockedState<(dataVersion: Int64, epoch: Int64)?>(nil)

    /// Opens (creating if needed, 0600 with its asset directory 0700) the
    /// database file at `path` and brings its schema up to date.
    ///
    /// - Parameters:
    ///   - assetDirectory: Where the bytes of assets are kept: `<path>-assets`
    ///     by default, beside the file as its `-wal` is.
    ///   - logger: Where impossible rows are logged (never their values).
    /// - Throws: An `SQLiteFailure` when the file cannot be opened, or
    ///   ``CloudError`` (`INTERNAL_ERROR`) for a file written by a newer server.
    public init(path: String, assetDirectory: String? = nil, logger: Logger) async throws {
        self.logger = logger
        assetBytes = try FileAssetStore(directory: assetDirectory ?? path + "-assets")
        // A new file 0600, so that its -wal and -shm, made with its mode, are private too.
        PrivateFiles.prepareDatabaseFile(path)
        connection = try await SQLiteHandle.open(path: path)
        do {
            try await connection.run { connection in
                try connection.querySynchronously("PRAGMA journal_mode=WAL")
                try connection.querySynchronously("PRAGMA synchronous=FULL")
                // A command (`container add`, `backup`) may write beside a running server: wait for its lock.
                try connection.querySynchronously("PRAGMA busy_timeout=5000")
                try connection.querySynchronously("PRAGMA foreign_keys=ON")
                try SQLiteSchema.migrate(connection)
            }
        } catch {
            await connection.close()
            throw error
        }
        do {
            let identity = try Self.fileIdentity(of: path)
            let renewed = try await write { transaction in
                try await StoreRestores.takeNotice(of: identity, in: transaction)
            }
            if renewed {
                logger.notice("the database file is not the one last written (restored or copied): sync tokens renewed")
            }
        } catch {
            try? await close()
            throw error
        }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T)
        async throws -> T
    {
        try await transaction("BEGIN IMMEDIATE", body)
    }

    /// Runs `body` in a deferred transaction, which sees one snapshot.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) async throws -> T)
        async throws -> T
    {
        try await transaction("BEGIN", body)
    }

    /// Closes the connection once the running transaction ends.
    public func close() async throws {
        await gate.withLock {
            guard !closed.withLock({ $0 }) else { return }
            closed.withLock { $0 = true }
            await connection.close()
        }
    }

    /// The credentials epoch (``CredentialTransaction/credentialsEpoch()``),
    /// read again only when another connection, such as the `cumulus`
    /// command's, committed to the file since the last call: `PRAGMA
    /// data_version` tells, without a transaction.
    public func credentialsEpoch() async throws -> Int64 {
        try await gate.withLock {
            guard !closed.withLock({ $0 }) else {
                throw CloudError(.internalError, reason: "the storage is closed")
            }
            return try await connection.run { connection in
                let rows = try connection.querySynchronously("PRAGMA data_version")
                guard case .integer(let version) = rows.first?.column("data_version") else {
                    throw CloudError(.internalError, reason: "the database file has no data version")
                }
                if let seen = epochSeen.withLock({ $0 }), seen.dataVersion == Int64(version) { return seen.epoch }
                let epoch = try SQLiteTransaction.epoch(
                    try connection.querySynchronously("SELECT epoch FROM credentials_epoch WHERE id = 1"),
                    logger: logger)
                epochSeen.withLock { $0 = (Int64(version), epoch) }
                return epoch
            }
        }
    }

    private func transaction<T: Sendable>(
        _ begin: String, _ body: @escaping @Sendable (any StorageTransaction) async throws -> T
    ) async throws -> T {
        try await reportingFailures {
            try await locked(begin, body)
        }
    }

    private func locked<T: Sendable>(
        _ begin: String, _ body: @escaping @Sendable (any StorageTransaction) async throws -> T
    ) async throws -> T {
        try await gate.withLock {
            guard !closed.withLock({ $0 }) else {
                throw CloudError(.internalError, reason: "the storage is closed")
            }
            // The body runs on the connection's thread too: its statements call SQLite without a hop.
            return try await connection.run { connection in
                try connection.querySynchronously(begin)
                let result: T
                do {
                    result = try await body(SQLiteTransaction(connection: connection, logger: logger))
                } catch {
                    _ = try? connection.querySynchronously("ROLLBACK")
                    throw error
                }
                do {
                    try connection.querySynchronously("COMMIT")
                } catch {
                    _ = try? connection.querySynchronously("ROLLBACK")
                    throw error
                }
                return result
            }
        }
    }
}

/// The schema of the SQLite file, versioned with `PRAGMA user_version` so
/// that later versions can migrate older files: a file is brought up from its
/// version one step at a time, all steps in one transaction.
enum SQLiteSchema {
    /// The statements that bring a file from each version to the next: the
    /// first creates version 1.
    static let migrations = [
        versionOne, versionTwo, versionThree, versionFour, versionFive, versionSix, identitiesVersion,
        SQLiteSchema.credentialsVersion, SQLiteSchema.emailHoldersVersion, SQLiteSchema.namesVersion,
        SQLiteSchema.restoresVersion, SQLiteSchema.consoleVersion, SQLiteSchema.originsVersion,
    ]
    /// The version this server writes.
    static var version: Int { migrations.count }

    static func migrate(_ connection: SQLiteHandle) throws {
        let rows = try connection.querySynchronously("PRAGMA user_version")
        guard case .integer(let current) = rows.first?.column("user_version") else {
            throw CloudError(.internalError, reason: "the database file has no schema version")
        }
        guard current <= version else {
            throw CloudError(
                .internalError, reason: "the database file has schema version \(current); this server knows \(version)")
        }
        guard current < version else { return }
        try connection.querySynchronously("BEGIN IMMEDIATE")
        do {
            for statements in migrations[current...] {
                for statement in statements { try connection.querySynchronously(statement) }
            }
            try connection.querySynchronously("PRAGMA user_version = \(version)")
            try connection.querySynchronously("COMMIT")
        } catch {
            _ = try? connection.querySynchronously("ROLLBACK")
            throw error
        }
    }

    /// Version five is for query subscriptions: a subscription keeps its
    /// query and firing reasons (both NULL for a zone subscription, as
    /// every existing row is), and the notifications they fire are kept
    /// for the channels' polls, by database and user in serial order.
    private static let versionFive = [
        "ALTER TABLE subscriptions ADD COLUMN query TEXT",
        "ALTER TABLE subscriptions ADD COLUMN fires_on TEXT",
        """
        CREATE TABLE query_notifications (id INTEGER PRIMARY KEY AUTOINCREMENT,
            database_id INTEGER NOT NULL REFERENCES databases, serial INTEGER NOT NULL, user_name TEXT NOT NULL,
            subscription_id TEXT NOT NULL, zone_name TEXT NOT NULL, record_name TEXT NOT NULL, reason TEXT NOT NULL,
            logged INTEGER NOT NULL)
        """,
        "CREATE INDEX query_notifications_by_user ON query_notifications (database_id, user_name, serial, id)",
        "CREATE INDEX query_notifications_by_time ON query_notifications (logged)",
    ]

    /// Version seven signs users in with identity tokens: each container's
    /// issuers (their audiences as a JSON array, and the key set's URL or the
    /// key set itself), and which user each issuer's subject is.
    private static let identitiesVersion = [
        """
        CREATE TABLE identity_issuers (container TEXT NOT NULL, issuer TEXT NOT NULL, audiences TEXT NOT NULL,
            jwks_url TEXT, jwks TEXT, PRIMARY KEY (container, issuer))
        """,
        """
        CREATE TABLE user_identities (container TEXT NOT NULL, issuer TEXT NOT NULL, subject TEXT NOT NULL,
            user_record_name TEXT NOT NULL, PRIMARY KEY (container, issuer, subject))
        """,
        "CREATE INDEX user_identities_by_user ON user_identities (container, user_record_name)",
    ]

    /// Version six keeps assets: their rows (the bytes are files beside the
    /// database), the upload tickets and receipts that lead to them, and the
    /// secret download URLs are signed with. A zone's id is never reused
    /// (`AUTOINCREMENT`), so the rows name zones without a foreign key: a
    /// deleted zone's assets stay until the collector deletes them.
    private static let versionSix = [
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

    /// Version four is for sharing: records keep their parent and the share
    /// that covers them (with an index to walk a hierarchy), the zone log
    /// keys an entry by owner and zone name (a shared database holds other
    /// users' zones), shares get their tables, and users an email address.
    /// Existing rows keep their values; their new columns start empty.
    private static let versionFour = [
        "ALTER TABLE records ADD COLUMN parent TEXT",
        "ALTER TABLE records ADD COLUMN share_key TEXT",
        "ALTER TABLE records ADD COLUMN former_share_key TEXT",
        "CREATE INDEX records_by_parent ON records (zone_id, parent) WHERE deleted = 0 AND parent IS NOT NULL",
        // SQLite cannot change a primary key: the log is copied into a new table.
        """
        CREATE TABLE zone_log_by_owner (database_id INTEGER NOT NULL REFERENCES databases,
            owner_record_name TEXT NOT NULL, zone_name TEXT NOT NULL, serial INTEGER NOT NULL,
            deleted INTEGER NOT NULL, PRIMARY KEY (database_id, owner_record_name, zone_name))
        """,
        """
        INSERT INTO zone_log_by_owner (database_id, owner_record_name, zone_name, serial, deleted)
            SELECT database_id, '', zone_name, serial, deleted FROM zone_log
        """,
        "DROP TABLE zone_log",
        "ALTER TABLE zone_log_by_owner RENAME TO zone_log",
        "CREATE INDEX zone_log_by_serial ON zone_log (database_id, serial)",
        """
        CREATE TABLE shares (zone_id INTEGER NOT NULL REFERENCES zones ON DELETE CASCADE, record_name TEXT NOT NULL,
            short_guid TEXT NOT NULL UNIQUE, container TEXT NOT NULL, environment TEXT NOT NULL, owner TEXT NOT NULL,
            zone_name TEXT NOT NULL, root_record_name TEXT, public_permission TEXT NOT NULL,
            participants BLOB NOT NULL, PRIMARY KEY (zone_id, record_name))
        """,
        // One row per participant who accepted, to find a user's shares by index.
        """
        CREATE TABLE share_acceptances (zone_id INTEGER NOT NULL, record_name TEXT NOT NULL,
            container TEXT NOT NULL, environment TEXT NOT NULL, user_name TEXT NOT NULL,
            PRIMARY KEY (container, environment, user_name, zone_id, record_name),
            FOREIGN KEY (zone_id, record_name) REFERENCES shares (zone_id, record_name) ON DELETE CASCADE)
        """,
        "CREATE INDEX share_acceptances_by_share ON share_acceptances (zone_id, record_name)",
        "ALTER TABLE users ADD COLUMN email_address TEXT",
        "ALTER TABLE users ADD COLUMN discoverable INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX users_by_record_name ON users (container, record_name)",
        "CREATE INDEX users_by_email ON users (container, email_address) WHERE email_address IS NOT NULL",
    ]

    /// Version three names the user column `user_name`, as PostgreSQL and
    /// the notification channels do, so that one set of statements reads
    /// both. Renaming keeps the rows, the primary keys and the indexes.
    private static let versionThree = [
        "ALTER TABLE quotas RENAME COLUMN user TO user_name",
        "ALTER TABLE subscriptions RENAME COLUMN user TO user_name",
    ]

    /// Notification channels in storage, so that they outlive a server.
    private static let versionTwo = [
        """
        CREATE TABLE notification_channels (token_hash TEXT PRIMARY KEY, container TEXT NOT NULL,
            environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, user_name TEXT NOT NULL,
            start INTEGER NOT NULL, last_used INTEGER NOT NULL)
        """,
        "CREATE INDEX notification_channels_by_use ON notification_channels (last_used)",
    ]

    private static let versionOne = [
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
}

extension SQLiteStorage {
    /// The statement that reads a page of a zone's live records by name,
    /// for tests that ask SQLite how it runs it.
    @_spi(Testing) public static func zonePageStatement(afterName: Bool) -> String {
        SQLiteTransaction.livePageSQL(afterName: afterName)
    }
}
