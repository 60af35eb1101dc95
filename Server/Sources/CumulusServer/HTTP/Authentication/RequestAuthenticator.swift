import CloudCodable
import CloudProtocol
import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// Who a database request comes from: its API and web auth tokens (or an
/// identity token), or a server-to-server key's signature. What the store confirms is kept in
/// the ``AuthenticationCache``; a credential it does not hold meets the
/// address's ``CredentialGate`` before the store or an issuer is asked.
struct RequestAuthenticator: Sendable {
    let service: any CloudServing
    let signatureDateTolerance: Duration
    /// The server's wall clock (``ServerConfiguration/now``).
    let now: @Sendable () -> Date
    let cache: AuthenticationCache
    /// Checks identity tokens against the container's issuers.
    let identityTokens: IdentityTokenVerifier

    static let keyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let dateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    /// Whether the request is signed with a key rather than carrying tokens;
    /// a signed request's body is read before its signature is checked.
    static func isSigned(_ request: Request) -> Bool {
        request.headers[keyIDHeader] != nil
    }

    /// The caller of a request that carries `ckAPIToken` and `ckWebAuthToken`;
    /// with the API token alone, an anonymous reader of the public database.
    /// A credential the cache does not know valid meets `gate` before it
    /// is checked.
    func caller(
        tokensOf request: Request, container: String, environment: CloudEnvironment, scope: DatabaseScope,
        gate: CredentialGate
    ) async throws -> Caller {
        let query = request.uri.queryParameters
        guard let apiToken = query["ckAPIToken"].map(String.init) else {
            throw HTTPFailure(.authenticationFailed, "The request has no ckAPIToken.")
        }
        let version = try await service.credentialsVersion()
        cache.synchronize(with: version)
        guard Self.isAPITokenShaped(apiToken) else {
            throw HTTPFailure(.authenticationFailed, "The API token is not valid for this container.")
        }
        try await checkAPIToken(apiToken, container: container, version: version, gate: gate)
        if let identityToken = try Self.identityToken(of: request) {
            let user = try await user(
                identityToken: identityToken, container: container, version: version, gate: gate)
            return Caller(container: container, environment: environment, scope: scope, user: user)
        }
        guard let webAuthToken = query["ckWebAuthToken"].map(String.init), !webAuthToken.isEmpty else {
            // What an anonymous caller may do there (read) is the service's rule.
            guard scope == .public else { throw try await signedOut(container: container) }
            return Caller(container: container, environment: environment, scope: scope, user: nil, anonymous: true)
        }
        let user = try await user(webAuthToken: webAuthToken, container: container, version: version, gate: gate)
        return Caller(container: container, environment: environment, scope: scope, user: user)
    }

    /// What a request without a user answers where it needs one: it names
    /// the credentials the container takes, the identity token when the
    /// container has an issuer.
    private func signedOut(container: String) async throws -> HTTPFailure {
        guard try await identityTokens.directory.hasIssuers(container: container) else {
            return HTTPFailure(.authenticationRequired, "The request needs a signed-in user (ckWebAuthToken).")
        }
        return HTTPFailure(
            .authenticationRequired,
            "The request needs a signed-in user: an identity token (Authorization: Bearer <JWT>) "
                + "or a web auth token (ckWebAuthToken).")
    }

    /// The first half of a signed request's authentication, before its body
    /// is read: the headers, the date, the database and the key, so that a
    /// request that cannot succeed is answered without reading its body.
    func signature(
        of request: Request, container: String, environment: CloudEnvironment, scope: DatabaseScope,
        gate: CredentialGate
    ) async throws -> PendingSignature {
        guard let keyID = request.headers[Self.keyIDHeader], let dateText = request.headers[Self.dateHeader],
            let signatureText = request.headers[Self.signatureHeader]
        else {
            throw HTTPFailure(.authenticationFailed, "A signed request needs the key ID, date and signature headers.")
        }
        guard let date = Self.parseDate(dateText) else {
            throw HTTPFailure(.authenticationFailed, "The request date is not an ISO 8601 date.")
        }
        let tolerance = Double(signatureDateTolerance.components.seconds)
        guard abs(date.timeIntervalSince(now())) <= tolerance else {
            throw HTTPFailure(.authenticationFailed, "The request date is too far from the server's clock.")
        }
        guard scope == .public else {
            throw HTTPFailure(.accessDenied, "Server-to-server keys work on the public database only.")
        }
        let version = try await service.credentialsVersion()
        cache.synchronize(with: version)
        guard let key = try await serverKey(id: keyID, container: container, version: version, gate: gate) else {
            throw HTTPFailure(.authenticationFailed, "No such key for this container.")
        }
        return PendingSignature(
            key: key, dateText: dateText, signatureText: signatureText,
            caller: Caller(container: container, environment: environment, scope: scope, user: nil))
    }

