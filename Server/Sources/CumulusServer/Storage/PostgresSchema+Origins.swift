import CumulusServerCore
import PostgresNIO

extension PostgresSchema {
    /// Version thirteen keeps, in each zone log entry, the channel whose
    /// reader wrote it and the serial from which that channel has been the
    /// zone's only writer (see `ZoneLogEntry.originSince`): existing
    /// entries have no origin, so every poll hears them as before.
    static let originsVersion: [PostgresQuery] = [
        "ALTER TABLE zone_log ADD COLUMN origin TEXT, ADD COLUMN origin_since BIGINT NOT NULL DEFAULT 0"
    ]
}

extension PostgresTransaction {
    /// The upsert of zone log entries (one per zone), whose since follows
    /// the rule of `ZoneLogEntry.originSince(of:after:)`: an entry without
    /// an origin is bound as the empty string. `=` on TEXT under a
    /// deterministic collation compares bytes.
    static func zoneLogUpsert(_ entries: [ZoneLogEntry], database: Int64) -> PostgresQuery {
        """
        INSERT INTO zone_log (database_id, owner_record_name, zone_name, serial, deleted, origin, origin_since)
            SELECT \(database), entry.owner_record_name, entry.zone_name, entry.serial, entry.deleted,
                NULLIF(entry.origin, ''), entry.origin_since
            FROM unnest(\(entries.map(\.ownerRecordName))::text[], \(entries.map(\.zoneName))::text[],
                \(entries.map(\.serial))::bigint[], \(entries.map(\.deleted))::boolean[],
                \(entries.map { $0.origin ?? "" })::text[],
                \(entries.map { ZoneLogEntry.originSince(of: $0, after: nil) })::bigint[])
                AS entry (owner_record_name, zone_name, serial, deleted, origin, origin_since)
            ON CONFLICT (database_id, owner_record_name, zone_name)
                DO UPDATE SET serial = excluded.serial, deleted = excluded.deleted, origin = excluded.origin,
                    origin_since = CASE WHEN excluded.origin IS NULL THEN 0
                        WHEN zone_log.origin = excluded.origin THEN zone_log.origin_since
                        ELSE zone_log.serial END
        """
    }
}
