import CloudCodable
import CloudProtocol
import CumulusServerCore
import PostgresNIO

extension PostgresTransaction {
    func channels(ofUser user: String, container: String) async throws -> [StoredChannel] {
        try await channels(
            """
            SELECT token_hash, container, environment, scope, owner, user_name, start, last_used, credential
                FROM notification_channels WHERE container = \(container) AND user_name = \(user)
            """)
    }

    /// The whole database's size: with several servers on one database,
    /// everything they keep there (asset bytes included, in `asset_chunks`).
    func storedBytes() async throws -> Int64? {
        let rows = try await query("SELECT pg_database_size(current_database())::BIGINT AS bytes")
        return try rows.first.map { row in try read(row, table: "pg_database") { try $0.value("bytes", as: Int64.self) }
        }
    }

    func assetTotals() async throws -> (count: Int64, bytes: Int64) {
        let rows = try await query(
            "SELECT count(*)::BIGINT AS assets, coalesce(sum(size), 0)::BIGINT AS bytes FROM assets")
        guard let row = rows.first else { return (0, 0) }
        return try read(row, table: "assets") { columns -> (count: Int64, bytes: Int64) in
            (try columns.value("assets"), try columns.value("bytes"))
        }
    }
}
