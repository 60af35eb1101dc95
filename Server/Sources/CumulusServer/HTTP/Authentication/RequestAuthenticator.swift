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
/// ``AuthenticationMiddleware`` runs it in front of every database route.
struct RequestAuthenticator: Sendable {
    let service: any CloudServing
    let signatureDateTolerance: Duration
    /// The server's wall clock (``ServerConfiguration/now``).
    let now: @Sendable () -> Date
    let cache: AuthenticationCache
    /// Checks identity tokens against the container's issuers.
    let identityTokens: IdentityTokenVerifier
    /// The bodies of signed requests held before their signature is checked.
    let unauthenticatedBodies: UnauthenticatedBodyBudget
    /// The largest request body.
    let maximumBodySize: Int

    static let keyIDHeader = HTTPField.Name(CloudRequestSigning.keyIDHeader)!
    static let dateHeader = HTTPField.Name(CloudRequestSigning.dateHeader)!
    static let signatureHeader = HTTPField.Name(CloudRequestSigning.signatureHeader)!

    /// Authenticates a database request: a signed one by its key and
    /// signature (reading its body, which the signature covers, within the
    /// budget of bodies held before authentication), any other by its
    /// tokens.
    ///
    /// - Throws: ``HTTPFailure`` for a request whose credentials do not hold.
    func authenticate(_ request: Request, route: DatabaseRoute, gate: CredentialGate) async throws
        -> Authentication
    {
        if Self.isSigned(request) {
            let pending = try await signature(
                of: request, container: route.container, environment: route.environment, scope: route.scope,
                gate: gate)
            let limit = maximumBodySize
            let declared = request.headers[.contentLength].flatMap { Int($0) }
            if let declared, declared > limit { throw Request.tooLarge(limit: limit) }
            // Without a length or a chunked encoding, an HTTP/1.1 request has no body.
            let reserved = declared ?? (request.headers[.transferEncoding] == nil ? 0 : limit)
            let body = try await unauthenticatedBodies.withReservation(of: reserved) {
                try await request.collectBody(upTo: reserved)
            }
            let caller = try pending.verify(body: body, path: request.uri.path)
            return Authentication(
                route: route, caller: caller, credential: .serverKey(id: pending.keyID), signedBody: body)
        }
        let (caller, credential) = try await self.caller(
            tokensOf: request, container: route.container, environment: route.environment, scope: route.scope,
            gate: gate)
        return Authentication(route: route, caller: caller, credential: credential, signedBody: nil)
    }

    /// Whether the request is signed with a key rather than carrying tokens;
    /// a signed request's body is read before its signature is checked.
    static func isSigned(_ request: Request) -> Bool {
        request.headers[keyIDHeader] != nil
    }

    /// The caller of a request that carries `ckAPIToken` and `ckWebAuthToken`
    /// (or an identity token), and that credential as a notification
    /// channel keeps it; with the API token alone, an anonymous reader of
    /// the public database. A credential the cache does not know valid meets
    /// `gate` before it is checked.
    private func caller(
        tokensOf request: Request, container: String, environment: CloudEnvironment, scope: DatabaseScope,
        gate: CredentialGate
    ) async throws -> (Caller, ChannelCredential?) {
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
            let identity = try await user(
                identityToken: identityToken, container: container, version: version, gate: gate)
            return (
                Caller(container: container, environment: environment, scope: scope, user: identity.user),
                .identity(issuer: identity.issuer, subject: identity.subject)
            )
        }
        guard let webAuthToken = query["ckWebAuthToken"].map(String.init), !webAuthToken.isEmpty else {
            // What an anonymous caller may do there (read) is the service's rule.
            guard scope == .public else { throw try await signedOut(container: container) }
            return (
                Caller(container: container, environment: environment, scope: scope, user: nil, anonymous: true), nil
            )
        }
        let user = try await user(webAuthToken: webAuthToken, container: container, version: version, gate: gate)
        return (
            Caller(container: container, environment: environment, scope: scope, user: user),
            .webAuthToken(hash: ServerSecrets.sha256Hex(webAuthToken))
        )
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
    private func signature(
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
            keyID: keyID, key: key, dateText: dateText, signatureText: signatureText,
            caller: Caller(container: container, environment: environment, scope: scope, user: nil))
    }

    /// A signed request whose key is known, waiting for its body.
    struct PendingSignature {
        let keyID: String
        let key: P256.Signing.PublicKey
        let dateText: String
        let signatureText: String
        let caller: Caller

        /// The caller, once the signature of the message
        /// ``CloudRequestSigning`` defines is found good.
        func verify(body: [UInt8], path: String) throws -> Caller {
            let bodyHash = Data(SHA256.hash(data: body)).base64EncodedString()
            let message = CloudRequestSigning.message(date: dateText, bodyHash: bodyHash, subpath: path)
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
        until.map { ServerTime.duration(seconds: $0.timeIntervalSince(now())) }
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
