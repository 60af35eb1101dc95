import CloudCodable
import CloudProtocol
import Foundation

extension CloudService {
    /// Lets an identity provider's tokens sign users in to a container, or
    /// replaces the container's issuer of the same name. Every server on
    /// the storage uses it at its next request: the change moves the
    /// credentials epoch on, so each server reads the issuers again (a
    /// replaced issuer may trust less than before).
    ///
    /// The issuer and each audience are compared as exact bytes. The keys
    /// are a JWKS document stored with the issuer (``StoredIdentityIssuer/keySet``,
    /// checked here) or the URL each server fetches them from
    /// (``StoredIdentityIssuer/keySetURL``: https, or http on a loopback host).
    ///
    /// - Returns: How many keys of a stored key set tokens may be signed
    ///   with (keys without a `kid`, for encryption or of unknown types are
    ///   left out); `nil` for a key set URL.
    /// - Throws: ``CloudError``: `BAD_REQUEST` for an empty issuer, no
    ///   audience, an empty one, a name holding U+0000, a key set that is
    ///   not usable, or not exactly one of key set and URL; `NOT_FOUND` for
    ///   an unknown container.
    @discardableResult
    public func addIdentityIssuer(_ issuer: StoredIdentityIssuer, container: String) async throws -> Int? {
        var issuer = issuer
        try NameRules.check(container, "the container name")
        guard !issuer.issuer.isEmpty else { throw CloudError(.badRequest, reason: "an issuer needs a name") }
        try NameRules.check(issuer.issuer, "the issuer")
        var seen = Set<ExactName>()
        issuer.audiences = issuer.audiences.filter { seen.insert(ExactName($0)).inserted }
        guard !issuer.audiences.isEmpty, !issuer.audiences.contains(where: \.isEmpty) else {
            throw CloudError(.badRequest, reason: "an issuer needs at least one audience, none of them empty")
        }
        for audience in issuer.audiences { try NameRules.check(audience, "an audience") }
        var keyCount: Int?
        switch (issuer.keySetURL, issuer.keySet) {
        case (let url?, nil): try Self.checkKeySetURL(url)
        case (nil, let document?): keyCount = try await IdentityKeySet.parse(document).keyIDs.count
        default: throw CloudError(.badRequest, reason: "an issuer needs either a key set or a key set URL")
        }
        let stored = issuer
        let known = try await storage.write { transaction -> Bool in
            guard try await transaction.containerTokenHash(named: container) != nil else { return false }
            try await transaction.saveIdentityIssuer(stored, container: container)
            try await transaction.recordCredentialChange()
            return true
        }
        guard known else { throw CloudError(.notFound, reason: "there is no container named '\(container)'") }
        noteCredentialChange()
        return keyCount
    }

    /// The identity issuers of a container, by issuer.
    public func identityIssuers(container: String) async throws -> [StoredIdentityIssuer] {
        try await storage.read { transaction in try await transaction.identityIssuers(container: container) }
    }

    /// Stops an issuer's tokens signing users in to a container, at once on
    /// every server: it counts as a credential taken away, so what servers
    /// trusted is checked again and the notification channels opened with
    /// its tokens end. Its users and their identities stay: adding the
    /// issuer again signs them in as before. Returns `false` when the
    /// container has no such issuer.
    @discardableResult
    public func removeIdentityIssuer(_ issuer: String, container: String) async throws -> Bool {
        let removed = try await storage.write { transaction in
            let removed = try await transaction.deleteIdentityIssuer(issuer, container: container)
            if removed { try await transaction.recordCredentialChange() }
            return removed
        }
        if removed { noteCredentialChange() }
        return removed
    }

    /// Deletes every identity that signs in as a user, and returns how many
    /// there were: the user's next token of any issuer creates a new user.
    /// For removing a user.
    @discardableResult
    public func deleteIdentities(ofUser userRecordName: String, container: String) async throws -> Int {
        try await storage.write { transaction in
            try await transaction.deleteIdentities(ofUser: userRecordName, container: container)
        }
    }

