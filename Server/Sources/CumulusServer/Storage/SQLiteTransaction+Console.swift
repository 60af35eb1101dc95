import CloudCodable
import CloudProtocol
import Foundation
import SQLiteNIO

extension SQLiteSchema {
    /// Version twelve keeps the operator's console tokens, hashed, in the
    /// store: the `cumulus console` command adds and revokes them beside a
    /// running server, which reads them on every sign-in and page.
    static let consoleVersion = [
        """
        CREATE TABLE console_tokens (token_hash TEXT PRIMARY KEY, id TEXT NOT NULL, label TEXT NOT NULL,
            created INTEGER NOT NULL)
        """
    ]
}

extension SQLiteTransaction {
    func consoleTokens() async throws -> [StoredConsoleToken] {
        let rows = try await query(
            "SELECT \(SQLiteColumns.exact(["token_hash", "id", "label"])), created FROM console_tokens "
                + "ORDER BY created, token_hash")
        return try rows.map { row in
            try read(row, table: "console_tokens") { columns in
                StoredConsoleToken(
                    tokenHash: try columns.text("token_hash"), id: try columns.text("id"),
                    label: try columns.text("label"), created: try columns.integer("created"))
            }
        }
    }

    func saveConsoleToken(_ token: StoredConsoleToken) async throws {
        try await query(
            "INSERT INTO console_tokens (token_hash, id, label, created) VALUES (?, ?, ?, ?)",
            [.text(token.tokenHash), .text(token.id), .text(token.label), .integer(Int(token.created))])
    }

    func deleteConsoleToken(id: String) async throws -> Bool {
        try await !query("DELETE FROM console_tokens WHERE id = ? RETURNING 1", [.text(id)]).isEmpty
    }
}
