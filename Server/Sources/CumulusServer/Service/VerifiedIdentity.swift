/// Who an identity token proves its bearer is, once its signature and
/// claims are checked: an issuer's subject, and the address the issuer
/// verified, if it sent one.
public struct VerifiedIdentity: Sendable, Hashable {
    /// The token's issuer (`iss`), one configured for the container.
    public var issuer: String
    /// The token's subject (`sub`): the issuer's stable identifier of the user.
    public var subject: String
    /// The token's `email` when its `email_verified` is true, else `nil`.
    public var verifiedEmailAddress: String?

    /// Creates an identity.
    public init(issuer: String, subject: String, verifiedEmailAddress: String? = nil) {
        self.issuer = issuer
        self.subject = subject
        self.verifiedEmailAddress = verifiedEmailAddress
    }
}
