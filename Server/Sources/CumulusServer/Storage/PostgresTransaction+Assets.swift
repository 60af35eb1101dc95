import CloudCodable
import CloudProtocol
import PostgresNIO

/// The rows of assets in PostgreSQL: upload tickets, assets, receipts and
/// the secret download URLs are signed with, which every server on the
/// database shares.
extension PostgresTransaction {
    func assetSigningSecret(proposing proposed: [UInt8]) async throws -> [UInt8] {
        // A second server proposing at once waits for the first's commit and inserts nothing.
        try await query(
            "INSERT INTO asset_secret (id, secret) VALUES (1, \(ByteBuffer(bytes: proposed))) ON CONFLICT DO NOTHING")
        let rows = try await query("SELECT secret FROM asset_secret WHERE id = 1")
        guard let row = rows.first else { throw CloudError(.internalError, reason: "the asset secret vanished") }
        return try read(row, table: "asset_secret") { columns in
            Array(try columns.value("secret", as: ByteBuffer.self).readableBytesView)
        }
    }

    func createUploadTicket(_ ticket: StoredUploadTicket) async throws {
        try await query(
            """
            INSERT INTO asset_upload_tickets (id, container, environment, scope, owner, zone_id, record_name,
                record_type, field_name, user_name, expires) VALUES (\(ticket.id), \(ticket.key.container),
                \(ticket.key.environment.rawValue), \(ticket.key.scope.rawValue), \(ticket.key.owner), \(ticket.zone),
                \(ticket.recordName), \(ticket.recordType), \(ticket.fieldName), \(ticket.user), \(ticket.expires))
            """)
    }

    func uploadTicket(id: String) async throws -> StoredUploadTicket? {
        let rows = try await query(
            """
            SELECT id, container, environment, scope, owner, zone_id, record_name, record_type, field_name, user_name,
                expires FROM asset_upload_tickets WHERE id = \(id)
            """)
        return try rows.first.map { row in
            try read(row, table: "asset_upload_tickets") { columns in
                guard let environment = CloudEnvironment(rawValue: try columns.value("environment")) else {
                    throw columns.impossible("environment", "is not a known environment")
                }
                guard let scope = DatabaseScope(rawValue: try columns.value("scope")) else {
                    throw columns.impossible("scope", "is not a known scope")
                }
                return StoredUploadTicket(
                    id: try columns.value("id"),
                    key: DatabaseKey(
                        container: try columns.value("container"), environment: environment, scope: scope,
                        owner: try columns.value("owner")),
                    zone: try columns.value("zone_id"), recordName: try columns.value("record_name"),
                    recordType: try columns.value("record_type"), fieldName: try columns.value("field_name"),
                    user: try columns.value("user_name"), expires: try columns.value("expires"))
            }
        }
    }

    func saveAsset(_ asset: StoredAsset) async throws {
        try await query(
            """
            INSERT INTO assets (id, zone_id, record_name, field_name, user_name, size, checksum, created,
                unheld_since) VALUES (\(asset.id), \(asset.zone), \(asset.recordName), \(asset.fieldName),
                \(asset.user), \(asset.size), \(asset.checksum), \(asset.created), \(asset.unheldSince))
                ON CONFLICT (id) DO UPDATE SET zone_id = excluded.zone_id, record_name = excluded.record_name,
                field_name = excluded.field_name, user_name = excluded.user_name, size = excluded.size,
                checksum = excluded.checksum, created = excluded.created, unheld_since = excluded.unheld_since
            """)
    }

    func assets(ids: [String]) async throws -> [StoredAsset] {
        guard !ids.isEmpty else { return [] }
        let rows = try await query(
            """
            SELECT id, zone_id, record_name, field_name, user_name, size, checksum, created, unheld_since
                FROM assets WHERE id = ANY(\(ids))
            """)
        return try rows.map { row in
            try read(row, table: "assets") { columns in
                StoredAsset(
                    id: try columns.value("id"), zone: try columns.value("zone_id"),
                    recordName: try columns.value("record_name"), fieldName: try columns.value("field_name"),
                    user: try columns.value("user_name"), size: try columns.optional("size"),
                    checksum: try columns.optional("checksum"), created: try columns.value("created"),
                    unheldSince: try columns.optional("unheld_since"))
            }
        }
    }

    func deleteAssets(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await query("DELETE FROM assets WHERE id = ANY(\(ids))")
    }

    func holdAssets(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await query("UPDATE assets SET unheld_since = NULL WHERE id = ANY(\(ids))")
    }

    func releaseAssets(ids: [String], at time: Int64) async throws {
        guard !ids.isEmpty else { return }
        try await query("UPDATE assets SET unheld_since = \(time) WHERE unheld_since IS NULL AND id = ANY(\(ids))")
    }

    func releaseAssets(inZone zone: Int64, at time: Int64) async throws {
        try await query("UPDATE assets SET unheld_since = \(time) WHERE zone_id = \(zone) AND unheld_since IS NULL")
    }

    func unheldAssets(since cutoff: Int64, limit: Int) async throws -> [String] {
        let rows = try await query(
            "SELECT id FROM assets WHERE unheld_since <= \(cutoff) ORDER BY unheld_since, id LIMIT \(limit)")
        return try rows.map { row in try read(row, table: "assets") { try $0.value("id") } }
    }

    func createAssetReceipt(_ receipt: StoredAssetReceipt) async throws {
        try await query(
            """
            INSERT INTO asset_receipts (id, asset_id, zone_id, record_name, field_name, user_name, expires)
                VALUES (\(receipt.id), \(receipt.asset), \(receipt.zone), \(receipt.recordName), \(receipt.fieldName),
                \(receipt.user), \(receipt.expires))
            """)
    }

    func assetReceipts(ids: [String]) async throws -> [StoredAssetReceipt] {
        guard !ids.isEmpty else { return [] }
        let rows = try await query(
            """
            SELECT id, asset_id, zone_id, record_name, field_name, user_name, expires FROM asset_receipts
                WHERE id = ANY(\(ids))
            """)
        return try rows.map { row in
            try read(row, table: "asset_receipts") { columns in
                StoredAssetReceipt(
                    id: try columns.value("id"), asset: try columns.value("asset_id"),
                    zone: try columns.value("zone_id"), recordName: try columns.value("record_name"),
                    fieldName: try columns.value("field_name"), user: try columns.value("user_name"),
                    expires: try columns.value("expires"))
            }
        }
    }

    func deleteExpiredUploads(at time: Int64) async throws {
        try await query("DELETE FROM asset_upload_tickets WHERE expires <= \(time)")
        try await query("DELETE FROM asset_receipts WHERE expires <= \(time)")
    }
}
