import CloudCodable
import CloudProtocol
import Foundation
import SQLiteNIO

extension SQLiteTransaction {
    // MARK: Identity issuers and identities

    func identityIssuers(container: String) async throws -> [StoredIdentityIssuer] {
        let rows = try await query(
            "SELECT \(SQLiteColumns.exact(["issuer", "audiences", "jwks_url", "jwks"])) FROM identity_issuers "
                + "WHERE container = ? ORDER BY issuer",
            [.text(container)])
        return try rows.map { row in
            try read(row, table: "identity_issuers") { columns in
                StoredIdentityIssuer(
                    issuer: try columns.text("issuer"),
                    audiences: try Self.audiences(fromJSON: try columns.text("audiences"), columns: columns),
                    keySetURL: try columns.optionalText("jwks_url"), keySet: try columns.optionalText("jwks"))
            }
        }
    }

    func saveIdentityIssuer(_ issuer: StoredIdentityIssuer, container: String) async throws {
        let audiences = String(decoding: try JSONEncoder().encode(issuer.audiences), as: UTF8.self)
        try await query(
            "INSERT OR REPLACE INTO identity_issuers (container, issuer, audiences, jwks_url, jwks) "
                + "VALUES (?, ?, ?, ?, ?)",
            [
                .text(container), .text(issuer.issuer), .text(audiences),
                issuer.keySetURL.map(SQLiteData.text) ?? .null, issuer.keySet.map(SQLiteData.text) ?? .null,
            ])
    }

    func deleteIdentityIssuer(_ issuer: String, container: String) async throws -> Bool {
        try await !query(
            "DELETE FROM identity_issuers WHERE container = ? AND issuer = ? RETURNING 1",
            [.text(container), .text(issuer)]
        ).isEmpty
    }

    func identityUser(issuer: String, subject: String, container: String) async throws -> String? {
        let rows = try await query(
            "SELECT \(SQLiteColumns.exact("user_record_name")) FROM user_identities "
                + "WHERE container = ? AND issuer = ? AND subject = ?",
            [.text(container), .text(issuer), .text(subject)])
        return try rows.first.map { row in
            try read(row, table: "user_identities") { try $0.text("user_record_name") }
        }
    }

    func createIdentity(issuer: String, subject: String, userRecordName: String, container: String) async throws
        -> Bool
    {
        try await !query(
            "INSERT OR IGNORE INTO user_identities (container, issuer, subject, user_record_name) "
                + "VALUES (?, ?, ?, ?) RETURNING 1",
            [.text(container), .text(issuer), .text(subject), .text(userRecordName)]
        ).isEmpty
    }

    func deleteIdentities(ofUser userRecordName: String, container: String) async throws -> Int {
        try await query(
            "DELETE FROM user_identities WHERE container = ? AND user_record_name = ? RETURNING 1",
            [.text(container), .text(userRecordName)]
        ).count
    }

    func identities(container: String) async throws -> [StoredIdentity] {
        let rows = try await query(
            "SELECT \(SQLiteColumns.exact(["issuer", "subject", "user_record_name"])) FROM user_identities "
                + "WHERE container = ?",
            [.text(container)])
        return try rows.map { row in
            try read(row, table: "user_identities") { columns in
                StoredIdentity(
                    issuer: try columns.text("issuer"), subject: try columns.text("subject"),
                    userRecordName: try columns.text("user_record_name"))
            }
        }.sorted { (ExactName($0.issuer), ExactName($0.subject)) < (ExactName($1.issuer), ExactName($1.subject)) }
    }

    // MARK: Blocked identities

    func blockIdentity(_ identity: StoredBlockedIdentity, container: String) async throws -> Bool {
        try await !query(
            "INSERT OR IGNORE INTO blocked_identities (container, issuer, subject, blocked) VALUES (?, ?, ?, ?) "
                + "RETURNING 1",
            [.text(container), .text(identity.issuer), .text(identity.subject), .integer(Int(identity.blocked))]
        ).isEmpty
    }

    func unblockIdentity(issuer: String, subject: String, container: String) async throws -> Bool {
        try await !query(
            "DELETE FROM blocked_identities WHERE container = ? AND issuer = ? AND subject = ? RETURNING 1",
            [.text(container), .text(issuer), .text(subject)]
        ).isEmpty
    }

    func isIdentityBlocked(issuer: String, subject: String, container: String) async throws -> Bool {
        try await !query(
            "SELECT 1 FROM blocked_identities WHERE container = ? AND issuer = ? AND subject = ?",
            [.text(container), .text(issuer), .text(subject)]
        ).isEmpty
    }

    func isUserBlocked(_ userRecordName: String, container: String) async throws -> Bool {
        try await !query(
            """
            SELECT 1 FROM user_identities AS i JOIN blocked_identities AS b ON b.container = i.container
                AND b.issuer = i.issuer AND b.subject = i.subject
                WHERE i.container = ? AND i.user_record_name = ? LIMIT 1
            """, [.text(container), .text(userRecordName)]
        ).isEmpty
    }

    func blockedIdentities(container: String) async throws -> [StoredBlockedIdentity] {
        let rows = try await query(
            "SELECT \(SQLiteColumns.exact(["issuer", "subject"])), blocked FROM blocked_identities WHERE container = ?",
            [.text(container)])
        return try rows.map { row in
            try read(row, table: "blocked_identities") { columns in
                StoredBlockedIdentity(
                    issuer: try columns.text("issuer"), subject: try columns.text("subject"),
                    blocked: try columns.integer("blocked"))
            }
        }.sorted { (ExactName($0.issuer), ExactName($0.subject)) < (ExactName($1.issuer), ExactName($1.subject)) }
    }

    /// The audiences column: a JSON array of strings, or an impossible row.
    private static func audiences(fromJSON text: String, columns: SQLiteColumns) throws -> [String] {
        guard let audiences = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else {
            throw columns.impossible("audiences", "is not a JSON array of strings")
        }
        return audiences
    }
}
