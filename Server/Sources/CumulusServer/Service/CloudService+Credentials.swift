import CloudCodable
import CloudProtocol
import Crypto
import Foundation

/// A user taken out of a container by ``CloudService/removeUser(named:container:deletingData:)``.
public struct RemovedUser: Sendable, Hashable {
    /// The user's record name.
    public var recordName: String
    /// How many web auth tokens were revoked.
    public var revokedTokens: Int
    /// What was deleted of the user's data; `nil` when it was kept.
    public var deletion: UserDataDeletion?
}

/// A registered server-to-server key as ``CloudService/serverKeys(container:)`` lists it.
public struct ServerKeyListing: Sendable, Hashable {
    /// The key ID requests name it by.
    public var id: String
    /// The SHA-256 of the public key's DER (SubjectPublicKeyInfo), as
    /// lowercase hexadecimal: what `openssl pkey -pubin -outform DER | sha256sum` prints.
    public var fingerprint: String
}

extension CloudService {
    // MARK: Users

    /// The container's users by name, with how many web auth tokens of
    /// each work, their names, and the identities they sign in with
    /// (``StoredUserAccount/identities``, ``StoredUserAccount/isBlocked``).
    public func users(container: String) async throws -> [StoredUserAccount] {
        try NameRules.check(container, "the container name")
        let now = ServerTime.milliseconds(rules.currentDate())
        return try await storage.read { transaction in
            guard try await transaction.containerTokenHash(named: container) != nil else {
                throw Self.unknownContainer(container)
            }
            var identities: [ExactName: [StoredIdentity]] = [:]
            for identity in try await transaction.identities(container: container) {
                identities[ExactName(identity.userRecordName), default: []].append(identity)
            }
            let blocked = Set(
                try await transaction.blockedIdentities(container: container).map {
                    [ExactName($0.issuer), ExactName($0.subject)]
                })
            return try await transaction.userAccounts(container: container, activeAt: now).map { account in
                var account = account
                account.identities = identities[ExactName(account.recordName)] ?? []
                account.isBlocked = account.identities.contains {
                    blocked.contains([ExactName($0.issuer), ExactName($0.subject)])
                }
                return account
            }
        }
    }

    /// Takes a user out of a container: their web auth tokens stop working
    /// on every server at once, then, with `deletingData`, their data is
    /// deleted by the protocol's rules (``RecordService/deleteData(ofUser:container:)``),
    /// and last their row goes, so that a removal that failed half way is
    /// finished by running it again. Kept data stays as it is: the shares
    /// they own keep working for their participants, their public records
    /// stay (and only a key may change them no more than before).
    /// An unknown user throws `NOT_FOUND`.
    public func removeUser(named name: String, container: String, deletingData: Bool) async throws -> RemovedUser {
        try NameRules.check(name, "the user name")
        try NameRules.check(container, "the container name")
        let now = ServerTime.milliseconds(rules.currentDate())
        let (recordName, revoked) = try await storage.write { transaction -> (String, Int) in
            guard let account = try await transaction.userAccount(named: name, container: container, activeAt: now)
            else { throw Self.unknownUser(name, container: container) }
            let tokens = try await transaction.userTokens(ofUser: account.recordName, container: container)
            try await transaction.deleteUserTokens(hashes: tokens.map(\.tokenHash), container: container)
            // The identity provider's next sign-in of this subject makes a new user.
            _ = try await transaction.deleteIdentities(ofUser: account.recordName, container: container)
            if !deletingData {
                _ = try await transaction.deleteUser(recordName: account.recordName, container: container)
            }
            try await transaction.recordCredentialChange()
            return (account.recordName, tokens.count)
        }
        noteCredentialChange()
        guard deletingData else { return RemovedUser(recordName: recordName, revokedTokens: revoked, deletion: nil) }
        let deletion = try await rules.deleteData(ofUser: recordName, container: container)
        try await storage.write { transaction in
            _ = try await transaction.deleteUser(recordName: recordName, container: container)
        }
        return RemovedUser(recordName: recordName, revokedTokens: revoked, deletion: deletion)
    }

    // MARK: Web auth tokens

    /// Gives a user another web auth token (one per device), which stops
    /// working after `lifetime` (`nil`: never), and returns it with its row.
    /// An unknown user throws `NOT_FOUND`.
    public func addWebAuthToken(forUser name: String, container: String, lifetime: Duration?) async throws
        -> (webAuthToken: String, details: StoredUserToken)
    {
        try NameRules.check(name, "the user name")
        try NameRules.check(container, "the container name")
        if let lifetime { try Self.checkLifetime(lifetime) }
        let token = ServerSecrets.randomHex(bytes: 32)
        let now = ServerTime.milliseconds(rules.currentDate())
        let expires = lifetime.map { now &+ ServerTime.milliseconds($0) }
        let details = try await storage.write { transaction -> StoredUserToken in
            guard let account = try await transaction.userAccount(named: name, container: container, activeAt: now)
            else { throw Self.unknownUser(name, container: container) }
            let details = StoredUserToken(
                tokenHash: ServerSecrets.sha256Hex(token), userRecordName: account.recordName, created: now,
                expires: expires)
            try await transaction.saveUserToken(details, container: container)
            return details
        }
        return (token, details)
    }

