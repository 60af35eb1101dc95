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
                // Renewed once: the file had recorded no identity (StoreRestores).
                #expect(database.incarnation != 7 && database.serial == 1)
                let zones = try await transaction.zones(inDatabase: database.id, named: nil)
                #expect(zones.map(\.name) == ["Notes"] && zones.first?.incarnation != 3)
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
            #expect(version == 13)
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

    /// Versions two and three as they shipped, applied to ``versionOne``.
    static let versionsTwoAndThree = [
        """
        CREATE TABLE notification_channels (token_hash TEXT PRIMARY KEY, container TEXT NOT NULL,
            environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, user_name TEXT NOT NULL,
            start INTEGER NOT NULL, last_used INTEGER NOT NULL)
        """,
        "CREATE INDEX notification_channels_by_use ON notification_channels (last_used)",
        "ALTER TABLE quotas RENAME COLUMN user TO user_name",
        "ALTER TABLE subscriptions RENAME COLUMN user TO user_name",
    ]

    @Test("a version-three file opens with its records, zone log and users; it then takes parents, shares and emails")
    func migratesVersionThree() async throws {
        try await Self.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            let body = try WireFormat.encode(
                Record(
                    recordType: "Note", recordName: "old-note", zoneID: ZoneID(zoneName: "Notes"),
                    fields: ["title": .string("kept")]))
            do {
                for statement in Self.versionOne + Self.versionsTwoAndThree {
                    _ = try await connection.query(statement)
                }
                for statement in [
                    "INSERT INTO containers VALUES ('iCloud.old', 'hash')",
                    "INSERT INTO users VALUES ('iCloud.old', 'alice', '_alice', 'user-hash')",
                    "INSERT INTO databases VALUES (1, 'iCloud.old', 'development', 'private', '_alice', 7, 2)",
                    "INSERT INTO zones VALUES (1, 1, 'Notes', 3, 2)",
                    "INSERT INTO zone_log VALUES (1, 'Notes', 2, 0)",
                    "INSERT INTO records VALUES (1, 'gone', 'Note', 1, 1, '_alice', NULL)",
                    "PRAGMA user_version = 3",
                ] {
                    _ = try await connection.query(statement)
                }
                _ = try await connection.query(
                    "INSERT INTO records VALUES (1, 'old-note', 'Note', 2, 0, '_alice', ?)",
                    [.blob(ByteBuffer(bytes: body))])
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()

            let storage = try await SQLiteStorage(path: path, logger: quietLogger)
            let key = DatabaseKey(container: "iCloud.old", environment: .development, scope: .private, owner: "_alice")
            let (database, zone) = try await storage.read { transaction in
                let database = try #require(try await transaction.database(key))
                // Renewed once: the file had recorded no identity (StoreRestores).
                #expect(database.incarnation != 7 && database.serial == 2)
                let zone = try #require(try await transaction.zones(inDatabase: database.id, named: ["Notes"]).first)
                let rows = try await transaction.records(named: ["old-note", "gone"], inZone: zone.id)
                let note = try #require(rows.first { $0.name == "old-note" })
                #expect(note.record?.fields["title"] == .string("kept") && note.serial == 2)
                #expect(note.parent == nil && note.shareKey == nil && note.formerShareKey == nil)
                #expect(rows.first { $0.name == "gone" }.map { $0.record == nil && $0.serial == 1 } == true)
                let changes = try await transaction.changes(inZone: zone.id, after: 0, recordTypes: nil, limit: 10)
                #expect(changes.map(\.name) == ["gone", "old-note"])
                let log = try await transaction.zoneLog(inDatabase: database.id, after: 0, limit: 10)
                #expect(log == [ZoneLogEntry(zoneName: "Notes", ownerRecordName: "", serial: 2, deleted: false)])
                #expect(
                    try await transaction.userRecordName(container: "iCloud.old", tokenHash: "user-hash") == "_alice")
                let users = try await transaction.users(withRecordNames: ["_alice"], container: "iCloud.old")
                #expect(users == [StoredUser(recordName: "_alice", emailAddress: nil, isDiscoverable: false)])
                return (database.id, zone)
            }
            // The upgraded file takes what version four adds.
            try await storage.write { transaction in
                try await transaction.logZoneChanges(
                    [ZoneLogEntry(zoneName: "Notes", ownerRecordName: "_bob", serial: 3, deleted: false)],
                    inDatabase: database)
                #expect(
                    try await transaction.setUserEmail(
                        "alice@example.com", discoverable: true, recordName: "_alice", container: "iCloud.old"))
                var child = Record(recordType: "Note", recordName: "child", zoneID: ZoneID(zoneName: "Notes"))
                child.parent = "old-note"
                try await transaction.saveRecords(
                    [
                        StoredRecord(
                            name: "child", recordType: "Note", serial: 3, creator: "_alice", record: child,
                            deleteSelfTargets: [], parent: "old-note", shareKey: "guid")
                    ], inZone: zone.id)
                try await transaction.saveShare(
                    StoredShare(
                        shortGUID: "guid", container: "iCloud.old", environment: .development, owner: "_alice",
                        zone: zone.id, zoneName: "Notes", recordName: "share", rootRecordName: "old-note",
                        publicPermission: .readOnly, participants: []))
            }
            try await storage.read { transaction in
                let log = try await transaction.zoneLog(inDatabase: database, after: 0, limit: 10)
                #expect(log.map(\.ownerRecordName) == ["", "_bob"])
                #expect(try await transaction.children(of: ["old-note"], inZone: zone.id).map(\.name) == ["child"])
                #expect(try await transaction.share(shortGUID: "guid")?.rootRecordName == "old-note")
                let found = try await transaction.users(
                    withEmailAddresses: ["alice@example.com"], container: "iCloud.old")
                #expect(found.map(\.recordName) == ["_alice"])
            }
            try await storage.close()
        }
    }

    /// Version four as it shipped, applied to ``versionsTwoAndThree``;
    /// kept here verbatim so that the test does not follow the code.
    static let versionFour = [
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

    @Test("a version-four file opens with its subscriptions as zone subscriptions; it then takes query subscriptions")
    func migratesVersionFour() async throws {
        try await Self.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                for statement in Self.versionOne + Self.versionsTwoAndThree + Self.versionFour {
                    _ = try await connection.query(statement)
                }
                for statement in [
                    "INSERT INTO databases VALUES (1, 'iCloud.old', 'development', 'public', '', 7, 2)",
                    "INSERT INTO zones VALUES (1, 1, '_defaultZone', 3, 2)",
                    "INSERT INTO subscriptions VALUES (1, '_alice', 'old-zone', '_defaultZone')",
                    "PRAGMA user_version = 4",
                ] {
                    _ = try await connection.query(statement)
                }
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()

            let storage = try await SQLiteStorage(path: path, logger: quietLogger)
            let old = StoredSubscription(
                user: "_alice", subscription: Subscription(subscriptionID: "old-zone", zoneID: .defaultZone))
            let query = StoredSubscription(
                user: "_bob",
                subscription: Subscription(
                    subscriptionID: "posts",
                    query: RecordQuery(recordType: "Post", filters: [QueryFilter("n", .greaterThan, .int64(2))]),
                    firesOn: [.created, .deleted]))
            let fired = StoredQueryNotification(
                user: "_bob", serial: 3, logged: 1_000,
                notification: QueryNotification(
                    subscriptionID: "posts", recordName: "p1", zoneID: .defaultZone, reason: .created))
            try await storage.write { transaction in
                let before = try await transaction.subscriptions(inDatabase: 1, user: nil)
                #expect(before == [old])
                try await transaction.saveSubscription(query, inDatabase: 1)
                try await transaction.logQueryNotifications([fired], inDatabase: 1)
            }
            try await storage.read { transaction in
                let subscriptions = try await transaction.subscriptions(inDatabase: 1, user: nil)
                #expect(subscriptions == [old, query])
                let fresh = try await transaction.queryNotifications(inDatabase: 1, user: "_bob", after: 2, through: 3)
                #expect(fresh == [fired])
            }
            try await storage.close()
        }
    }

    /// Version five as it shipped (query subscriptions), applied to ``versionFour``.
    static let versionFive = [
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

    @Test("a version-five file opens with its records; it then keeps assets, tickets, receipts and a secret")
    func migratesVersionFive() async throws {
        try await Self.withFile { path in
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            do {
                for statement in Self.versionOne + Self.versionsTwoAndThree + Self.versionFour + Self.versionFive + [
                    "INSERT INTO databases VALUES (1, 'iCloud.old', 'development', 'private', '_alice', 7, 2)",
                    "INSERT INTO zones VALUES (1, 1, 'Notes', 3, 2)",
                    "INSERT INTO records VALUES (1, 'gone', 'Note', 1, 1, '_alice', NULL, NULL, NULL, NULL)",
                    "PRAGMA user_version = 5",
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
                let database = try #require(try await transaction.database(key))
                let zone = try #require(try await transaction.zones(inDatabase: database.id, named: ["Notes"]).first)
                let rows = try await transaction.records(named: ["gone"], inZone: zone.id)
                #expect(rows.map(\.serial) == [1] && rows.first?.record == nil)
            }
            try await AssetStorageTests.roundTripRows(storage)
            try await storage.close()
            let check = try await SQLiteConnection.open(storage: .file(path: path))
            let version = try await check.query("PRAGMA user_version").first?.column("user_version")?.integer
            try await check.close()
            #expect(version == 13)
        }
    }

    @Test("a fresh file is created at version thirteen with user_name columns; a file of a later version is refused")
    func freshFile() async throws {
        try await Self.withFile { path in
            let storage = try await SQLiteStorage(path: path, logger: quietLogger)
            try await storage.write { transaction in
                try await transaction.setQuotaExceeded(true, user: "bob", container: "c", environment: .production)
            }
            try await storage.close()
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            let version = try await connection.query("PRAGMA user_version").first?.column("user_version")?.integer
            #expect(version == 13)
            let columns = try await connection.query("PRAGMA table_info(quotas)").compactMap {
                $0.column("name")?.string
            }
            #expect(columns.contains("user_name"), "\(columns)")
            _ = try await connection.query("PRAGMA user_version = 14")
            try await connection.close()
            do {
                let storage = try await SQLiteStorage(path: path, logger: quietLogger)
                try await storage.close()
                Issue.record("a file of a later version was opened")
            } catch let error as CloudError {
                #expect(error.code == .internalError && error.reason.contains("13"))
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