    /// A signed request whose key is known, waiting for its body.
    struct PendingSignature {
        let key: P256.Signing.PublicKey
        let dateText: String
        let signatureText: String
        let caller: Caller

        /// The caller, once the signature of `{date}:{base64 SHA-256 of the
        /// body}:{path}` is found good.
        func verify(body: [UInt8], path: String) throws -> Caller {
            let bodyHash = Data(SHA256.hash(data: body)).base64EncodedString()
            let message = Data("\(dateText):\(bodyHash):\(path)".utf8)
            guard let signatureBytes = Data(base64Encoded: signatureText),
                let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes),
                key.isValidSignature(signature, for: message)
            else {
                throw HTTPFailure(.authenticationFailed, "The request signature is not valid.")
            }
            return caller
        }
    }

    // MARK: Cached lookups

    /// Throws `AUTHENTICATION_FAILED` unless `apiToken` is one of the container's.
    private func checkAPIToken(
        _ apiToken: String, container: String, version: CredentialsVersion, gate: CredentialGate
    ) async throws {
        if cache.isValidAPIToken(apiToken, container: container) { return }
        try gate.admit()
        switch try await service.authenticateAPIToken(apiToken, container: container) {
        case .valid(_, let until):
            cache.rememberValidAPIToken(apiToken, container: container, for: trust(until), foundUnder: version)
        case .expired:
            throw HTTPFailure(
                .authenticationFailed, "The API token was replaced by a new one and its overlap has ended.")
        case .unknown:
            throw HTTPFailure(.authenticationFailed, "The API token is not valid for this container.")
        }
    }

    /// The user of a web auth token; throws `AUTHENTICATION_FAILED` for an unknown or expired one.
    private func user(
        webAuthToken: String, container: String, version: CredentialsVersion, gate: CredentialGate
    ) async throws -> String {
        if let user = cache.user(webAuthToken: webAuthToken, container: container) { return user }
        try gate.admit()
        switch try await service.authenticateWebAuthToken(webAuthToken, container: container) {
        case .valid(let user, let until):
            cache.rememberUser(
                user, webAuthToken: webAuthToken, container: container, for: trust(until), foundUnder: version)
            return user
        case .expired:
            throw HTTPFailure(.authenticationFailed, "The web auth token has expired.")
        case .unknown:
            // Revoked tokens are deleted: one answer for those and for tokens never issued.
            throw HTTPFailure(
                .authenticationFailed,
                "The web auth token is not valid for this container: it was revoked, or never issued for it.")
        }
    }

    private func serverKey(id: String, container: String, version: CredentialsVersion, gate: CredentialGate)
        async throws -> P256.Signing.PublicKey?
    {
        if let key = cache.serverKey(id: id, container: container) { return key }
        try gate.admit()
        guard let pem = try await service.serverKey(container: container, keyID: id),
            let key = try? P256.Signing.PublicKey(pemRepresentation: pem)
        else { return nil }
        cache.rememberServerKey(key, id: id, container: container, foundUnder: version)
        return key
    }

    /// How long a credential valid `until` may be trusted from now (`nil`: no end of its own).
    private func trust(_ until: Date?) -> Duration? {
        until.map { .milliseconds(Int64(($0.timeIntervalSince(now()) * 1000).rounded(.down))) }
    }

    // MARK: Formats

    /// API tokens are 64 hexadecimal characters; anything else is refused
    /// before the store is asked.
    static func isAPITokenShaped(_ token: String) -> Bool {
        token.utf8.count == 64 && token.utf8.allSatisfy { $0.isHexDigit }
    }

    /// An ISO 8601 date, with or without fractional seconds.
    static func parseDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}
