import CloudCodable
import CloudProtocol
import PostgresNIO

extension PostgresTransaction {
    // MARK: Identity issuers and identities

    func identityIssuers(container: String) async throws -> [StoredIdentityIssuer] {
        let rows = try await query(
            """
            SELECT issuer, audiences, jwks_url, jwks FROM identity_issuers WHERE container = \(container)
                ORDER BY issuer COLLATE "C"
            """)
        return try rows.map { row in
            try read(row, table: "identity_issuers") { columns in
                StoredIdentityIssuer(
                    issuer: try columns.value("issuer"), audiences: try columns.value("audiences"),
                    keySetURL: try columns.optional("jwks_url"), keySet: try columns.optional("jwks"))
            }
        }
    }

    func saveIdentityIssuer(_ issuer: StoredIdentityIssuer, container: String) async throws {
        try await query(
            """
            INSERT INTO identity_issuers (container, issuer, audiences, jwks_url, jwks)
                VALUES (\(container), \(issuer.issuer), \(issuer.audiences), \(issuer.keySetURL), \(issuer.keySet))
                ON CONFLICT (container, issuer) DO UPDATE SET audiences = EXCLUDED.audiences,
                jwks_url = EXCLUDED.jwks_url, jwks = EXCLUDED.jwks
            """)
    }

    func deleteIdentityIssuer(_ issuer: String, container: String) async throws -> Bool {
        try await !query(
            "DELETE FROM identity_issuers WHERE container = \(container) AND issuer = \(issuer) RETURNING 1"
        ).isEmpty
    }

    func identityUser(issuer: String, subject: String, container: String) async throws -> String? {
        let rows = try await query(
            """
            SELECT user_record_name FROM user_identities WHERE container = \(container) AND issuer = \(issuer)
                AND subject = \(subject)
            """)
        return try rows.first.map { row in
            try read(row, table: "user_identities") { try $0.value("user_record_name", as: String.self) }
        }
    }

    func createIdentity(issuer: String, subject: String, userRecordName: String, container: String) async throws
        -> Bool
    {
        // A concurrent first sign-in of the same subject waits here for the
        // other transaction's commit, then inserts nothing.
        try await !query(
            """
            INSERT INTO user_identities (container, issuer, subject, user_record_name)
                VALUES (\(container), \(issuer), \(subject), \(userRecordName)) ON CONFLICT DO NOTHING RETURNING 1
            """
        ).isEmpty
    }

    func deleteIdentities(ofUser userRecordName: String, container: String) async throws -> Int {
        try await query(
            """
            DELETE FROM user_identities WHERE container = \(container) AND user_record_name = \(userRecordName)
                RETURNING 1
            """
        ).count
    }

    func identities(container: String) async throws -> [StoredIdentity] {
        let rows = try await query(
            """
            SELECT issuer, subject, user_record_name FROM user_identities WHERE container = \(container)
                ORDER BY issuer COLLATE "C", subject COLLATE "C"
            """)
        return try rows.map { row in
            try read(row, table: "user_identities") { columns in
                StoredIdentity(
                    issuer: try columns.value("issuer"), subject: try columns.value("subject"),
                    userRecordName: try columns.value("user_record_name"))
            }
        }
    }

    // MARK: Blocked identities

    func blockIdentity(_ identity: StoredBlockedIdentity, container: String) async throws -> Bool {
        try await !query(
            """
            INSERT INTO blocked_identities (container, issuer, subject, blocked)
                VALUES (\(container), \(identity.issuer), \(identity.subject), \(identity.blocked))
                ON CONFLICT DO NOTHING RETURNING 1
            """
        ).isEmpty
    }

    func unblockIdentity(issuer: String, subject: String, container: String) async throws -> Bool {
        try await !query(
            """
            DELETE FROM blocked_identities WHERE container = \(container) AND issuer = \(issuer)
                AND subject = \(subject) RETURNING 1
            """
        ).isEmpty
    }

    func isIdentityBlocked(issuer: String, subject: String, container: String) async throws -> Bool {
        try await !query(
            """
            SELECT 1 FROM blocked_identities WHERE container = \(container) AND issuer = \(issuer)
                AND subject = \(subject)
            """
        ).isEmpty
    }

    func isUserBlocked(_ userRecordName: String, container: String) async throws -> Bool {
        try await !query(
            """
            SELECT 1 FROM user_identities AS i JOIN blocked_identities AS b ON b.container = i.container
                AND b.issuer = i.issuer AND b.subject = i.subject
                WHERE i.container = \(container) AND i.user_record_name = \(userRecordName) LIMIT 1
            """
        ).isEmpty
    }

    func blockedIdentities(container: String) async throws -> [StoredBlockedIdentity] {
        let rows = try await query(
            """
            SELECT issuer, subject, blocked FROM blocked_identities WHERE container = \(container)
                ORDER BY issuer COLLATE "C", subject COLLATE "C"
            """)
        return try rows.map { row in
            try read(row, table: "blocked_identities") { columns in
                StoredBlockedIdentity(
                    issuer: try columns.value("issuer"), subject: try columns.value("subject"),
                    blocked: try columns.value("blocked"))
            }
        }
    }
}
