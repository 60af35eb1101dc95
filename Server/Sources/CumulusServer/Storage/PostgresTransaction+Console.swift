import CloudCodable
import CloudProtocol
import Foundation
import PostgresNIO

extension PostgresSchema {
    /// Version eleven keeps the operator's console tokens, hashed, in the
    /// database: every server on it signs operators in with the same ones.
    static let consoleVersion: [PostgresQuery] = [
        """
        CREATE TABLE console_tokens (token_hash TEXT PRIMARY KEY, id TEXT NOT NULL, label TEXT NOT NULL,
            created BIGINT NOT NULL)
        """
    ]
}

extension PostgresTransaction {
    func consoleTokens() async throws -> [StoredConsoleToken] {
        let rows = try await query(
            "SELECT token_hash, id, label, created FROM console_tokens ORDER BY created, token_hash COLLATE \"C\"")
        return try rows.map { row in
            try read(row, table: "console_tokens") { columns in
                StoredConsoleToken(
                    tokenHash: try columns.value("token_hash"), id: try columns.value("id"),
                    label: try columns.value("label"), created: try columns.value("created"))
            }
        }
    }

    func saveConsoleToken(_ token: StoredConsoleToken) async throws {
        try await query(
            """
            INSERT INTO console_tokens (token_hash, id, label, created)
                VALUES (\(token.tokenHash), \(token.id), \(token.label), \(token.created))
            """)
    }

    func deleteConsoleToken(id: String) async throws -> Bool {
        try await !query("DELETE FROM console_tokens WHERE id = \(id) RETURNING 1").isEmpty
    }
}
