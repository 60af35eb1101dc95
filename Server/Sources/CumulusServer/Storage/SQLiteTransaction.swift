import CloudCodable
import CloudProtocol
import Foundation
import Logging
import SQLiteNIO

/// The statements of ``SQLiteStorage``, run on its connection inside the
/// transaction the storage began. Rows are read through ``SQLiteColumns``:
/// names come back byte for byte, and an impossible row is an error.
struct SQLiteTransaction: StorageTransaction {
    let connection: SQLiteHandle
    let logger: Logger

    /// Runs `sql` on the storage's connection: synchronously, as the
    /// transaction's body runs on its thread.
    @discardableResult
    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteStoredRow] {
        try await connection.query(sql, binds)
    }

    /// `?, ?, …` for `count` values.
    func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    /// Runs a multi-row statement in chunks that stay under SQLite's limit
    /// of bound variables.
    func chunked<Row>(_ rows: [Row], _ body: ([Row]) async throws -> Void) async throws {
        var start = 0
        while start < rows.count {
            let end = min(start + 400, rows.count)
            try await body(Array(rows[start..<end]))
            start = end
        }
    }

    // MARK: Databases and zones

    func database(_ key: DatabaseKey) async throws -> StoredDatabase? {
        let rows = try await query(
            "SELECT id, incarnation, serial FROM databases WHERE container = ? AND environment = ? AND scope = ? "
                + "AND owner = ?",
            [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner)])
        return try rows.first.map { row in try read(row, table: "databases", Self.database) }
    }

    func createDatabase(_ key: DatabaseKey, incarnation: Int64) async throws -> StoredDatabase {
        try await query(
            "INSERT OR IGNORE INTO databases (container, environment, scope, owner, incarnation, serial) "
                + "VALUES (?, ?, ?, ?, ?, 0)",
            [
                .text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner),
                .integer(Int(incarnation)),
            ])
        guard let database = try await database(key) else {
            throw CloudError(.internalError, reason: "the database row vanished")
        }
        return database
    }

    func updateDatabase(_ database: StoredDatabase) async throws {
        try await query(
            "UPDATE databases SET incarnation = ?, serial = ? WHERE id = ?",
            [.integer(Int(database.incarnation)), .integer(Int(database.serial)), .integer(Int(database.id))])
    }

    func zones(inDatabase database: Int64, named names: [String]?) async throws -> [StoredZone] {
        var sql = "SELECT id, \(SQLiteColumns.exact("name")), incarnation, serial FROM zones WHERE database_id = ?"
        var binds: [SQLiteData] = [.integer(Int(database))]
        if let names {
            guard !names.isEmpty else { return [] }
            sql += " AND name IN (\(placeholders(names.count)))"
            binds += names.map(SQLiteData.text)
        }
        return try await query(sql, binds).map { row in
            try read(row, table: "zones") { columns in
                StoredZone(
                    id: try columns.integer("id"), name: try columns.text("name"),
                    incarnation: try columns.integer("incarnation"), serial: try columns.integer("serial"))
            }
        }
    }

    func createZone(named name: String, inDatabase database: Int64, incarnation: Int64) async throws -> StoredZone {
        try await query(
            "INSERT INTO zones (database_id, name, incarnation, serial) VALUES (?, ?, ?, 0)",
            [.integer(Int(database)), .text(name), .integer(Int(incarnation))])
        guard let zone = try await zones(inDatabase: database, named: [name]).first else {
            throw CloudError(.internalError, reason: "the zone row vanished")
        }
        return zone
    }

    func updateZone(_ zone: StoredZone) async throws {
        try await query(
            "UPDATE zones SET incarnation = ?, serial = ? WHERE id = ?",
            [.integer(Int(zone.incarnation)), .integer(Int(zone.serial)), .integer(Int(zone.id))])
    }

    func deleteZone(_ zone: StoredZone) async throws {
        // Records, references and shares go with the zone (ON DELETE CASCADE).
        try await query("DELETE FROM zones WHERE id = ?", [.integer(Int(zone.id))])
    }

    func logZoneChanges(_ entries: [ZoneLogEntry], inDatabase database: Int64) async throws {
        try await chunked(entries) { chunk in
            try await query(
                Self.zoneLogUpsert(rows: chunk.count), chunk.flatMap { Self.zoneLogBinds($0, database: database) })
        }
    }

    func zoneLog(inDatabase database: Int64, after serial: Int64, limit: Int) async throws -> [ZoneLogEntry] {
        try await query(
            "SELECT \(SQLiteColumns.exact(["owner_record_name", "zone_name", "origin"])), serial, deleted, "
                + "origin_since FROM zone_log WHERE database_id = ? AND serial > ? ORDER BY serial LIMIT ?",
            [.integer(Int(database)), .integer(Int(serial)), .integer(limit)]
        ).map { row in
            try read(row, table: "zone_log") { columns in
                ZoneLogEntry(
                    zoneName: try columns.text("zone_name"), ownerRecordName: try columns.text("owner_record_name"),
                    serial: try columns.integer("serial"), deleted: try columns.bool("deleted"),
                    origin: try columns.optionalText("origin"), originSince: try columns.integer("origin_since"))
            }
        }
    }

    // MARK: Records

    func records(named names: [String], inZone zone: Int64) async throws -> [StoredRecord] {
        guard !names.isEmpty else { return [] }
        var found: [StoredRecord] = []
        try await chunked(names) { chunk in
            let rows = try await query(
                "SELECT \(Self.recordColumns) FROM records WHERE zone_id = ? AND name IN (\(placeholders(chunk.count)))",
                [.integer(Int(zone))] + chunk.map(SQLiteData.text))
            found += try rows.map(record)
        }
        return found
    }

    func saveRecords(_ records: [StoredRecord], inZone zone: Int64) async throws {
        guard !records.isEmpty else { return }
        try await chunked(records) { chunk in
            let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", count: chunk.count)
                .joined(separator: ", ")
            var binds: [SQLiteData] = []
            binds.reserveCapacity(chunk.count * 10)
            for record in chunk {
                binds.append(.integer(Int(zone)))
                binds.append(.text(record.name))
                binds.append(.text(record.recordType))
                binds.append(.integer(Int(record.serial)))
                binds.append(.integer(record.record == nil ? 1 : 0))
                binds.append(record.creator.map(SQLiteData.text) ?? .null)
                if let stored = record.record {
                    binds.append(.blob(ByteBuffer(bytes: try WireFormat.encode(stored))))
                } else {
                    binds.append(.null)
                }
                binds.append(record.parent.map(SQLiteData.text) ?? .null)
                binds.append(record.shareKey.map(SQLiteData.text) ?? .null)
                binds.append(record.formerShareKey.map(SQLiteData.text) ?? .null)
            }
            try await query(
                """
                INSERT OR REPLACE INTO records (zone_id, name, type, serial, deleted, creator, body, parent, share_key,
                    former_share_key) VALUES \(values)
                """, binds)
        }
        try await chunked(records) { chunk in
            try await query(
                "DELETE FROM delete_self_references WHERE zone_id = ? AND source IN (\(placeholders(chunk.count)))",
                [.integer(Int(zone))] + chunk.map { .text($0.name) })
        }
        let references = records.flatMap { record in record.deleteSelfTargets.map { (record.name, $0) } }
        try await chunked(references) { chunk in
            let values = Array(repeating: "(?, ?, ?)", count: chunk.count).joined(separator: ", ")
            let binds = chunk.flatMap { source, target -> [SQLiteData] in
                [.integer(Int(zone)), .text(source), .text(target)]
            }
            try await query(
                "INSERT OR IGNORE INTO delete_self_references (zone_id, source, target) VALUES \(values)", binds)
        }
    }

    func deleteSelfReferrers(of names: [String], inZone zone: Int64) async throws -> [String] {
        var found: [String] = []
        try await chunked(names) { chunk in
            let rows = try await query(
                "SELECT DISTINCT \(SQLiteColumns.exact("source")) FROM delete_self_references WHERE zone_id = ? "
                    + "AND target IN (\(placeholders(chunk.count)))",
                [.integer(Int(zone))] + chunk.map(SQLiteData.text))
            found += try rows.map { row in
                try read(row, table: "delete_self_references") { try $0.text("source") }
            }
        }
        return found
    }

    func changes(inZone zone: Int64, after serial: Int64, recordTypes: [String]?, limit: Int) async throws
        -> [StoredChange]
    {
        var sql = "SELECT \(Self.changeColumns) FROM records WHERE zone_id = ? AND serial > ?"
        var binds: [SQLiteData] = [.integer(Int(zone)), .integer(Int(serial))]
        if let recordTypes {
            guard !recordTypes.isEmpty else { return [] }
            sql += " AND type IN (\(placeholders(recordTypes.count)))"
            binds += recordTypes.map(SQLiteData.text)
        }
        sql += " ORDER BY serial LIMIT ?"
        binds.append(.integer(limit))
        return try await query(sql, binds).map { row in
            try read(row, table: "records") { columns in
                StoredChange(
                    name: try columns.text("name"), serial: try columns.integer("serial"),
                    contents: try ImpossibleRow.contents(
                        deleted: try columns.bool("deleted"), body: try columns.optionalBlob("body")),
                    shareKey: try columns.optionalText("share_key"),
                    formerShareKey: try columns.optionalText("former_share_key"))
            }
        }
    }

    func liveRecords(ofType recordType: String, inZone zone: Int64) async throws -> [StoredRecord] {
        try await query(
            "SELECT \(Self.recordColumns) FROM records WHERE zone_id = ? AND type = ? AND deleted = 0",
            [.integer(Int(zone)), .text(recordType)]
        ).map(record)
    }

    func liveRecords(inZone zone: Int64, after name: String?, limit: Int) async throws -> [StoredRecord] {
        try await query(
            Self.livePageSQL(afterName: name != nil), [.integer(Int(zone)), .text(name ?? ""), .integer(max(0, limit))]
        ).map(record)
    }

    /// The statement of ``liveRecords(inZone:after:limit:)``: binds the
    /// zone, the name the page starts after (`''` for the first) and the limit.
    ///
    /// The primary key (zone_id, name) keeps names in byte order (BINARY):
    /// the page is a range of it. The select list names its text columns
    /// `name` and so on, so the order says `records.name`: a bare `name`
    /// would sort by the select list's expression, every row after the
    /// cursor. (Any text is at least '': the first page asks `name >= ''`.)
    static func livePageSQL(afterName: Bool) -> String {
        "SELECT \(recordColumns) FROM records WHERE zone_id = ? AND records.name \(afterName ? ">" : ">=") ? "
            + "AND deleted = 0 ORDER BY records.name LIMIT ?"
    }

    func children(of names: [String], inZone zone: Int64) async throws -> [StoredRecord] {
        var found: [StoredRecord] = []
        try await chunked(names) { chunk in
            let rows = try await query(
                "SELECT \(Self.recordColumns) FROM records WHERE zone_id = ? AND deleted = 0 "
                    + "AND parent IN (\(placeholders(chunk.count)))",
                [.integer(Int(zone))] + chunk.map(SQLiteData.text))
            found += try rows.map(record)
        }
        // A name given twice matches its children in two chunks.
        var seen = Set<ExactName>()
        return found.filter { seen.insert(ExactName($0.name)).inserted }.sorted {
            ExactName($0.name) < ExactName($1.name)
        }
    }

    // MARK: Shares

    func shares(inZone zone: Int64) async throws -> [StoredShare] {
        try await query(
            "SELECT \(Self.shareColumns) FROM shares WHERE zone_id = ? ORDER BY record_name", [.integer(Int(zone))]
        ).map(share)
    }

    func share(shortGUID: String) async throws -> StoredShare? {
        try await query("SELECT \(Self.shareColumns) FROM shares WHERE short_guid = ?", [.text(shortGUID)])
            .first.map(share)
    }

    func shares(acceptedBy user: String, container: String, environment: CloudEnvironment) async throws
        -> [StoredShare]
    {
        try await query(
            """
            SELECT \(Self.shareColumns) FROM shares WHERE (zone_id, record_name) IN (SELECT zone_id, record_name
                FROM share_acceptances WHERE container = ? AND environment = ? AND user_name = ?) ORDER BY short_guid
            """, [.text(container), .text(environment.rawValue), .text(user)]
        ).map(share)
    }

    func saveShare(_ share: StoredShare) async throws {
        // Deleted first, not replaced: the old row's acceptances go with it.
        try await deleteShare(recordName: share.recordName, inZone: share.zone)
        try await query(
            """
            INSERT INTO shares (zone_id, record_name, short_guid, container, environment, owner, zone_name,
                root_record_name, public_permission, participants) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(Int(share.zone)), .text(share.recordName), .text(share.shortGUID), .text(share.container),
                .text(share.environment.rawValue), .text(share.owner), .text(share.zoneName),
                share.rootRecordName.map(SQLiteData.text) ?? .null, .text(share.publicPermission.rawValue),
                .blob(ByteBuffer(bytes: try StoredParticipants.encode(share.participants))),
            ])
        try await chunked(StoredParticipants.acceptedUsers(share.participants)) { chunk in
            let values = Array(repeating: "(?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            let binds = chunk.flatMap { user -> [SQLiteData] in
                [
                    .integer(Int(share.zone)), .text(share.recordName), .text(share.container),
                    .text(share.environment.rawValue), .text(user),
                ]
            }
            try await query(
                "INSERT INTO share_acceptances (zone_id, record_name, container, environment, user_name) "
                    + "VALUES \(values)", binds)
        }
    }

    func deleteShare(recordName: String, inZone zone: Int64) async throws {
        let binds: [SQLiteData] = [.integer(Int(zone)), .text(recordName)]
        try await query("DELETE FROM share_acceptances WHERE zone_id = ? AND record_name = ?", binds)
        try await query("DELETE FROM shares WHERE zone_id = ? AND record_name = ?", binds)
    }

    // MARK: Subscriptions

    func subscriptions(inDatabase database: Int64, user: String?) async throws -> [StoredSubscription] {
        var sql =
            "SELECT \(SQLiteColumns.exact(["user_name", "id", "zone_name", "query", "fires_on"])) FROM subscriptions "
            + "WHERE database_id = ?"
        var binds: [SQLiteData] = [.integer(Int(database))]
        if let user {
            sql += " AND user_name = ?"
            binds.append(.text(user))
        }
        return try await query(sql + " ORDER BY user_name, id", binds).map { row in
            try read(row, table: "subscriptions") { columns in
                try StoredSubscription(
                    user: try columns.text("user_name"), subscriptionID: try columns.text("id"),
                    zoneName: try columns.text("zone_name"), query: try columns.optionalText("query"),
                    firesOn: try columns.optionalText("fires_on"))
            }
        }
    }

    func saveSubscription(_ subscription: StoredSubscription, inDatabase database: Int64) async throws {
        let query = try subscription.queryColumns()
        try await self.query(
            """
            INSERT OR REPLACE INTO subscriptions (database_id, user_name, id, zone_name, query, fires_on)
                VALUES (?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(Int(database)), .text(subscription.user), .text(subscription.subscription.subscriptionID),
                .text(subscription.subscription.zoneID.zoneName), query.map { .text($0.query) } ?? .null,
                query.map { .text($0.firesOn) } ?? .null,
            ])
    }

    func deleteSubscription(_ subscriptionID: String, user: String, inDatabase database: Int64) async throws -> Bool {
        let rows = try await query(
            "DELETE FROM subscriptions WHERE database_id = ? AND user_name = ? AND id = ? RETURNING 1",
            [.integer(Int(database)), .text(user), .text(subscriptionID)])
        return !rows.isEmpty
    }

    // MARK: Query notifications

    func logQueryNotifications(_ notifications: [StoredQueryNotification], inDatabase database: Int64) async throws {
        for stored in notifications {
            let notification = stored.notification
            try await query(
                """
                INSERT INTO query_notifications (database_id, serial, user_name, subscription_id, zone_name,
                    record_name, reason, logged) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(Int(database)), .integer(Int(stored.serial)), .text(stored.user),
                    .text(notification.subscriptionID), .text(notification.zoneID.zoneName),
                    .text(notification.recordName), .text(notification.reason.rawValue), .integer(Int(stored.logged)),
                ])
        }
    }

    func queryNotifications(inDatabase database: Int64, user: String, after serial: Int64, through last: Int64)
        async throws -> [StoredQueryNotification]
    {
        let columns = SQLiteColumns.exact(["user_name", "subscription_id", "zone_name", "record_name", "reason"])
        return try await query(
            """
            SELECT serial, logged, \(columns) FROM query_notifications
                WHERE database_id = ? AND user_name = ? AND serial > ? AND serial <= ? ORDER BY serial, id
            """,
            [.integer(Int(database)), .text(user), .integer(Int(serial)), .integer(Int(last))]
        ).map { row in
            try read(row, table: "query_notifications") { columns in
                guard let reason = QueryNotification.Reason(rawValue: try columns.text("reason")) else {
                    throw columns.impossible("reason", "is not created, updated or deleted")
                }
                return StoredQueryNotification(
                    user: try columns.text("user_name"), serial: try columns.integer("serial"),
                    logged: try columns.integer("logged"),
                    notification: QueryNotification(
                        subscriptionID: try columns.text("subscription_id"),
                        recordName: try columns.text("record_name"),
                        zoneID: ZoneID(zoneName: try columns.text("zone_name")), reason: reason))
            }
        }
    }

    func deleteQueryNotifications(loggedBefore logged: Int64) async throws {
        try await query("DELETE FROM query_notifications WHERE logged < ?", [.integer(Int(logged))])
    }

    // MARK: Accounts

    func createContainer(named name: String, tokenHash: String) async throws -> Bool {
        let rows = try await query(
            "INSERT OR IGNORE INTO containers (name, token_hash) VALUES (?, ?) RETURNING 1",
            [.text(name), .text(tokenHash)])
        return !rows.isEmpty
    }

    func containerTokenHash(named name: String) async throws -> String? {
        try await firstText(
            "token_hash", table: "containers",
            query("SELECT \(SQLiteColumns.exact("token_hash")) FROM containers WHERE name = ?", [.text(name)]))
    }

    func setUserEmail(_ emailAddress: String?, discoverable: Bool, recordName: String, container: String)
        async throws -> Bool
    {
        try await !query(
            "UPDATE users SET email_address = ?, discoverable = ? WHERE container = ? AND record_name = ? RETURNING 1",
            [
                emailAddress.map(SQLiteData.text) ?? .null, .integer(discoverable ? 1 : 0), .text(container),
                .text(recordName),
            ]
        ).isEmpty
    }

    func setUserName(_ name: UserNameComponents?, recordName: String, container: String) async throws -> Bool {
        try await !query(
            "UPDATE users SET given_name = ?, family_name = ? WHERE container = ? AND record_name = ? RETURNING 1",
            [
                name?.givenName.map(SQLiteData.text) ?? .null, name?.familyName.map(SQLiteData.text) ?? .null,
                .text(container), .text(recordName),
            ]
        ).isEmpty
    }

    func users(withEmailAddresses addresses: [String], container: String) async throws -> [StoredUser] {
        try await users(column: "email_address", in: addresses, container: container)
    }

    func users(withRecordNames names: [String], container: String) async throws -> [StoredUser] {
        try await users(column: "record_name", in: names, container: container)
    }

    /// The users of a container whose `column` is one of `values`, by record name.
    private func users(column: String, in values: [String], container: String) async throws -> [StoredUser] {
        var found: [StoredUser] = []
        try await chunked(values) { chunk in
            let rows = try await query(
                "SELECT \(SQLiteColumns.exact(["record_name", "email_address", "given_name", "family_name"])), "
                    + "discoverable FROM users WHERE container = ? AND \(column) IN (\(placeholders(chunk.count)))",
                [.text(container)] + chunk.map(SQLiteData.text))
            found += try rows.map { row in
                try read(row, table: "users") { columns in
                    StoredUser(
                        recordName: try columns.text("record_name"),
                        emailAddress: try columns.optionalText("email_address"),
                        isDiscoverable: try columns.bool("discoverable"), nameComponents: try Self.name(columns))
                }
            }
        }
        var seen = Set<ExactName>()
        return found.filter { seen.insert(ExactName($0.recordName)).inserted }.sorted {
            ExactName($0.recordName) < ExactName($1.recordName)
        }
    }

    /// The name of a `users` row whose `given_name` and `family_name` were selected.
    static func name(_ columns: SQLiteColumns) throws -> UserNameComponents? {
        let given = try columns.optionalText("given_name")
        let family = try columns.optionalText("family_name")
        guard given != nil || family != nil else { return nil }
        return UserNameComponents(givenName: given, familyName: family)
    }

    func createServerKey(id: String, publicKeyPEM: String, container: String) async throws {
        try await query(
            "INSERT INTO server_keys (container, key_id, pem) VALUES (?, ?, ?)",
            [.text(container), .text(id), .text(publicKeyPEM)])
    }

    func serverKey(id: String, container: String) async throws -> String? {
        try await firstText(
            "pem", table: "server_keys",
            query(
                "SELECT \(SQLiteColumns.exact("pem")) FROM server_keys WHERE container = ? AND key_id = ?",
                [.text(container), .text(id)]))
    }

    func isQuotaExceeded(user: String, container: String, environment: CloudEnvironment) async throws -> Bool {
        try await !query(
            "SELECT 1 FROM quotas WHERE container = ? AND environment = ? AND user_name = ?",
            [.text(container), .text(environment.rawValue), .text(user)]
        ).isEmpty
    }

    func setQuotaExceeded(_ exceeded: Bool, user: String, container: String, environment: CloudEnvironment)
        async throws
    {
        let binds: [SQLiteData] = [.text(container), .text(environment.rawValue), .text(user)]
        if exceeded {
            try await query("INSERT OR IGNORE INTO quotas (container, environment, user_name) VALUES (?, ?, ?)", binds)
        } else {
            try await query("DELETE FROM quotas WHERE container = ? AND environment = ? AND user_name = ?", binds)
        }
    }

    // MARK: Notification channels

    func createChannel(_ channel: StoredChannel) async throws {
        try await query(
            """
            INSERT INTO notification_channels (token_hash, container, environment, scope, owner, user_name, start,
                last_used, credential) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(channel.tokenHash), .text(channel.key.container), .text(channel.key.environment.rawValue),
                .text(channel.key.scope.rawValue), .text(channel.key.owner), .text(channel.user),
                .integer(Int(channel.start)), .integer(Int(channel.lastUsed)),
                channel.credential.map { .text($0) } ?? .null,
            ])
    }

    func channel(tokenHash: String) async throws -> StoredChannel? {
        try await channels(where: "token_hash = ?", [.text(tokenHash)]).first
    }

    /// The channels whose rows meet `condition`.
    func channels(where condition: String, _ binds: [SQLiteData]) async throws -> [StoredChannel] {
        let rows = try await query(
            "SELECT \(SQLiteColumns.exact(["token_hash", "container", "environment", "scope", "owner", "user_name", "credential"])), "
                + "start, last_used FROM notification_channels WHERE \(condition)", binds)
        return try rows.map { row in
            try read(row, table: "notification_channels") { columns in
                guard let environment = CloudEnvironment(rawValue: try columns.text("environment")) else {
                    throw columns.impossible("environment", "is not a known environment")
                }
                guard let scope = DatabaseScope(rawValue: try columns.text("scope")) else {
                    throw columns.impossible("scope", "is not a known scope")
                }
                return StoredChannel(
                    tokenHash: try columns.text("token_hash"),
                    key: DatabaseKey(
                        container: try columns.text("container"), environment: environment, scope: scope,
                        owner: try columns.text("owner")),
                    user: try columns.text("user_name"), start: try columns.integer("start"),
                    lastUsed: try columns.integer("last_used"), credential: try columns.optionalText("credential"))
            }
        }
    }

    func touchChannel(tokenHash: String, lastUsed: Int64) async throws {
        try await query(
            "UPDATE notification_channels SET last_used = ? WHERE token_hash = ?",
            [.integer(Int(lastUsed)), .text(tokenHash)])
    }

    func deleteChannels(unusedSince lastUsed: Int64) async throws {
        try await query("DELETE FROM notification_channels WHERE last_used < ?", [.integer(Int(lastUsed))])
    }

    func deleteChannels(of key: DatabaseKey, user: String, keepingNewest count: Int) async throws {
        try await query(
            """
            DELETE FROM notification_channels WHERE token_hash IN (SELECT token_hash FROM notification_channels
                WHERE container = ? AND environment = ? AND scope = ? AND owner = ? AND user_name = ?
                ORDER BY last_used DESC, token_hash DESC LIMIT -1 OFFSET ?)
            """,
            [
                .text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner),
                .text(user), .integer(max(0, count)),
            ])
    }

    // MARK: Schema

    func fieldTypes(container: String, environment: CloudEnvironment) async throws -> [StoredFieldType] {
        try await query(
            "SELECT \(SQLiteColumns.exact(["record_type", "field", "type"])) FROM field_types WHERE container = ? "
                + "AND environment = ?",
            [.text(container), .text(environment.rawValue)]
        ).map { row in
            try read(row, table: "field_types") { columns in
                guard let type = FieldType(rawValue: try columns.text("type")) else {
                    throw columns.impossible("type", "is not a known field type")
                }
                return StoredFieldType(
                    recordType: try columns.text("record_type"), fieldName: try columns.text("field"), type: type)
            }
        }
    }

    func addFieldTypes(_ types: [StoredFieldType], container: String, environment: CloudEnvironment) async throws {
        try await chunked(types) { chunk in
            let values = Array(repeating: "(?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            let binds = chunk.flatMap { type -> [SQLiteData] in
                [
                    .text(container), .text(environment.rawValue), .text(type.recordType), .text(type.fieldName),
                    .text(type.type.rawValue),
                ]
            }
            try await query(
                "INSERT OR IGNORE INTO field_types (container, environment, record_type, field, type) VALUES \(values)",
                binds)
        }
    }

    // MARK: Rows

    /// The select list of a record row.
    private static let recordColumns =
        SQLiteColumns.exact(["name", "type", "creator", "parent", "share_key", "former_share_key"])
        + ", serial, deleted, body"
    private static let changeColumns =
        SQLiteColumns.exact(["name", "share_key", "former_share_key"]) + ", serial, deleted, body"
    /// The select list of a share row.
    private static let shareColumns =
        SQLiteColumns.exact([
            "record_name", "short_guid", "container", "environment", "owner", "zone_name", "root_record_name",
            "public_permission",
        ]) + ", zone_id, participants"

    /// Reads one row of `table`; an impossible one answers `INTERNAL_ERROR`, logged.
    func read<T>(_ row: SQLiteStoredRow, table: String, _ body: (SQLiteColumns) throws -> T) throws -> T {
        do {
            return try body(SQLiteColumns(row, table: table))
        } catch let error as ImpossibleRow {
            throw error.cloudError(logging: logger)
        }
    }

    /// The text of `column` in the first row, if any.
    func firstText(_ column: String, table: String, _ rows: [SQLiteStoredRow]) throws -> String? {
        try rows.first.map { row in try read(row, table: table) { try $0.text(column) } }
    }

    private static func database(_ columns: SQLiteColumns) throws -> StoredDatabase {
        StoredDatabase(
            id: try columns.integer("id"), incarnation: try columns.integer("incarnation"),
            serial: try columns.integer("serial"))
    }

    /// A record or its tombstone: a live row has a body, a deleted one none.
    private func record(_ row: SQLiteStoredRow) throws -> StoredRecord {
        try read(row, table: "records") { columns in
            let record = try ImpossibleRow.record(
                deleted: try columns.bool("deleted"), body: try columns.optionalBlob("body"))
            return StoredRecord(
                name: try columns.text("name"), recordType: try columns.text("type"),
                serial: try columns.integer("serial"),
                creator: try columns.optionalText("creator"), record: record, deleteSelfTargets: [],
                parent: try columns.optionalText("parent"), shareKey: try columns.optionalText("share_key"),
                formerShareKey: try columns.optionalText("former_share_key"))
        }
    }

    private func share(_ row: SQLiteStoredRow) throws -> StoredShare {
        try read(row, table: "shares") { columns in
            guard let environment = CloudEnvironment(rawValue: try columns.text("environment")) else {
                throw columns.impossible("environment", "is not a known environment")
            }
            guard let permission = SharePermission(rawValue: try columns.text("public_permission")) else {
                throw columns.impossible("public_permission", "is not a known permission")
            }
            guard let participants = try columns.optionalBlob("participants") else {
                throw columns.impossible("participants", "is NULL")
            }
            return StoredShare(
                shortGUID: try columns.text("short_guid"), container: try columns.text("container"),
                environment: environment, owner: try columns.text("owner"), zone: try columns.integer("zone_id"),
                zoneName: try columns.text("zone_name"), recordName: try columns.text("record_name"),
                rootRecordName: try columns.optionalText("root_record_name"), publicPermission: permission,
                participants: try StoredParticipants.decode(participants.readableBytesView))
        }
    }
}
