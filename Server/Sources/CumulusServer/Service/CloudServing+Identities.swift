import CloudCodable
import CloudProtocol

extension CloudServing {
    /// No issuers: a service that signs no one in with identity tokens.
    public func identityIssuers(container: String) async throws -> [StoredIdentityIssuer] { [] }

    /// Throws `AUTHENTICATION_FAILED`: a service that signs no one in with identity tokens.
    public func signIn(_ identity: VerifiedIdentity, container: String) async throws -> String {
        throw CloudError(.authenticationFailed, reason: "\(Self.self) signs no one in with identity tokens")
    }
}
