import CloudProtocol
import CumulusServerCore
import Foundation

/// A console token as the store keeps it: its hash, never the token.
public struct ConsoleToken: Sendable, Hashable, Codable {
    /// The SHA-256 of the token, as lowercase hexadecimal (``ServerSecrets/sha256Hex(_:)``).
    public var tokenHash: String
    /// The token's ID: the first 16 characters of its hash, shown in lists
    /// and logs and used to revoke it.
    public var id: String
    /// What the operator called it (who holds it).
    public var label: String
    /// When it was made, in milliseconds since 1970.
    public var created: Int64
}

/// The operator's console tokens, kept in one JSON file of the data
/// directory (mode 0600), hashed.
///
/// A file rather than a table: every read goes to the file, so a token the
/// `cumulus console` command adds or revokes counts at once for the server
/// of that data directory. Servers that share one PostgreSQL database each
/// read their own data directory's file: a token works on the servers whose
/// file holds it, and is revoked on each.
public struct ConsoleTokenStore: Sendable {
    /// The file's path.
    public let path: String

    /// A store kept at `path`; the file is made by the first ``add(label:now:)``.
    public init(path: String) {
        self.path = path
    }

    /// Every token, oldest first; none when the file does not exist.
    public func tokens() throws -> [ConsoleToken] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        do {
            return try JSONDecoder().decode([ConsoleToken].self, from: data)
        } catch {
            throw CloudError(.internalError, reason: "the console token file \(path) is damaged: \(error)")
        }
    }

    /// Makes a token and returns it with its row: only the hash is written.
    public func add(label: String, now: Date = Date()) throws -> (token: String, details: ConsoleToken) {
        let token = ServerSecrets.randomHex(bytes: 32)
        let hash = ServerSecrets.sha256Hex(token)
        let details = ConsoleToken(
            tokenHash: hash, id: String(hash.prefix(16)), label: label, created: ServerTime.milliseconds(now))
        try write(try tokens() + [details])
        return (token, details)
    }

    /// Deletes the token with this ID; `nil` when there is none.
    public func revoke(id: String) throws -> ConsoleToken? {
        var tokens = try tokens()
        guard let index = tokens.firstIndex(where: { ServerSecrets.constantTimeEquals($0.id, id) }) else { return nil }
        let revoked = tokens.remove(at: index)
        try write(tokens)
        return revoked
    }

    /// The token whose hash is the hash of `token`, or `nil`: the hashes
    /// are compared in constant time.
    public func token(matching token: String) throws -> ConsoleToken? {
        let hash = ServerSecrets.sha256Hex(token)
        return try tokens().first { ServerSecrets.constantTimeEquals($0.tokenHash, hash) }
    }

    /// Whether a token with this ID is still in the file.
    public func holds(id: String) throws -> Bool {
        try tokens().contains { ServerSecrets.constantTimeEquals($0.id, id) }
    }

    private func write(_ tokens: [ConsoleToken]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        // Written whole to a new file renamed over the old, so a reader never sees half a file.
        let temporary = path + ".new"
        try? FileManager.default.removeItem(atPath: temporary)
        try PrivateFiles.writeFile(Array(try encoder.encode(tokens)), to: temporary)
        guard rename(temporary, path) == 0 else {
            throw CloudError(.internalError, reason: "cannot replace \(path): \(String(cString: strerror(errno)))")
        }
    }
}