    /// A user's web auth tokens, oldest first, expired ones included.
    /// An unknown user throws `NOT_FOUND`.
    public func webAuthTokens(ofUser name: String, container: String) async throws -> [StoredUserToken] {
        try NameRules.check(name, "the user name")
        try NameRules.check(container, "the container name")
        return try await storage.read { transaction in
            guard let account = try await transaction.userAccount(named: name, container: container, activeAt: 0)
            else { throw Self.unknownUser(name, container: container) }
            return try await transaction.userTokens(ofUser: account.recordName, container: container)
        }
    }

    /// Revokes one web auth token, given the token itself; it stops working
    /// on every server at once. An unknown token throws `NOT_FOUND`.
    @discardableResult
    public func revokeWebAuthToken(_ webAuthToken: String, container: String) async throws -> StoredUserToken {
        try NameRules.check(container, "the container name")
        let hash = ServerSecrets.sha256Hex(webAuthToken)
        return try await revokeTokens(container: container) { transaction in
            guard let token = try await transaction.userToken(tokenHash: hash, container: container) else {
                throw CloudError(.notFound, reason: "the container '\(container)' has no such web auth token")
            }
            return [token]
        }[0]
    }

    /// Revokes the web auth token with this ID (``StoredUserToken/id``).
    /// An unknown ID throws `NOT_FOUND`; an ID two tokens share, `BAD_REQUEST`.
    @discardableResult
    public func revokeWebAuthToken(id: String, container: String) async throws -> StoredUserToken {
        try NameRules.check(id, "the token ID")
        try NameRules.check(container, "the container name")
        return try await revokeTokens(container: container) { transaction in
            let tokens = try await transaction.userTokens(id: id, container: container)
            guard !tokens.isEmpty else {
                throw CloudError(.notFound, reason: "the container '\(container)' has no web auth token with ID \(id)")
            }
            guard tokens.count == 1 else {
                throw CloudError(.badRequest, reason: "two tokens have the ID \(id): revoke by token instead")
            }
            return tokens
        }[0]
    }

    /// Revokes every web auth token of a user, and returns them. An
    /// unknown user throws `NOT_FOUND`.
    @discardableResult
    public func revokeWebAuthTokens(ofUser name: String, container: String) async throws -> [StoredUserToken] {
        try NameRules.check(name, "the user name")
        try NameRules.check(container, "the container name")
        return try await revokeTokens(container: container) { transaction in
            guard let account = try await transaction.userAccount(named: name, container: container, activeAt: 0)
            else { throw Self.unknownUser(name, container: container) }
            return try await transaction.userTokens(ofUser: account.recordName, container: container)
        }
    }

    /// Deletes the tokens `find` chooses and records the change, in one transaction.
    private func revokeTokens(
        container: String, _ find: @escaping @Sendable (any StorageTransaction) async throws -> [StoredUserToken]
    ) async throws -> [StoredUserToken] {
        let tokens = try await storage.write { transaction in
            let tokens = try await find(transaction)
            guard !tokens.isEmpty else { return tokens }
            try await transaction.deleteUserTokens(hashes: tokens.map(\.tokenHash), container: container)
            try await transaction.recordCredentialChange()
            return tokens
        }
        if !tokens.isEmpty { noteCredentialChange() }
        return tokens
    }

    // MARK: API tokens and keys

    /// Gives a container a new API token and returns it; the previous one
    /// keeps working for `overlap` (none for `.zero`), then fails. A second
    /// rotation ends the first one's overlap at once. An unknown container
    /// throws `NOT_FOUND`.
    public func rotateAPIToken(container: String, overlap: Duration) async throws -> String {
        try NameRules.check(container, "the container name")
        guard overlap >= .zero else { throw CloudError(.badRequest, reason: "an overlap cannot be negative") }
        try Self.checkLifetime(max(overlap, .seconds(1)))
        let token = ServerSecrets.randomHex(bytes: 32)
        let ends = ServerTime.milliseconds(rules.currentDate()) &+ ServerTime.milliseconds(overlap)
        try await storage.write { transaction in
            guard let current = try await transaction.containerCredentials(named: container) else {
                throw Self.unknownContainer(container)
            }
            let rotated = StoredContainerCredentials(
                tokenHash: ServerSecrets.sha256Hex(token), previousTokenHash: overlap > .zero ? current.tokenHash : nil,
                previousTokenExpires: overlap > .zero ? ends : nil)
            _ = try await transaction.setContainerCredentials(rotated, named: container)
            try await transaction.recordCredentialChange()
        }
        noteCredentialChange()
        return token
    }

