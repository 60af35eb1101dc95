import CloudCodable
import CloudProtocol
import Foundation

extension CloudService {
    /// The record name of the user an identity token signs in as: the user
    /// mapped from the container, issuer and subject (exact bytes), created
    /// on first sight with its own record name (`_` and 32 hexadecimal
    /// characters) as its user name and no web auth token. The
    /// token's verified address becomes the user's address, discoverable,
    /// and replaces an older one when the issuer's changes, unless another
    /// user holds it: an address stays with its first holder (see
    /// `EmailAddresses.assign`), and the user keeps what they had.
    ///
    /// The token's name (``VerifiedIdentity/nameComponents``), when it has
    /// one, becomes the user's at each sign-in, so that a name changed at
    /// the issuer shows from the user's next token on; a token without one
    /// leaves the user's name as it is.
    ///
    /// Concurrent first sign-ins of one subject, on one server or several,
    /// create one user: the mapping's primary key decides, and the losers
    /// read the winner's row.
    ///
    /// An identity the operator blocked (``blockIdentity(issuer:subject:container:)``)
    /// signs no one in, and a first sign-in of it creates no user.
    ///
    /// - Throws: ``CloudError``: `BAD_REQUEST` for an empty subject or a
    ///   name holding U+0000; `NOT_FOUND` for an unknown container;
    ///   `ACCESS_DENIED` for a blocked identity.
    public func signIn(_ identity: VerifiedIdentity, container: String) async throws -> String {
        try NameRules.check(container, "the container name")
        try NameRules.check(identity.issuer, "the issuer")
        try NameRules.check(identity.subject, "the subject")
        guard !identity.subject.isEmpty else { throw CloudError(.badRequest, reason: "an identity needs a subject") }
        let email = identity.verifiedEmailAddress.flatMap(EmailAddresses.normalized)
        let (blocked, found) = try await storage.read { transaction -> (Bool, StoredUser?) in
            if try await transaction.isIdentityBlocked(
                issuer: identity.issuer, subject: identity.subject, container: container)
            {
                return (true, nil)
            }
            guard
                let user = try await transaction.identityUser(
                    issuer: identity.issuer, subject: identity.subject, container: container)
            else { return (false, nil) }
            return (false, try await transaction.users(withRecordNames: [user], container: container).first)
        }
        guard !blocked else { throw Self.blockedIdentity }
        if let found {
            let newEmail = email.flatMap { found.emailAddress?.isExactly($0) ?? false ? nil : $0 }
            let newName = identity.nameComponents.flatMap { $0 == found.nameComponents ? nil : $0 }
            if newEmail != nil || newName != nil {
                try await storage.write { transaction in
                    if let newEmail {
                        try await Self.applyVerifiedEmail(
                            newEmail, to: found.recordName, container: container, in: transaction)
                    }
                    if let newName {
                        _ = try await transaction.setUserName(
                            newName, recordName: found.recordName, container: container)
                    }
                }
            }
            return found.recordName
        }
        return try await storage.write { transaction in
            try await Self.firstSignIn(identity, email: email, container: container, in: transaction)
        }
    }

    /// What a blocked identity's valid token answers. Only the holder of a
    /// token the issuer signed for the subject gets here, so saying why
    /// tells a stranger nothing; `ACCESS_DENIED` (the client's
    /// `AccountStatus.restricted`) rather than `AUTHENTICATION_FAILED`,
    /// which would send the client for a fresh token that fares no better.
    static let blockedIdentity = CloudError(
        .accessDenied, reason: "this account is blocked in this container; its operator can unblock it")

    /// The write of a first sign-in: the mapping, then the user it names.
    /// A mapping to a user that is gone is replaced.
    private static func firstSignIn(
        _ identity: VerifiedIdentity, email: String?, container: String, in transaction: any StorageTransaction
    ) async throws -> String {
        guard try await transaction.containerTokenHash(named: container) != nil else {
            throw CloudError(.notFound, reason: "there is no container named '\(container)'")
        }
        // A block that committed since the read keeps the identity out here too.
        guard
            try await !transaction.isIdentityBlocked(
                issuer: identity.issuer, subject: identity.subject, container: container)
        else { throw blockedIdentity }
        if let mapped = try await transaction.identityUser(
            issuer: identity.issuer, subject: identity.subject, container: container)
        {
            guard try await transaction.users(withRecordNames: [mapped], container: container).isEmpty else {
                if let email { try await applyVerifiedEmail(email, to: mapped, container: container, in: transaction) }
                if let name = identity.nameComponents {
                    _ = try await transaction.setUserName(name, recordName: mapped, container: container)
                }
                return mapped
            }
            _ = try await transaction.deleteIdentities(ofUser: mapped, container: container)
        }
        let recordName = "_" + ServerSecrets.randomHex(bytes: 16)
        guard
            try await transaction.createIdentity(
                issuer: identity.issuer, subject: identity.subject, userRecordName: recordName, container: container)
        else {
            // Another server's first sign-in committed meanwhile (PostgreSQL
            // waits for it, then reads its row): that user is the one.
            guard
                let winner = try await transaction.identityUser(
                    issuer: identity.issuer, subject: identity.subject, container: container)
            else { throw CloudError(.internalError, reason: "an identity's mapping vanished while it was made") }
            // The winner's token may have carried no address, or another one.
            if let email { try await applyVerifiedEmail(email, to: winner, container: container, in: transaction) }
            if let name = identity.nameComponents {
                _ = try await transaction.setUserName(name, recordName: winner, container: container)
            }
            return winner
        }
        guard try await transaction.createUser(named: recordName, recordName: recordName, container: container)
        else { throw CloudError(.internalError, reason: "a new user's name was taken") }
        if let name = identity.nameComponents {
            _ = try await transaction.setUserName(name, recordName: recordName, container: container)
        }
        if let email {
            _ = try await EmailAddresses.assign(
                email, discoverable: true, to: recordName, container: container, in: transaction)
        }
        return recordName
    }

    /// Gives an existing user the token's verified address unless they
    /// have it already or another user holds it; an address the user kept
    /// out of lookups stays out.
    private static func applyVerifiedEmail(
        _ email: String, to recordName: String, container: String, in transaction: any StorageTransaction
    ) async throws {
        guard let user = try await transaction.users(withRecordNames: [recordName], container: container).first,
            !(user.emailAddress?.isExactly(email) ?? false)
        else { return }
        _ = try await EmailAddresses.assign(
            email, discoverable: user.emailAddress == nil || user.isDiscoverable, to: recordName,
            container: container, in: transaction)
    }
}
