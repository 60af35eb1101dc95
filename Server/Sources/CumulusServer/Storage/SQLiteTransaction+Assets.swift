import CloudCodable
import CloudProtocol
import SQLiteNIO

/// The rows of assets in SQLite: upload tickets, assets, receipts and the
/// secret download URLs are signed with.
extension SQLiteTransaction {
    func assetSigningSecret(proposing proposed: [UInt8]) async throws -> [UInt8] {
        try await query(
            "INSERT OR IGNORE INTO asset_secret (id, secret) VALUES (1, ?)", [.blob(ByteBuffer(bytes: proposed))])
        let rows = try await query("SELECT secret FROM asset_secret WHERE id = 1")
        guard let row = rows.first else { throw CloudError(.internalError, reason: "the asset secret vanished") }
        return try read(row, table: "asset_secret") { columns in
            guard let secret = try columns.optionalBlob("secret") else { throw columns.impossible("secret", "is NULL") }
            return Array(secret.readableBytesView)
        }
    }

    func createUploadTicket(_ ticket: StoredUploadTicket) async throws {
        try await query(
            """
            INSERT INTO asset_upload_tickets (id, container, environment, scope, owner, zone_id, record_name,
                record_type, field_name, user_name, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(ticket.id), .text(ticket.key.container), .text(ticket.key.environment.rawValue),
                .text(ticket.key.scope.rawValue), .text(ticket.key.owner), .integer(Int(ticket.zone)),
                .text(ticket.recordName), .text(ticket.recordType), .text(ticket.fieldName), .text(ticket.user),
                .integer(Int(ticket.expires)),
            ])
    }

    func uploadTicket(id: String) async throws -> StoredUploadTicket? {
        let rows = try await query(
            """
            SELECT \(SQLiteColumns.exact(["id", "container", "environment", "scope", "owner", "record_name",
                "record_type", "field_name", "user_name"])), zone_id, expires FROM asset_upload_tickets WHERE id = ?
            """, [.text(id)])
        return try rows.first.map { row in
            try read(row, table: "asset_upload_tickets") { columns in
                guard let environment = CloudEnvironment(rawValue: try columns.text("environment")) else {
                    throw columns.impossible("environment", "is not a known environment")
                }
                guard let scope = DatabaseScope(rawValue: try columns.text("scope")) else {
                    throw columns.impossible("scope", "is not a known scope")
                }
                return StoredUploadTicket(
                    id: try columns.text("id"),
                    key: DatabaseKey(
                        container: try columns.text("container"), environment: environment, scope: scope,
                        owner: try columns.text("owner")),
                    zone: try columns.integer("zone_id"), recordName: try columns.text("record_name"),
                    recordType: try columns.text("record_type"), fieldName: try columns.text("field_name"),
                    user: try columns.text("user_name"), expires: try columns.integer("expires"))
            }
        }
    }

    func saveAsset(_ asset: StoredAsset) async throws {
        try await query(
            """
            INSERT OR REPLACE INTO assets (id, zone_id, record_name, field_name, user_name, size, checksum, created,
                unheld_since) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(asset.id), .integer(Int(asset.zone)), .text(asset.recordName), .text(asset.fieldName),
                .text(asset.user), asset.size.map { .integer(Int($0)) } ?? .null,
                asset.checksum.map(SQLiteData.text) ?? .null, .integer(Int(asset.created)),
                asset.unheldSince.map { .integer(Int($0)) } ?? .null,
            ])
    }

    func assets(ids: [String]) async throws -> [StoredAsset] {
        var found: [StoredAsset] = []
        try await chunked(ids) { chunk in
            let rows = try await query(
                """
                SELECT \(SQLiteColumns.exact(["id", "record_name", "field_name", "user_name", "checksum"])),
                    zone_id, size, created, unheld_since FROM assets WHERE id IN (\(placeholders(chunk.count)))
                """, chunk.map(SQLiteData.text))
            found += try rows.map { row in
                try read(row, table: "assets") { columns in
                    StoredAsset(
                        id: try columns.text("id"), zone: try columns.integer("zone_id"),
                        recordName: try columns.text("record_name"), fieldName: try columns.text("field_name"),
                        user: try columns.text("user_name"), size: try columns.optionalInteger("size"),
                        checksum: try columns.optionalText("checksum"), created: try columns.integer("created"),
                        unheldSince: try columns.optionalInteger("unheld_since"))
                }
            }
        }
        return found
    }

    func deleteAssets(ids: [String]) async throws {
        try await chunked(ids) { chunk in
            try await query("DELETE FROM assets WHERE id IN (\(placeholders(chunk.count)))", chunk.map(SQLiteData.text))
        }
    }

    func holdAssets(ids: [String]) async throws {
        try await chunked(ids) { chunk in
            try await query(
                "UPDATE assets SET unheld_since = NULL WHERE id IN (\(placeholders(chunk.count)))",
                chunk.map(SQLiteData.text))
        }
    }

    func releaseAssets(ids: [String], at time: Int64) async throws {
        try await chunked(ids) { chunk in
            try await query(
                "UPDATE assets SET unheld_since = ? WHERE unheld_since IS NULL AND id IN (\(placeholders(chunk.count)))",
                [.integer(Int(time))] + chunk.map(SQLiteData.text))
        }
    }

    func releaseAssets(inZone zone: Int64, at time: Int64) async throws {
        try await query(
            "UPDATE assets SET unheld_since = ? WHERE zone_id = ? AND unheld_since IS NULL",
            [.integer(Int(time)), .integer(Int(zone))])
    }

    func unheldAssets(since cutoff: Int64, limit: Int) async throws -> [String] {
        try await query(
            "SELECT \(SQLiteColumns.exact("id")) FROM assets WHERE unheld_since <= ? ORDER BY unheld_since, id LIMIT ?",
            [.integer(Int(cutoff)), .integer(limit)]
        ).map { row in try read(row, table: "assets") { try $0.text("id") } }
    }

    func createAssetReceipt(_ receipt: StoredAssetReceipt) async throws {
        try await query(
            """
            INSERT INTO asset_receipts (id, asset_id, zone_id, record_name, field_name, user_name, expires)
                VALUES (?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(receipt.id), .text(receipt.asset), .integer(Int(receipt.zone)), .text(receipt.recordName),
                .text(receipt.fieldName), .text(receipt.user), .integer(Int(receipt.expires)),
            ])
    }

    func assetReceipts(ids: [String]) async throws -> [StoredAssetReceipt] {
        var found: [StoredAssetReceipt] = []
        try await chunked(ids) { chunk in
            let rows = try await query(
                """
                SELECT \(SQLiteColumns.exact(["id", "asset_id", "record_name", "field_name", "user_name"])),
                    zone_id, expires FROM asset_receipts WHERE id IN (\(placeholders(chunk.count)))
                """, chunk.map(SQLiteData.text))
            found += try rows.map { row in
                try read(row, table: "asset_receipts") { columns in
                    StoredAssetReceipt(
                        id: try columns.text("id"), asset: try columns.text("asset_id"),
                        zone: try columns.integer("zone_id"), recordName: try columns.text("record_name"),
                        fieldName: try columns.text("field_name"), user: try columns.text("user_name"),
                        expires: try columns.integer("expires"))
                }
            }
        }
        return found
    }

    func deleteExpiredUploads(at time: Int64) async throws {
        try await query("DELETE FROM asset_upload_tickets WHERE expires <= ?", [.integer(Int(time))])
        try await query("DELETE FROM asset_receipts WHERE expires <= ?", [.integer(Int(time))])
    }
}
