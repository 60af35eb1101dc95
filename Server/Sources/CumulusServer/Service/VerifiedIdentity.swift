import CloudCodable
import CloudProtocol

/// Who an identity token proves its bearer is, once its signature and
/// claims are checked: an issuer's subject, the address the issuer
/// verified, if it sent one, and the name it gave, if any.
public struct VerifiedIdentity: Sendable, Hashable {
    /// The token's issuer (`iss`), one configured for the container.
    public var issuer: String
    /// The token's subject (`sub`): the issuer's stable identifier of the user.
    public var subject: String
    /// The token's `email` when its `email_verified` is true, else `nil`.
    public var verifiedEmailAddress: String?
    /// The name of the token's `given_name` and `family_name`, or of its
    /// `name`, as `UserNames.fromClaims(name:givenName:familyName:)` cleans
    /// them; `nil` when it has none, and the user keeps the name they had.
    public var nameComponents: UserNameComponents?

    /// Creates an identity.
    public init(
        issuer: String, subject: String, verifiedEmailAddress: String? = nil,
        nameComponents: UserNameComponents? = nil
    ) {
        self.issuer = issuer
        self.subject = subject
        self.verifiedEmailAddress = verifiedEmailAddress
        self.nameComponents = nameComponents
    }
}
