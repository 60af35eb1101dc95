import CloudCodable
import CloudProtocol

extension RecordService {
    /// Whether an issuer's subject is kept out of a container (`cumulus user
    /// block`): its identity tokens are refused on every server.
    public func isIdentityBlocked(issuer: String, subject: String, container: String) async throws -> Bool {
        try await storage.read { transaction in
            try await transaction.isIdentityBlocked(issuer: issuer, subject: subject, container: container)
        }
    }

    /// Whether a user of a container signs in with a blocked identity: a
    /// user the operator made (who has no identity) never does.
    public func isUserBlocked(_ userRecordName: String, container: String) async throws -> Bool {
        try await storage.read { transaction in
            try await transaction.isUserBlocked(userRecordName, container: container)
        }
    }
}
