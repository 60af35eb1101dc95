import CloudCodable
import CloudProtocol
import Foundation

extension CloudService {
    /// Makes a console token and returns it with its row: only its hash is
    /// stored, so every server on the same store signs in with it.
    public func addConsoleToken(label: String) async throws -> (token: String, details: StoredConsoleToken) {
        let token = ServerSecrets.randomHex(bytes: 32)
        let hash = ServerSecrets.sha256Hex(token)
        let details = StoredConsoleToken(
            tokenHash: hash, id: String(hash.prefix(16)), label: label,
            created: ServerTime.milliseconds(rules.currentDate()))
        try await storage.write { try await $0.saveConsoleToken(details) }
        return (token, details)
    }

    /// The console tokens, oldest first (never the tokens themselves).
    public func consoleTokens() async throws -> [StoredConsoleToken] {
        try await storage.read { try await $0.consoleTokens() }
    }

    /// Deletes the console token with this ID and returns it; `nil` when there is none.
    public func revokeConsoleToken(id: String) async throws -> StoredConsoleToken? {
        try await storage.write { transaction in
            guard let token = try await transaction.consoleTokens().first(where: { $0.id.isExactly(id) }) else {
                return nil
            }
            _ = try await transaction.deleteConsoleToken(id: token.id)
            return token
        }
    }

    /// The console token `token` is, or `nil`: hashes compared in constant time.
    public func consoleToken(matching token: String) async throws -> StoredConsoleToken? {
        let hash = ServerSecrets.sha256Hex(token)
        return try await consoleTokens().first { ServerSecrets.constantTimeEquals($0.tokenHash, hash) }
    }
}