    // MARK: Blocking

    /// Keeps an issuer's subject out of a container, on every server at
    /// once: its identity tokens, cached ones included, answer
    /// `ACCESS_DENIED`, a first sign-in of it creates no user, and the web
    /// auth tokens of the user it signs in as stop working too. The user's
    /// data stays as it is (their shares keep working for their
    /// participants); ``unblockIdentity(issuer:subject:container:)`` lets
    /// them in again as the same user. The subject need not have signed in yet.
    ///
    /// - Returns: The record name of the user the subject signs in as, if
    ///   it has signed in, and whether it was blocked already.
    /// - Throws: ``CloudError``: `BAD_REQUEST` for an empty issuer or
    ///   subject or a name holding U+0000; `NOT_FOUND` for an unknown container.
    @discardableResult
    public func blockIdentity(issuer: String, subject: String, container: String) async throws
        -> (userRecordName: String?, wasBlocked: Bool)
    {
        try Self.checkIdentity(issuer: issuer, subject: subject, container: container)
        let row = StoredBlockedIdentity(
            issuer: issuer, subject: subject, blocked: ServerTime.milliseconds(rules.currentDate()))
        let outcome = try await storage.write { transaction -> (String?, Bool) in
            guard try await transaction.containerTokenHash(named: container) != nil else {
                throw Self.unknownContainer(container)
            }
            let user = try await transaction.identityUser(issuer: issuer, subject: subject, container: container)
            guard try await transaction.blockIdentity(row, container: container) else { return (user, true) }
            try await transaction.recordCredentialChange()
            return (user, false)
        }
        if !outcome.1 { noteCredentialChange() }
        return (outcome.0, outcome.1)
    }

    /// Lets a blocked issuer's subject in again: its next token signs in as
    /// the user it signed in as before. Returns `false` when it was not blocked.
    @discardableResult
    public func unblockIdentity(issuer: String, subject: String, container: String) async throws -> Bool {
        try Self.checkIdentity(issuer: issuer, subject: subject, container: container)
        return try await storage.write { transaction in
            try await transaction.unblockIdentity(issuer: issuer, subject: subject, container: container)
        }
    }

    /// The blocked issuers' subjects of a container, by issuer and subject.
    /// An unknown container throws `NOT_FOUND`.
    public func blockedIdentities(container: String) async throws -> [StoredBlockedIdentity] {
        try NameRules.check(container, "the container name")
        return try await storage.read { transaction in
            guard try await transaction.containerTokenHash(named: container) != nil else {
                throw Self.unknownContainer(container)
            }
            return try await transaction.blockedIdentities(container: container)
        }
    }

    /// Whether an issuer's subject is kept out of a container (see
    /// ``RecordService/isIdentityBlocked(issuer:subject:container:)``).
    public func isIdentityBlocked(issuer: String, subject: String, container: String) async throws -> Bool {
        try await rules.isIdentityBlocked(issuer: issuer, subject: subject, container: container)
    }

    private static func checkIdentity(issuer: String, subject: String, container: String) throws {
        try NameRules.check(container, "the container name")
        try NameRules.check(issuer, "the issuer")
        try NameRules.check(subject, "the subject")
        guard !issuer.isEmpty, !subject.isEmpty else {
            throw CloudError(.badRequest, reason: "an identity needs an issuer and a subject")
        }
    }

    /// A key set URL each server can fetch: absolute http(s) with a host,
    /// and plain http only on a loopback host, where no one can change the keys on the way.
    static func checkKeySetURL(_ text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty
        else {
            throw CloudError(.badRequest, reason: "the key set URL is not an absolute URL with a host")
        }
        let loopback = host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw CloudError(.badRequest, reason: "the key set URL must be https (http only on a loopback host)")
        }
    }
}
