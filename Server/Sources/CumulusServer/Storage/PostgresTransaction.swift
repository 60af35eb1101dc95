import CloudCodable
import CloudProtocol
import Foundation
import Logging
import PostgresNIO

/// The statements of ``PostgresStorage``, run on one connection inside the
/// transaction the storage began. Every value is a bound parameter; methods
/// that take several names send them as one array. Rows are read through
/// ``PostgresColumns``: an impossible row is an error, never a default.
struct PostgresTransaction: StorageTransaction {
    let connection: PostgresTransactionConnection
    /// Whether reads of database and zone rows lock them (in a write), so
    /// that writers to one database run one after the other.
    let locking: Bool

    private var logger: Logger { connection.logger }

    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await connection.run(query).rows
    }

    private var lockClause: String { locking ? " FOR NO KEY UPDATE" : "" }

    // MARK: Databases and zones

    func database(_ key: DatabaseKey) async throws -> StoredDatabase? {
        let rows = try await query(
            """
            SELECT id, incarnation, serial FROM databases WHERE container = \(key.container)
                AND environment = \(key.environment.rawValue) AND scope = \(key.scope.rawValue)
                AND owner = \(key.owner)\(unescaped: lockClause)
            """)
        return try rows.first.map { row in
            try read(row, table: "databases") { columns in
                StoredDatabase(
                    id: try columns.value("id"), incarnation: try columns.value("incarnation"),
                    serial: try columns.value("serial"))
            }
        }
    }

    func createDatabase(_ key: DatabaseKey, incarnation: Int64) async throws -> StoredDatabase {
        // Two servers may create it at once: the second waits for the
        // first's commit, inserts nothing, and reads (and locks) its row.
        try await query(
            """
            INSERT INTO databases (container, environment, scope, owner, incarnation, serial)
                VALUES (\(key.container), \(key.environment.rawValue), \(key.scope.rawValue), \(key.owner),
                \(incarnation), 0) ON CONFLICT (container, environment, scope, owner) DO NOTHING
            """)
        guard let database = try await database(key) else {
            throw CloudError(.internalError, reason: "the database row vanished")
        }
        return database
    }

    func updateDatabase(_ database: StoredDatabase) async throws {
        try await query(
            "UPDATE databases SET incarnation = \(database.incarnation), serial = \(database.serial) WHERE id = \(database.id)"
        )
    }

    func zones(inDatabase database: Int64, named names: [String]?) async throws -> [StoredZone] {
        let rows: [PostgresRow]
        if let names {
            guard !names.isEmpty else { return [] }
            // Ordered by id so that two writers lock zones in one order.
            rows = try await query(
                """
                SELECT id, name, incarnation, serial FROM zones WHERE database_id = \(database)
                    AND name = ANY(\(names)) ORDER BY id\(unescaped: lockClause)
                """)
        } else {
            rows = try await query(
                """
                SELECT id, name, incarnation, serial FROM zones WHERE database_id = \(database)
                    ORDER BY id\(unescaped: lockClause)
                """)
        }
        return try rows.map { row in
            try read(row, table: "zones") { columns in
                StoredZone(
                    id: try columns.value("id"), name: try columns.value("name"),
                    incarnation: try columns.value("incarnation"), serial: try columns.value("serial"))
            }
        }
    }

    func createZone(named name: String, inDatabase database: Int64, incarnation: Int64) async throws -> StoredZone {
        try await query(
            """
            INSERT INTO zones (database_id, name, incarnation, serial) VALUES (\(database), \(name), \(incarnation), 0)
                ON CONFLICT (database_id, name) DO NOTHING
            """)
        guard let zone = try await zones(inDatabase: database, named: [name]).first else {
            throw CloudError(.internalError, reason: "the zone row vanished")
        }
        return zone
    }

    func updateZone(_ zone: StoredZone) async throws {
        try await query(
            "UPDATE zones SET incarnation = \(zone.incarnation), serial = \(zone.serial) WHERE id = \(zone.id)")
    }

    func deleteZone(_ zone: StoredZone) async throws {
        // Records, references and shares go with the zone (ON DELETE CASCADE).
        try await query("DELETE FROM zones WHERE id = \(zone.id)")
    }

    func logZoneChanges(_ entries: [ZoneLogEntry], inDatabase database: Int64) async throws {
        // One statement may not write a row twice: the last entry of a zone wins.
        // Keyed by bytes: a `String` key would merge NFC and NFD spellings of two zones.
        var latest: [[ExactName]: ZoneLogEntry] = [:]
        for entry in entries { latest[[ExactName(entry.ownerRecordName), ExactName(entry.zoneName)]] = entry }
        guard !latest.isEmpty else { return }
        try await query(Self.zoneLogUpsert(latest.values.sorted { $0.serial < $1.serial }, database: database))
    }

    func zoneLog(inDatabase database: Int64, after serial: Int64, limit: Int) async throws -> [ZoneLogEntry] {
        let rows = try await query(
            """
            SELECT owner_record_name, zone_name, serial, deleted, origin, origin_since FROM zone_log
                WHERE database_id = \(database) AND serial > \(serial) ORDER BY serial LIMIT \(Int64(limit))
            """)
        return try rows.map { row in
            try read(row, table: "zone_log") { columns in
                ZoneLogEntry(
                    zoneName: try columns.value("zone_name"), ownerRecordName: try columns.value("owner_record_name"),
                    serial: try columns.value("serial"), deleted: try columns.value("deleted"),
                    origin: try columns.optional("origin"), originSince: try columns.value("origin_since"))
            }
        }
    }

    // MARK: Records

    func records(named names: [String], inZone zone: Int64) async throws -> [StoredRecord] {
        guard !names.isEmpty else { return [] }
        return try await records(
            query(
                """
                SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND name = ANY(\(names))
                """))
    }

    func saveRecords(_ records: [StoredRecord], inZone zone: Int64) async throws {
        guard !records.isEmpty else { return }
        var bodies: [ByteBuffer] = []
        bodies.reserveCapacity(records.count)
        for record in records {
            bodies.append(try record.record.map { ByteBuffer(bytes: try WireFormat.encode($0)) } ?? ByteBuffer())
        }
        // Optional text goes as a text array and an array of whether each is set.
        try await query(
            """
            INSERT INTO records (zone_id, name, type, serial, deleted, creator, body, parent, share_key,
                    former_share_key)
                SELECT \(zone), row.name, row.type, row.serial, row.deleted,
                    CASE WHEN row.has_creator THEN row.creator END, CASE WHEN row.deleted THEN NULL ELSE row.body END,
                    CASE WHEN row.has_parent THEN row.parent END, CASE WHEN row.has_share THEN row.share_key END,
                    CASE WHEN row.has_former THEN row.former_share_key END
                FROM unnest(\(records.map(\.name))::text[], \(records.map(\.recordType))::text[],
                    \(records.map(\.serial))::bigint[], \(records.map { $0.record == nil })::boolean[],
                    \(records.map { $0.creator != nil })::boolean[], \(records.map { $0.creator ?? "" })::text[],
                    \(bodies)::bytea[], \(records.map { $0.parent != nil })::boolean[],
                    \(records.map { $0.parent ?? "" })::text[], \(records.map { $0.shareKey != nil })::boolean[],
                    \(records.map { $0.shareKey ?? "" })::text[], \(records.map { $0.formerShareKey != nil })::boolean[],
                    \(records.map { $0.formerShareKey ?? "" })::text[])
                    AS row (name, type, serial, deleted, has_creator, creator, body, has_parent, parent, has_share,
                        share_key, has_former, former_share_key)
                ON CONFLICT (zone_id, name) DO UPDATE SET type = excluded.type, serial = excluded.serial,
                    deleted = excluded.deleted, creator = excluded.creator, body = excluded.body,
                    parent = excluded.parent, share_key = excluded.share_key,
                    former_share_key = excluded.former_share_key
            """)
        try await query(
            "DELETE FROM delete_self_references WHERE zone_id = \(zone) AND source = ANY(\(records.map(\.name)))")
        let references = records.flatMap { record in record.deleteSelfTargets.map { (record.name, $0) } }
        guard !references.isEmpty else { return }
        try await query(
            """
            INSERT INTO delete_self_references (zone_id, source, target)
                SELECT \(zone), reference.source, reference.target
                FROM unnest(\(references.map(\.0))::text[], \(references.map(\.1))::text[])
                    AS reference (source, target)
                ON CONFLICT DO NOTHING
            """)
    }

    func deleteSelfReferrers(of names: [String], inZone zone: Int64) async throws -> [String] {
        guard !names.isEmpty else { return [] }
        let rows = try await query(
            """
            SELECT DISTINCT source FROM delete_self_references WHERE zone_id = \(zone) AND target = ANY(\(names))
            """)
        return try rows.map { row in
            try read(row, table: "delete_self_references") { try $0.value("source", as: String.self) }
        }
    }

    func changes(inZone zone: Int64, after serial: Int64, recordTypes: [String]?, limit: Int) async throws
        -> [StoredChange]
    {
        let rows: [PostgresRow]
        if let recordTypes {
            guard !recordTypes.isEmpty else { return [] }
            rows = try await query(
                """
                SELECT \(unescaped: Self.changeColumns) FROM records WHERE zone_id = \(zone)
                    AND serial > \(serial) AND type = ANY(\(recordTypes)) ORDER BY serial LIMIT \(Int64(limit))
                """)
        } else {
            rows = try await query(
                """
                SELECT \(unescaped: Self.changeColumns) FROM records WHERE zone_id = \(zone)
                    AND serial > \(serial) ORDER BY serial LIMIT \(Int64(limit))
                """)
        }
        return try rows.map { row in
            try read(row, table: "records") { columns in
                StoredChange(
                    name: try columns.value("name"), serial: try columns.value("serial"),
                    contents: try ImpossibleRow.contents(
                        deleted: try columns.value("deleted"), body: try columns.optional("body", as: ByteBuffer.self)),
                    shareKey: try columns.optional("share_key"),
                    formerShareKey: try columns.optional("former_share_key"))
            }
        }
    }

    func liveRecords(ofType recordType: String, inZone zone: Int64) async throws -> [StoredRecord] {
        try await records(
            query(
                """
                SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND type = \(recordType)
                    AND NOT deleted
                """))
    }

    func liveRecords(inZone zone: Int64, after name: String?, limit: Int) async throws -> [StoredRecord] {
        // Byte order, as SQLite sorts. (Any text is at least '': the first page asks `>= ''`.)
        guard let name else {
            return try await records(
                query(
                    """
                    SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND NOT deleted
                        ORDER BY name COLLATE "C" LIMIT \(max(0, limit))
                    """))
        }
        return try await records(
            query(
                """
                SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND NOT deleted
                    AND name COLLATE "C" > \(name) ORDER BY name COLLATE "C" LIMIT \(max(0, limit))
                """))
    }

    func children(of names: [String], inZone zone: Int64) async throws -> [StoredRecord] {
        guard !names.isEmpty else { return [] }
        // Byte order, as SQLite sorts.
        return try await records(
            query(
                """
                SELECT \(unescaped: Self.recordColumns) FROM records WHERE zone_id = \(zone) AND NOT deleted
                    AND parent = ANY(\(names)) ORDER BY name COLLATE "C"
                """))
    }

    // MARK: Shares

    func shares(inZone zone: Int64) async throws -> [StoredShare] {
        try await query(
            """
            SELECT \(unescaped: Self.shareColumns) FROM shares WHERE zone_id = \(zone) ORDER BY record_name COLLATE "C"
            """
        ).map(share)
    }

    func share(shortGUID: String) async throws -> StoredShare? {
        try await query("SELECT \(unescaped: Self.shareColumns) FROM shares WHERE short_guid = \(shortGUID)")
            .first.map(share)
    }

    func shares(acceptedBy user: String, container: String, environment: CloudEnvironment) async throws
        -> [StoredShare]
    {
        try await query(
            """
            SELECT \(unescaped: Self.shareColumns) FROM shares WHERE (zone_id, record_name) IN (SELECT zone_id,
                record_name FROM share_acceptances WHERE container = \(container)
                AND environment = \(environment.rawValue) AND user_name = \(user)) ORDER BY short_guid COLLATE "C"
            """
        ).map(share)
    }

    func saveShare(_ share: StoredShare) async throws {
        // Deleted first, not updated: the old row's acceptances go with it.
        try await deleteShare(recordName: share.recordName, inZone: share.zone)
        let participants = ByteBuffer(bytes: try StoredParticipants.encode(share.participants))
        try await query(
            """
            INSERT INTO shares (zone_id, record_name, short_guid, container, environment, owner, zone_name,
                root_record_name, public_permission, participants)
                VALUES (\(share.zone), \(share.recordName), \(share.shortGUID), \(share.container),
                \(share.environment.rawValue), \(share.owner), \(share.zoneName), \(share.rootRecordName),
                \(share.publicPermission.rawValue), \(participants))
            """)
        let accepted = StoredParticipants.acceptedUsers(share.participants)
        guard !accepted.isEmpty else { return }
        try await query(
            """
            INSERT INTO share_acceptances (zone_id, record_name, container, environment, user_name)
                SELECT \(share.zone), \(share.recordName), \(share.container), \(share.environment.rawValue), user_name
                FROM unnest(\(accepted)::text[]) AS accepted (user_name)
            """)
    }

    func deleteShare(recordName: String, inZone zone: Int64) async throws {
        try await query("DELETE FROM share_acceptances WHERE zone_id = \(zone) AND record_name = \(recordName)")
        try await query("DELETE FROM shares WHERE zone_id = \(zone) AND record_name = \(recordName)")
    }

    // MARK: Subscriptions

    func subscriptions(inDatabase database: Int64, user: String?) async throws -> [StoredSubscription] {
        // Byte order, as SQLite sorts.
        let rows: [PostgresRow]
        if let user {
            rows = try await query(
                """
                SELECT user_name, id, zone_name, query, fires_on FROM subscriptions WHERE database_id = \(database)
                    AND user_name = \(user) ORDER BY user_name COLLATE "C", id COLLATE "C"
                """)
        } else {
            rows = try await query(
                """
                SELECT user_name, id, zone_name, query, fires_on FROM subscriptions WHERE database_id = \(database)
                    ORDER BY user_name COLLATE "C", id COLLATE "C"
                """)
        }
        return try rows.map { row in
            try read(row, table: "subscriptions") { columns in
                try StoredSubscription(
                    user: try columns.value("user_name"), subscriptionID: try columns.value("id"),
                    zoneName: try columns.value("zone_name"), query: try columns.optional("query"),
                    firesOn: try columns.optional("fires_on"))
            }
        }
    }

    func saveSubscription(_ subscription: StoredSubscription, inDatabase database: Int64) async throws {
        let columns = try subscription.queryColumns()
        let query = columns?.query
        let firesOn = columns?.firesOn
        try await self.query(
            """
            INSERT INTO subscriptions (database_id, user_name, id, zone_name, query, fires_on)
                VALUES (\(database), \(subscription.user), \(subscription.subscription.subscriptionID),
                \(subscription.subscription.zoneID.zoneName), \(query), \(firesOn))
                ON CONFLICT (database_id, user_name, id) DO UPDATE SET zone_name = excluded.zone_name,
                query = excluded.query, fires_on = excluded.fires_on
            """)
    }

    func deleteSubscription(_ subscriptionID: String, user: String, inDatabase database: Int64) async throws -> Bool {
        try await !query(
            """
            DELETE FROM subscriptions WHERE database_id = \(database) AND user_name = \(user)
                AND id = \(subscriptionID) RETURNING 1
            """
        ).isEmpty
    }

    // MARK: Query notifications

    func logQueryNotifications(_ notifications: [StoredQueryNotification], inDatabase database: Int64) async throws {
        for stored in notifications {
            let notification = stored.notification
            try await query(
                """
                INSERT INTO query_notifications (database_id, serial, user_name, subscription_id, zone_name,
                    record_name, reason, logged) VALUES (\(database), \(stored.serial), \(stored.user),
                    \(notification.subscriptionID), \(notification.zoneID.zoneName), \(notification.recordName),
                    \(notification.reason.rawValue), \(stored.logged))
                """)
        }
    }

    func queryNotifications(inDatabase database: Int64, user: String, after serial: Int64, through last: Int64)
        async throws -> [StoredQueryNotification]
    {
        let rows = try await query(
            """
            SELECT serial, logged, user_name, subscription_id, zone_name, record_name, reason
                FROM query_notifications WHERE database_id = \(database) AND user_name = \(user)
                AND serial > \(serial) AND serial <= \(last) ORDER BY serial, id
            """)
        return try rows.map { row in
            try read(row, table: "query_notifications") { columns in
                guard let reason = QueryNotification.Reason(rawValue: try columns.value("reason")) else {
                    throw columns.impossible("reason", "is not created, updated or deleted")
                }
                return StoredQueryNotification(
                    user: try columns.value("user_name"), serial: try columns.value("serial"),
                    logged: try columns.value("logged"),
                    notification: QueryNotification(
                        subscriptionID: try columns.value("subscription_id"),
                        recordName: try columns.value("record_name"),
                        zoneID: ZoneID(zoneName: try columns.value("zone_name")), reason: reason))
            }
        }
    }

    func deleteQueryNotifications(loggedBefore logged: Int64) async throws {
        try await query("DELETE FROM query_notifications WHERE logged < \(logged)")
    }

    // MARK: Accounts

    func createContainer(named name: String, tokenHash: String) async throws -> Bool {
        try await !query(
            """
            INSERT INTO containers (name, token_hash) VALUES (\(name), \(tokenHash))
                ON CONFLICT DO NOTHING RETURNING 1
            """
        ).isEmpty
    }

    func containerTokenHash(named name: String) async throws -> String? {
        try await firstString(
            "token_hash", table: "containers", query("SELECT token_hash FROM containers WHERE name = \(name)"))
    }

    func setUserEmail(_ emailAddress: String?, discoverable: Bool, recordName: String, container: String)
        async throws -> Bool
    {
        try await !query(
            """
            UPDATE users SET email_address = \(emailAddress), discoverable = \(discoverable)
                WHERE container = \(container) AND record_name = \(recordName) RETURNING 1
            """
        ).isEmpty
    }

    func setUserName(_ name: UserNameComponents?, recordName: String, container: String) async throws -> Bool {
        try await !query(
            """
            UPDATE users SET given_name = \(name?.givenName), family_name = \(name?.familyName)
                WHERE container = \(container) AND record_name = \(recordName) RETURNING 1
            """
        ).isEmpty
    }

    func users(withEmailAddresses addresses: [String], container: String) async throws -> [StoredUser] {
        guard !addresses.isEmpty else { return [] }
        return try await users(
            query(
                """
                SELECT record_name, email_address, discoverable, given_name, family_name FROM users
                    WHERE container = \(container)
                    AND email_address = ANY(\(addresses)) ORDER BY record_name COLLATE "C"
                """))
    }

    func users(withRecordNames names: [String], container: String) async throws -> [StoredUser] {
        guard !names.isEmpty else { return [] }
        return try await users(
            query(
                """
                SELECT record_name, email_address, discoverable, given_name, family_name FROM users
                    WHERE container = \(container)
                    AND record_name = ANY(\(names)) ORDER BY record_name COLLATE "C"
                """))
    }

    func createServerKey(id: String, publicKeyPEM: String, container: String) async throws {
        try await query(
            "INSERT INTO server_keys (container, key_id, pem) VALUES (\(container), \(id), \(publicKeyPEM))")
    }

    func serverKey(id: String, container: String) async throws -> String? {
        try await firstString(
            "pem", table: "server_keys",
            query("SELECT pem FROM server_keys WHERE container = \(container) AND key_id = \(id)"))
    }

    func isQuotaExceeded(user: String, container: String, environment: CloudEnvironment) async throws -> Bool {
        try await !query(
            """
            SELECT 1 FROM quotas WHERE container = \(container) AND environment = \(environment.rawValue)
                AND user_name = \(user)
            """
        ).isEmpty
    }

    func setQuotaExceeded(_ exceeded: Bool, user: String, container: String, environment: CloudEnvironment)
        async throws
    {
        if exceeded {
            try await query(
                """
                INSERT INTO quotas (container, environment, user_name)
                    VALUES (\(container), \(environment.rawValue), \(user)) ON CONFLICT DO NOTHING
                """)
        } else {
            try await query(
                """
                DELETE FROM quotas WHERE container = \(container) AND environment = \(environment.rawValue)
                    AND user_name = \(user)
                """)
        }
    }

    // MARK: Notification channels

    func createChannel(_ channel: StoredChannel) async throws {
        try await query(
            """
            INSERT INTO notification_channels (token_hash, container, environment, scope, owner, user_name, start,
                last_used, credential) VALUES (\(channel.tokenHash), \(channel.key.container),
                \(channel.key.environment.rawValue), \(channel.key.scope.rawValue), \(channel.key.owner), \(channel.user),
                \(channel.start), \(channel.lastUsed), \(channel.credential))
            """)
    }

    func channel(tokenHash: String) async throws -> StoredChannel? {
        try await channels(
            """
            SELECT token_hash, container, environment, scope, owner, user_name, start, last_used, credential
                FROM notification_channels WHERE token_hash = \(tokenHash)
            """
        ).first
    }

    /// The channels a query of `notification_channels` answers.
    func channels(_ statement: PostgresQuery) async throws -> [StoredChannel] {
        try await query(statement).map { row in
            try read(row, table: "notification_channels") { columns in
                guard let environment = CloudEnvironment(rawValue: try columns.value("environment")) else {
                    throw columns.impossible("environment", "is not a known environment")
                }
                guard let scope = DatabaseScope(rawValue: try columns.value("scope")) else {
                    throw columns.impossible("scope", "is not a known scope")
                }
                return StoredChannel(
                    tokenHash: try columns.value("token_hash"),
                    key: DatabaseKey(
                        container: try columns.value("container"), environment: environment, scope: scope,
                        owner: try columns.value("owner")),
                    user: try columns.value("user_name"), start: try columns.value("start"),
                    lastUsed: try columns.value("last_used"), credential: try columns.optional("credential"))
            }
        }
    }

    func touchChannel(tokenHash: String, lastUsed: Int64) async throws {
        try await query("UPDATE notification_channels SET last_used = \(lastUsed) WHERE token_hash = \(tokenHash)")
    }

    func deleteChannels(unusedSince lastUsed: Int64) async throws {
        try await query("DELETE FROM notification_channels WHERE last_used < \(lastUsed)")
    }

    func deleteChannels(of key: DatabaseKey, user: String, keepingNewest count: Int) async throws {
        try await query(
            """
            DELETE FROM notification_channels WHERE token_hash IN (SELECT token_hash FROM notification_channels
                WHERE container = \(key.container) AND environment = \(key.environment.rawValue)
                AND scope = \(key.scope.rawValue) AND owner = \(key.owner) AND user_name = \(user)
                ORDER BY last_used DESC, token_hash DESC OFFSET \(Int64(max(0, count))))
            """)
    }

    // MARK: Schema

    func fieldTypes(container: String, environment: CloudEnvironment) async throws -> [StoredFieldType] {
        let rows = try await query(
            """
            SELECT record_type, field, type FROM field_types WHERE container = \(container)
                AND environment = \(environment.rawValue)
            """)
        return try rows.map { row in
            try read(row, table: "field_types") { columns in
                guard let type = FieldType(rawValue: try columns.value("type")) else {
                    throw columns.impossible("type", "is not a known field type")
                }
                return StoredFieldType(
                    recordType: try columns.value("record_type"), fieldName: try columns.value("field"), type: type)
            }
        }
    }

    func addFieldTypes(_ types: [StoredFieldType], container: String, environment: CloudEnvironment) async throws {
        // One statement may not write a row twice: the first type of a field wins.
        var seen = Set<[ExactName]>()
        let kept = types.filter { seen.insert([ExactName($0.recordType), ExactName($0.fieldName)]).inserted }
        guard !kept.isEmpty else { return }
        try await query(
            """
            INSERT INTO field_types (container, environment, record_type, field, type)
                SELECT \(container), \(environment.rawValue), type.record_type, type.field, type.type
                FROM unnest(\(kept.map(\.recordType))::text[], \(kept.map(\.fieldName))::text[],
                    \(kept.map(\.type.rawValue))::text[]) AS type (record_type, field, type)
                ON CONFLICT DO NOTHING
            """)
    }

    // MARK: Rows

    /// The select list of a record row.
    private static let recordColumns =
        "name, type, serial, deleted, creator, body, parent, share_key, former_share_key"
    private static let changeColumns = "name, serial, deleted, body, share_key, former_share_key"
    private static let shareColumns = """
        zone_id, record_name, short_guid, container, environment, owner, zone_name, root_record_name,
            public_permission, participants
        """

    /// Reads one row of `table`; an impossible one answers `INTERNAL_ERROR`, logged.
    func read<T>(_ row: PostgresRow, table: String, _ body: (PostgresColumns) throws -> T) throws -> T {
        do {
            return try body(PostgresColumns(row, table: table))
        } catch let error as ImpossibleRow {
            throw error.cloudError(logging: logger)
        }
    }

    /// The text of `column` in the first row, if any.
    private func firstString(_ column: String, table: String, _ rows: [PostgresRow]) throws -> String? {
        try rows.first.map { row in try read(row, table: table) { try $0.value(column, as: String.self) } }
    }

    /// Records and tombstones: a live row has a body, a deleted one none.
    private func records(_ rows: [PostgresRow]) throws -> [StoredRecord] {
        try rows.map { row in
            try read(row, table: "records") { columns in
                let record = try ImpossibleRow.record(
                    deleted: try columns.value("deleted"), body: try columns.optional("body", as: ByteBuffer.self))
                return StoredRecord(
                    name: try columns.value("name"), recordType: try columns.value("type"),
                    serial: try columns.value("serial"), creator: try columns.optional("creator"), record: record,
                    deleteSelfTargets: [], parent: try columns.optional("parent"),
                    shareKey: try columns.optional("share_key"),
                    formerShareKey: try columns.optional("former_share_key"))
            }
        }
    }

    private func share(_ row: PostgresRow) throws -> StoredShare {
        try read(row, table: "shares") { columns in
            guard let environment = CloudEnvironment(rawValue: try columns.value("environment")) else {
                throw columns.impossible("environment", "is not a known environment")
            }
            guard let permission = SharePermission(rawValue: try columns.value("public_permission")) else {
                throw columns.impossible("public_permission", "is not a known permission")
            }
            let participants = try columns.value("participants", as: ByteBuffer.self)
            return StoredShare(
                shortGUID: try columns.value("short_guid"), container: try columns.value("container"),
                environment: environment, owner: try columns.value("owner"), zone: try columns.value("zone_id"),
                zoneName: try columns.value("zone_name"), recordName: try columns.value("record_name"),
                rootRecordName: try columns.optional("root_record_name"), publicPermission: permission,
                participants: try StoredParticipants.decode(participants.readableBytesView))
        }
    }

    /// The name of a `users` row whose `given_name` and `family_name` were selected.
    static func name(_ columns: PostgresColumns) throws -> UserNameComponents? {
        let given: String? = try columns.optional("given_name")
        let family: String? = try columns.optional("family_name")
        guard given != nil || family != nil else { return nil }
        return UserNameComponents(givenName: given, familyName: family)
    }

    private func users(_ rows: [PostgresRow]) throws -> [StoredUser] {
        try rows.map { row in
            try read(row, table: "users") { columns in
                StoredUser(
                    recordName: try columns.value("record_name"), emailAddress: try columns.optional("email_address"),
                    isDiscoverable: try columns.value("discoverable"), nameComponents: try Self.name(columns))
            }
        }
    }
}
