import CloudCodable
import CloudProtocol
import CumulusServerCore
import SQLiteNIO

extension SQLiteTransaction {
    func channels(ofUser user: String, container: String) async throws -> [StoredChannel] {
        try await channels(where: "container = ? AND user_name = ?", [.text(container), .text(user)])
    }

    /// The database file's pages in use: the WAL's pages are counted once
    /// they are part of the database, so a checkpoint does not change it.
    func storedBytes() async throws -> Int64? {
        let rows = try await query(
            "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()")
        return try rows.first.map { row in try read(row, table: "pragma_page_count") { try $0.integer("bytes") } }
    }

    func assetTotals() async throws -> (count: Int64, bytes: Int64) {
        let rows = try await query("SELECT count(*) AS assets, coalesce(sum(size), 0) AS bytes FROM assets")
        guard let row = rows.first else { return (0, 0) }
        return try read(row, table: "assets") { columns -> (count: Int64, bytes: Int64) in
            (try columns.integer("assets"), try columns.integer("bytes"))
        }
    }
}
