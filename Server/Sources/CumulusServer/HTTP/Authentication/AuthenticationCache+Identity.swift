import Crypto
import Foundation

/// What an identity token was found to be: its user, and what that
/// finding rests on, checked again each time it is used.
struct CachedIdentity: Sendable {
    /// The user the token signs in as.
    let user: String
    /// The token's issuer.
    let issuer: String
    /// The token's subject, the user's identifier at the issuer.
    let subject: String
    /// What the issuer's configuration and keys were trusted as (see
    /// ``ConfiguredIssuer/trust(keys:)``).
    let trust: SHA256Digest
    /// The token's `exp`, against the server's wall clock.
    let expires: Date
}

extension AuthenticationCache {
    /// What an identity token was found to be, or `nil`.
    func identity(token: String, container: String) -> CachedIdentity? {
        if case .identity(let found) = finding(.identityToken, container: container, credential: token) {
            return found
        }
        return nil
    }

    /// Keeps what an identity token was found to be, for the cache's
    /// lifetime or until the token expires (`remaining`), whichever comes
    /// first, unless the credentials version moved on since it was `found`.
    func rememberIdentity(
        _ identity: CachedIdentity, token: String, container: String, remaining: Duration,
        foundUnder found: CredentialsVersion
    ) {
        remember(
            .identity(identity), kind: .identityToken, container: container, credential: token, for: remaining, found)
    }
}
