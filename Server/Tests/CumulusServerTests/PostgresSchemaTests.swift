import Cumulus
import CumulusServer
import Foundation
import PostgresNIO
import Testing

/// The PostgreSQL schema's versions: a database of an older version opens
/// with every row, migrated in place.
@Suite("PostgreSQL schema", .enabled(if: PostgresTestDatabase.isEnabled))
struct PostgresSchemaTests {
    /// Versions one and two as they shipped, kept here verbatim so that the
    /// test does not follow the code.
    static let versionTwo: [PostgresQuery] = [
        "CREATE TABLE cumulus_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
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
        """
        CREATE TABLE notification_channels (token_hash TEXT PRIMARY KEY, container TEXT NOT NULL,
            environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, user_name TEXT NOT NULL,
            start BIGINT NOT NULL, last_used BIGINT NOT NULL)
        """,
        "CREATE INDEX notification_channels_by_use ON notification_channels (last_used)",
        "INSERT INTO cumulus_schema (version) VALUES (1), (2)",
    ]

    @Test("a version-two database opens with its records, zone log and users; it then takes parents, shares and emails")
    func migratesVersionTwo() async throws {
        try await PostgresTestDatabase.with { url in
            let body = try WireFormat.encode(
                Record(
                    recordType: "Note", recordName: "old-note", zoneID: ZoneID(zoneName: "Notes"),
                    fields: ["title": .string("kept")]))
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                for statement in Self.versionTwo + [
                    "INSERT INTO containers VALUES ('iCloud.old', 'hash')",
                    "INSERT INTO users VALUES ('iCloud.old', 'alice', '_alice', 'user-hash')",
                    """
                    INSERT INTO databases (container, environment, scope, owner, incarnation, serial)
                        VALUES ('iCloud.old', 'development', 'private', '_alice', 7, 2)
                    """,
                    "INSERT INTO zones (database_id, name, incarnation, serial) VALUES (1, 'Notes', 3, 2)",
                    "INSERT INTO zone_log VALUES (1, 'Notes', 2, false)",
                    "INSERT INTO records VALUES (1, 'gone', 'Note', 1, true, '_alice', NULL)",
                    "INSERT INTO records VALUES (1, 'old-note', 'Note', 2, false, '_alice', \(ByteBuffer(bytes: body)))",
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

    /// Version four as it shipped (query subscriptions), applied to ``versionThree``.
    static let versionFour: [PostgresQuery] = [
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

    @Test("a version-four database opens with its records; it then keeps assets, tickets, receipts and a secret")
    func migratesVersionFour() async throws {
        try await PostgresTestDatabase.with { url in
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                for statement in Self.versionTwo + Self.versionThree + Self.versionFour + [
                    "INSERT INTO cumulus_schema (version) VALUES (3)",
                    "INSERT INTO cumulus_schema (version) VALUES (4)",
                    """
                    INSERT INTO databases (container, environment, scope, owner, incarnation, serial)
                        VALUES ('iCloud.old', 'development', 'private', '_alice', 7, 2)
                    """,
                    "INSERT INTO zones (database_id, name, incarnation, serial) VALUES (1, 'Notes', 3, 2)",
                    "INSERT INTO records (zone_id, name, type, serial, deleted) VALUES (1, 'gone', 'Note', 1, true)",
                ] {
                    try await connection.query(statement, logger: logger)
                }
            }
            let storage = try await PostgresStorage(url: url, logger: quietLogger)
            do {
                let key = DatabaseKey(
                    container: "iCloud.old", environment: .development, scope: .private, owner: "_alice")
                try await storage.read { transaction in
                    let database = try #require(try await transaction.database(key))
                    let zone = try #require(
                        try await transaction.zones(inDatabase: database.id, named: ["Notes"]).first)
                    let rows = try await transaction.records(named: ["gone"], inZone: zone.id)
                    #expect(rows.map(\.serial) == [1] && rows.first?.record == nil)
                }
                try await AssetStorageTests.roundTripRows(storage)
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }

    /// Reads the rows the version-two database held, then writes what version three adds.
    static func checkMigrated(_ storage: PostgresStorage) async throws {
        let key = DatabaseKey(container: "iCloud.old", environment: .development, scope: .private, owner: "_alice")
        let (database, zone) = try await storage.read { transaction in
            let database = try #require(try await transaction.database(key))
            // Renewed once: the database had recorded no identity (StoreRestores).
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
            #expect(try await transaction.userRecordName(container: "iCloud.old", tokenHash: "user-hash") == "_alice")
            let users = try await transaction.users(withRecordNames: ["_alice"], container: "iCloud.old")
            #expect(users == [StoredUser(recordName: "_alice", emailAddress: nil, isDiscoverable: false)])
            return (database.id, zone)
        }
        try await storage.write { transaction in
            try await transaction.logZoneChanges(
                [
                    ZoneLogEntry(zoneName: "Notes", ownerRecordName: "_bob", serial: 3, deleted: false),
                    ZoneLogEntry(zoneName: "Notes", serial: 4, deleted: false),
                ], inDatabase: database)
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
            #expect(log.map(\.ownerRecordName) == ["_bob", ""] && log.map(\.serial) == [3, 4])
            #expect(try await transaction.children(of: ["old-note"], inZone: zone.id).map(\.name) == ["child"])
            #expect(try await transaction.share(shortGUID: "guid")?.rootRecordName == "old-note")
            let found = try await transaction.users(withEmailAddresses: ["alice@example.com"], container: "iCloud.old")
            #expect(found.map(\.recordName) == ["_alice"])
        }
    }

    /// Version three as it shipped, applied to ``versionTwo``; kept here
    /// verbatim so that the test does not follow the code.
    static let versionThree: [PostgresQuery] = [
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

    @Test("a version-three database opens with its subscriptions as zone subscriptions; it then takes queries")
    func migratesVersionThree() async throws {
        try await PostgresTestDatabase.with { url in
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                for statement in Self.versionTwo + Self.versionThree + [
                    "INSERT INTO cumulus_schema (version) VALUES (3)",
                    """
                    INSERT INTO databases (container, environment, scope, owner, incarnation, serial)
                        VALUES ('iCloud.old', 'development', 'public', '', 7, 2)
                    """,
                    "INSERT INTO zones (database_id, name, incarnation, serial) VALUES (1, '_defaultZone', 3, 2)",
                    "INSERT INTO subscriptions VALUES (1, '_alice', 'old-zone', '_defaultZone')",
                ] {
                    try await connection.query(statement, logger: logger)
                }
            }
            let storage = try await PostgresStorage(url: url, logger: quietLogger)
            do {
                try await Self.checkQuerySubscriptions(storage)
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

    /// Reads the version-three database's zone subscription, then writes a
    /// query subscription and a notification, as version four keeps them.
    static func checkQuerySubscriptions(_ storage: PostgresStorage) async throws {
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
            let later = try await transaction.queryNotifications(inDatabase: 1, user: "_bob", after: 3, through: 9)
            #expect(later.isEmpty)
        }
        try await storage.write { transaction in
            try await transaction.deleteQueryNotifications(loggedBefore: 1_001)
        }
        try await storage.read { transaction in
            let left = try await transaction.queryNotifications(inDatabase: 1, user: "_bob", after: 0, through: 9)
            #expect(left.isEmpty)
        }
    }
}