    /// The container's server-to-server keys, by ID. An unknown container throws `NOT_FOUND`.
    public func serverKeys(container: String) async throws -> [ServerKeyListing] {
        try NameRules.check(container, "the container name")
        let keys = try await storage.read { transaction in
            guard try await transaction.containerTokenHash(named: container) != nil else {
                throw Self.unknownContainer(container)
            }
            return try await transaction.serverKeys(container: container)
        }
        return keys.map { key in
            let der = (try? P256.Signing.PublicKey(pemRepresentation: key.publicKeyPEM))?.derRepresentation
            return ServerKeyListing(
                id: key.id, fingerprint: der.map { ServerSecrets.sha256Hex(bytes: Array($0)) } ?? "unreadable")
        }
    }

    /// Removes a server-to-server key; requests it signs fail on every
    /// server at once. An unknown key throws `NOT_FOUND`.
    public func removeServerKey(id: String, container: String) async throws {
        try NameRules.check(id, "the key ID")
        try NameRules.check(container, "the container name")
        try await storage.write { transaction in
            guard try await transaction.deleteServerKey(id: id, container: container) else {
                throw CloudError(.notFound, reason: "the container '\(container)' has no key \(id)")
            }
            try await transaction.recordCredentialChange()
        }
        noteCredentialChange()
    }

    // MARK: Authentication

    /// Whether `apiToken` is the container's API token, or the one it
    /// replaced while the overlap lasts (then valid until it ends).
    public func authenticateAPIToken(_ apiToken: String, container: String) async throws -> CredentialFinding<Void> {
        let stored = try await storage.read { transaction in
            try await transaction.containerCredentials(named: container)
        }
        guard let stored else { return .unknown }
        let hash = ServerSecrets.sha256Hex(apiToken)
        if ServerSecrets.constantTimeEquals(stored.tokenHash, hash) { return .valid((), until: nil) }
        guard let previous = stored.previousTokenHash, ServerSecrets.constantTimeEquals(previous, hash) else {
            return .unknown
        }
        guard let ends = stored.previousTokenExpires, ends > ServerTime.milliseconds(rules.currentDate()) else {
            return .expired
        }
        return .valid((), until: ServerTime.date(milliseconds: ends))
    }

    /// The user of a web auth token, and until when it works; an expired
    /// token answers ``CredentialFinding/expired``. The token of a user
    /// whose identity is blocked throws `ACCESS_DENIED`, as the identity's
    /// tokens do: only the token's holder learns it.
    public func authenticateWebAuthToken(_ webAuthToken: String, container: String) async throws
        -> CredentialFinding<String>
    {
        let hash = ServerSecrets.sha256Hex(webAuthToken)
        let (token, blocked) = try await storage.read { transaction -> (StoredUserToken?, Bool) in
            guard let token = try await transaction.userToken(tokenHash: hash, container: container) else {
                return (nil, false)
            }
            return (token, try await transaction.isUserBlocked(token.userRecordName, container: container))
        }
        guard let token else { return .unknown }
        guard !blocked else { throw Self.blockedIdentity }
        guard !token.isExpired(at: ServerTime.milliseconds(rules.currentDate())) else { return .expired }
        return .valid(token.userRecordName, until: token.expires.map(ServerTime.date(milliseconds:)))
    }

    /// The credential changes this service made or heard of, with the
    /// storage's epoch when another process may write it (SQLite: the
    /// `cumulus` command), read cheaply (``SQLiteStorage/credentialsEpoch()``).
    public func credentialsVersion() async throws -> CredentialsVersion {
        let stored = try await (storage as? SQLiteStorage)?.credentialsEpoch() ?? 0
        return CredentialsVersion(local: credentialChanges.withLock { $0 }, stored: stored)
    }

    /// Moves ``credentialsVersion()`` on, and has every waiting notification
    /// poll check its channel's credential again.
    func noteCredentialChange() {
        credentialChanges.withLock { $0 &+= 1 }
        rules.credentialsChanged()
    }

    // MARK: Helpers

    /// Refuses a lifetime that is not positive or longer than 100 years.
    static func checkLifetime(_ lifetime: Duration) throws {
        guard lifetime > .zero, lifetime <= .seconds(100 * 366 * 86_400) else {
            throw CloudError(.badRequest, reason: "a lifetime is more than 0 and at most 100 years")
        }
    }

    static func unknownUser(_ name: String, container: String) -> CloudError {
        CloudError(.notFound, reason: "the container '\(container)' has no user named '\(name)'")
    }
}
