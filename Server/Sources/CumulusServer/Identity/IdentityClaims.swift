import Foundation
import JWTKit

/// The claims of an identity token that sign a user in. Each is optional
/// here, so that a token without one is refused with a reason that names
/// it rather than as unreadable.
struct IdentityClaims: JWTPayload {
    /// `iss`: who issued the token.
    var issuer: IssuerClaim?
    /// `sub`: the issuer's identifier of the user.
    var subject: SubjectClaim?
    /// `aud`: whom the token is for (an app's bundle ID, a client ID).
    var audience: AudienceClaim?
    /// `exp`: when the token stops being valid.
    var expires: ExpirationClaim?
    /// `nbf`: when the token starts being valid.
    var notBefore: NotBeforeClaim?
    /// `email`: the user's address, if the issuer sends it.
    var email: String?
    /// `email_verified`: whether the issuer verified ``email``; Sign in with
    /// Apple sends a boolean or the string `"true"`. Anything else is false.
    var emailVerified: Bool
    /// `name`: the user's full name, if the issuer sends it.
    var name: String?
    /// `given_name`: the user's given name, if the issuer sends it.
    var givenName: String?
    /// `family_name`: the user's family name, if the issuer sends it.
    var familyName: String?

    private enum CodingKeys: String, CodingKey {
        case issuer = "iss"
        case subject = "sub"
        case audience = "aud"
        case expires = "exp"
        case notBefore = "nbf"
        case email
        case emailVerified = "email_verified"
        case name
        case givenName = "given_name"
        case familyName = "family_name"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        issuer = try container.decodeIfPresent(IssuerClaim.self, forKey: .issuer)
        subject = try container.decodeIfPresent(SubjectClaim.self, forKey: .subject)
        audience = try container.decodeIfPresent(AudienceClaim.self, forKey: .audience)
        expires = try container.decodeIfPresent(ExpirationClaim.self, forKey: .expires)
        notBefore = try container.decodeIfPresent(NotBeforeClaim.self, forKey: .notBefore)
        // An address or flag of an unexpected type only means no verified address.
        email = (try? container.decodeIfPresent(String.self, forKey: .email)) ?? nil
        emailVerified =
            ((try? container.decodeIfPresent(BoolClaim.self, forKey: .emailVerified)) ?? nil)?.value ?? false
        // A name of an unexpected type only means no name.
        name = (try? container.decodeIfPresent(String.self, forKey: .name)) ?? nil
        givenName = (try? container.decodeIfPresent(String.self, forKey: .givenName)) ?? nil
        familyName = (try? container.decodeIfPresent(String.self, forKey: .familyName)) ?? nil
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(issuer, forKey: .issuer)
        try container.encodeIfPresent(subject, forKey: .subject)
        try container.encodeIfPresent(audience, forKey: .audience)
        try container.encodeIfPresent(expires, forKey: .expires)
        try container.encodeIfPresent(notBefore, forKey: .notBefore)
        try container.encodeIfPresent(email, forKey: .email)
        try container.encode(emailVerified, forKey: .emailVerified)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(givenName, forKey: .givenName)
        try container.encodeIfPresent(familyName, forKey: .familyName)
    }

    /// Checks nothing: jwt-kit calls this once the signature is good, and
    /// the verifier then checks the claims against the server's clock,
    /// with its leeway, naming what is wrong.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
