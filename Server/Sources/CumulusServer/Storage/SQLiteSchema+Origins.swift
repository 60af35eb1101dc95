import SQLiteNIO

extension SQLiteSchema {
    /// Version thirteen keeps, in each zone log entry, the channel whose
    /// reader wrote it and the serial from which that channel has been the
    /// zone's only writer (see `ZoneLogEntry.originSince`): existing
    /// entries have no origin, so every poll hears them as before.
    static let originsVersion = [
        "ALTER TABLE zone_log ADD COLUMN origin TEXT",
        "ALTER TABLE zone_log ADD COLUMN origin_since INTEGER NOT NULL DEFAULT 0",
    ]
}

extension SQLiteTransaction {
    /// The upsert of zone log entries: each row binds the database, owner,
    /// zone name, serial, deleted, origin, and the origin's since for a zone
    /// with no entry yet; an existing entry's since follows the rule of
    /// `ZoneLogEntry.originSince(of:after:)`. `=` on TEXT compares bytes here.
    static func zoneLogUpsert(rows: Int) -> String {
        let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
        return """
            INSERT INTO zone_log (database_id, owner_record_name, zone_name, serial, deleted, origin, origin_since)
                VALUES \(values)
                ON CONFLICT (database_id, owner_record_name, zone_name) DO UPDATE SET serial = excluded.serial,
                    deleted = excluded.deleted, origin = excluded.origin,
                    origin_since = CASE WHEN excluded.origin IS NULL THEN 0
                        WHEN zone_log.origin = excluded.origin THEN zone_log.origin_since
                        ELSE zone_log.serial END
            """
    }

    /// The binds of one entry of ``zoneLogUpsert(rows:)``.
    static func zoneLogBinds(_ entry: ZoneLogEntry, database: Int64) -> [SQLiteData] {
        [
            .integer(Int(database)), .text(entry.ownerRecordName), .text(entry.zoneName),
            .integer(Int(entry.serial)), .integer(entry.deleted ? 1 : 0), entry.origin.map { .text($0) } ?? .null,
            .integer(Int(ZoneLogEntry.originSince(of: entry, after: nil))),
        ]
    }
}
