import CloudCodable
import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird

extension RequestAuthenticator {
    /// The identity token (JWT) a request carries: in an `Authorization:
    /// Bearer` header, or as a `ckWebAuthToken` shaped as a JWT (a classic
    /// web auth token is 64 hexadecimal characters); `nil` for none.
    ///
    /// - Throws: ``HTTPFailure`` (`AUTHENTICATION_FAILED`) for an
    ///   `Authorization` header that is not a bearer JWT, or a request that
    ///   carries both forms.
    static func identityToken(of request: Request) throws -> String? {
        let webAuthToken = request.uri.queryParameters["ckWebAuthToken"].map(String.init) ?? ""
        guard let authorization = request.headers[.authorization] else {
            return IdentityTokenVerifier.isTokenShaped(webAuthToken) ? webAuthToken : nil
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw HTTPFailure(.authenticationFailed, "The Authorization header must be 'Bearer <identity token>'.")
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard IdentityTokenVerifier.isTokenShaped(token) else {
            throw HTTPFailure(.authenticationFailed, "The bearer token is not an identity token (JWT).")
        }
        guard webAuthToken.isEmpty else {
            throw HTTPFailure(
                .authenticationFailed, "The request carries both a bearer token and ckWebAuthToken; send one.")
        }
        return token
    }

    /// The record name of the user an identity token signs in as, with the
    /// token's issuer and subject: from the
    /// cache while its issuer's configuration and keys are unchanged, else
    /// verified, signed in (created on first sight) and cached until the
    /// token expires at the latest. Failures are never cached; a token not
    /// in the cache meets `gate` before it is verified.
    func user(identityToken token: String, container: String, version: CredentialsVersion, gate: CredentialGate)
        async throws -> (user: String, issuer: String, subject: String)
    {
        await identityTokens.directory.synchronize(with: version)
        if let cached = cache.identity(token: token, container: container), now() < cached.expires,
            try await identityTokens.directory.currentTrust(issuer: cached.issuer, container: container)
                == cached.trust
        {
            return (cached.user, cached.issuer, cached.subject)
        }
        try gate.admit()
        let verified = try await identityTokens.verify(token, container: container)
        let user = try await service.signIn(verified.identity, container: container)
        let remaining = verified.expires.timeIntervalSince(now())
        if remaining > 0 {
            cache.rememberIdentity(
                CachedIdentity(
                    user: user, issuer: verified.identity.issuer, subject: verified.identity.subject,
                    trust: verified.trust, expires: verified.expires),
                token: token, container: container, remaining: ServerTime.duration(seconds: min(remaining, 86_400)),
                foundUnder: version)
        }
        return (user, verified.identity.issuer, verified.identity.subject)
    }
}
