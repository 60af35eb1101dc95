import CloudCodable
import CloudProtocol
import Foundation
import PostgresNIO

extension PostgresSchema {
    /// Version ten notices restores (``StoreRestores``): the identity the
    /// database last took itself for, none at first, so that the first
    /// server of this version renews the store once; and the credential
    /// each notification channel was opened with. The channels of before
    /// have none: they go, and their clients open new ones.
    static let restoresVersion: [PostgresQuery] = [
        "CREATE TABLE store_identity (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT)",
        "INSERT INTO store_identity (id, identity) VALUES (1, NULL)",
        "DELETE FROM notification_channels",
        "ALTER TABLE notification_channels ADD COLUMN credential TEXT",
    ]
}

extension PostgresTransaction {
    /// Locks the row in a write: servers that start together on a restored
    /// database renew it once, the later ones reading what the first wrote.
    func storeIdentity() async throws -> String? {
        let rows = try await query(
            "SELECT identity FROM store_identity WHERE id = 1\(unescaped: locking ? " FOR UPDATE" : "")")
        return try rows.first.flatMap { row in
            try read(row, table: "store_identity") { try $0.optional("identity", as: String.self) }
        }
    }

    func setStoreIdentity(_ identity: String) async throws {
        try await query(
            """
            INSERT INTO store_identity (id, identity) VALUES (1, \(identity))
                ON CONFLICT (id) DO UPDATE SET identity = excluded.identity
            """)
    }

    func renewIncarnations(below bound: Int64) async throws {
        // random() is in [0, 1): the floor of its multiple is in 0..<bound - 1.
        for table in ["databases", "zones"] {
            try await query(
                "UPDATE \(unescaped: table) SET incarnation = floor(random() * (\(bound) - 1))::bigint + 1")
        }
    }

    func deleteAllChannels() async throws {
        try await query("DELETE FROM notification_channels")
    }

    func deleteChannel(tokenHash: String) async throws {
        try await query("DELETE FROM notification_channels WHERE token_hash = \(tokenHash)")
    }
}

extension PostgresStorage {
    /// What this database is, as ``StoreRestores`` asks: its cluster's
    /// system identifier and its own OID. A dump restored into another
    /// database (or another cluster) differs in one; a restart keeps both.
    /// A role that may not read the cluster's identifier goes by the OID.
    func databaseIdentity() async throws -> String {
        let oid = try await read { transaction in
            let rows = try await Self.restoreStatements(of: transaction).query(
                "SELECT oid::bigint AS oid FROM pg_database WHERE datname = current_database()")
            guard let row = rows.first else {
                throw CloudError(.internalError, reason: "the PostgreSQL database has no row in pg_database")
            }
            return try PostgresColumns(row, table: "pg_database").value("oid", as: Int64.self)
        }
        var system = "-"
        do {
            system = try await read { transaction in
                let rows = try await Self.restoreStatements(of: transaction).query(
                    "SELECT system_identifier::text AS system FROM pg_control_system()")
                guard let row = rows.first else { return "-" }
                return try PostgresColumns(row, table: "pg_control_system").value("system", as: String.self)
            }
        } catch let error as CloudError where error.code != .tryAgainLater {
            // Not allowed to read it (a managed server, say): the OID alone.
        }
        return "postgres:\(system):\(oid)"
    }

    private static func restoreStatements(of transaction: any StorageTransaction) throws -> PostgresTransaction {
        guard let transaction = transaction as? PostgresTransaction else {
            throw CloudError(.internalError, reason: "a PostgreSQL storage ran a transaction of another store")
        }
        return transaction
    }
}
