import CloudCodable
import CloudProtocol
import Foundation
import SQLiteNIO

extension SQLiteSchema {
    /// Version eleven notices restores (``StoreRestores``): the identity the
    /// file last took itself for, none at first, so that the first server
    /// of this version renews the store once; and the credential each
    /// notification channel was opened with. The channels of before have
    /// none: they go, and their clients open new ones.
    static let restoresVersion = [
        "CREATE TABLE store_identity (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT)",
        "INSERT INTO store_identity (id, identity) VALUES (1, NULL)",
        "DELETE FROM notification_channels",
        "ALTER TABLE notification_channels ADD COLUMN credential TEXT",
    ]
}

extension SQLiteTransaction {
    func storeIdentity() async throws -> String? {
        let rows = try await query("SELECT \(SQLiteColumns.exact("identity")) FROM store_identity WHERE id = 1")
        return try rows.first.flatMap { row in
            try read(row, table: "store_identity") { try $0.optionalText("identity") }
        }
    }

    func setStoreIdentity(_ identity: String) async throws {
        try await query(
            "INSERT INTO store_identity (id, identity) VALUES (1, ?) "
                + "ON CONFLICT (id) DO UPDATE SET identity = excluded.identity", [.text(identity)])
    }

    func renewIncarnations(below bound: Int64) async throws {
        // random() & (2^53 - 1) is never negative; the rest puts it in 1..<bound.
        for table in ["databases", "zones"] {
            try await query(
                "UPDATE \(table) SET incarnation = (random() & 9007199254740991) % (? - 1) + 1",
                [.integer(Int(bound))])
        }
    }

    func deleteAllChannels() async throws {
        try await query("DELETE FROM notification_channels")
    }

    func deleteChannel(tokenHash: String) async throws {
        try await query("DELETE FROM notification_channels WHERE token_hash = ?", [.text(tokenHash)])
    }
}

extension SQLiteStorage {
    /// What this file is, as ``StoreRestores`` asks: its device and inode.
    /// A restore (``SQLiteBackup``) renames a copy into place, which is
    /// another inode; a restart, a checkpoint or a `VACUUM` keeps it.
    static func fileIdentity(of path: String) throws -> String {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw CloudError(.internalError, reason: "the database file cannot be examined (errno \(errno))")
        }
        return "sqlite:\(status.st_dev):\(status.st_ino)"
    }
}
