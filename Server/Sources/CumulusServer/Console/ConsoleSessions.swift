import CumulusServerCore
import Foundation

/// A signed-in operator: which token signed in, and the secret that every
/// change's form carries.
public struct ConsoleSession: Sendable, Hashable {
    /// The session's identifier, the cookie's value: 32 random bytes as hexadecimal.
    public let id: String
    /// The ID of the console token that signed in (``StoredConsoleToken/id``), for the log.
    public let tokenID: String
    /// The per-session token every POST carries in a hidden field.
    public let csrfToken: String
    /// When it signed in.
    public let created: Date
    /// When a page last used it.
    public var lastUsed: Date
}

/// The console's sessions, kept in this server's memory: a session works on
/// the server that made it and ends when it restarts.
///
/// Every lookup checks the session's age, its idle time and that its token
/// is still in the store, so revoking a token ends its sessions at their
/// next page, on every server.
public final class ConsoleSessions: Sendable {
    private let configuration: ConsoleConfiguration
    private let service: CloudService
    private let sessions = LockedState<[String: ConsoleSession]>([:])

    /// Sessions of the console tokens `service`'s store holds.
    public init(configuration: ConsoleConfiguration, service: CloudService) {
        self.configuration = configuration
        self.service = service
    }

    /// Signs in with a console token: a new session, or `nil` for a token
    /// the store does not hold.
    public func signIn(token: String) async throws -> ConsoleSession? {
        guard let found = try await service.consoleToken(matching: token) else { return nil }
        let now = configuration.now()
        let session = ConsoleSession(
            id: ServerSecrets.randomHex(bytes: 32), tokenID: found.id, csrfToken: ServerSecrets.randomHex(bytes: 32),
            created: now, lastUsed: now)
        let limit = max(1, configuration.maximumSessions)
        sessions.withLock { sessions in
            // The oldest sessions give way, so that sign-ins cannot grow memory without bound.
            while sessions.count >= limit, let oldest = sessions.values.min(by: { $0.lastUsed < $1.lastUsed }) {
                sessions[oldest.id] = nil
            }
            sessions[session.id] = session
        }
        return session
    }

    /// The live session with this identifier, marked used now; `nil` for an
    /// unknown, expired or idle one, or one whose token was revoked (it is
    /// then forgotten).
    public func session(id: String) async throws -> ConsoleSession? {
        let now = configuration.now()
        let lifetime = Double(ServerTime.milliseconds(configuration.sessionLifetime)) / 1000
        let idle = Double(ServerTime.milliseconds(configuration.sessionIdleLimit)) / 1000
        let found: ConsoleSession? = sessions.withLock { sessions in
            // Looked up by every stored key compared in constant time: the cookie is a secret.
            guard let key = sessions.keys.first(where: { ServerSecrets.constantTimeEquals($0, id) }),
                var session = sessions[key]
            else { return nil }
            guard now.timeIntervalSince(session.created) < lifetime, now.timeIntervalSince(session.lastUsed) < idle
            else {
                sessions[key] = nil
                return nil
            }
            session.lastUsed = now
            sessions[key] = session
            return session
        }
        guard let found else { return nil }
        guard try await service.consoleTokens().contains(where: { $0.id.isExactly(found.tokenID) }) else {
            end(id: found.id)
            return nil
        }
        return found
    }

    /// Ends a session (signing out).
    public func end(id: String) {
        sessions.withLock { sessions in
            sessions = sessions.filter { !ServerSecrets.constantTimeEquals($0.key, id) }
        }
    }

    /// How many sessions are kept, live or not yet found expired.
    public var count: Int { sessions.withLock { $0.count } }
}
