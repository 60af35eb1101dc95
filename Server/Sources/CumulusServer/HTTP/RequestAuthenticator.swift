import Crypto
import Cumulus
import Foundation
import HTTPTypes
import Hummingbird

/// Who a database request comes from: its API and web auth tokens (or an
/// identity token), or a server-to-server key's signature. What the store confirms is kept in
/// the ``AuthenticationCache``.
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
    func caller(
        tokensOf request: Request, container: String, environment: CloudEnvironment, scope: DatabaseScope
    ) async throws -> Caller {
        let query = request.uri.queryParameters
        guard let apiToken = query["ckAPIToken"].map(String.init) else {
            throw HTTPFailure(.authenticationFailed, "The request has no ckAPIToken.")
        }
        guard Self.isAPITokenShaped(apiToken), try await isValid(apiToken: apiToken, container: container) else {
            throw HTTPFailure(.authenticationFailed, "The API token is not valid for this container.")
        }
        if let identityToken = try Self.identityToken(of: request) {
            let user = try await user(identityToken: identityToken, container: container)
            return Caller(container: container, environment: environment, scope: scope, user: user)
        }
        guard let webAuthToken = query["ckWebAuthToken"].map(String.init), !webAuthToken.isEmpty else {
            // What an anonymous caller may do there (read) is the service's rule.
            guard scope == .public else {
                throw HTTPFailure(.authenticationRequired, "The request needs a signed-in user (ckWebAuthToken).")
            }
            return Caller(container: container, environment: environment, scope: scope, user: nil, anonymous: true)
        }
        guard let user = try await user(webAuthToken: webAuthToken, container: container) else {
            throw HTTPFailure(.authenticationFailed, "The web auth token is not valid for this container.")
        }
        return Caller(container: container, environment: environment, scope: scope, user: user)
    }

    /// The first half of a signed request's authentication, before its body
    /// is read: the headers, the date, the database and the key, so that a
    /// request that cannot succeed is answered without reading its body.
    func signature(
        of request: Request, container: String, environment: CloudEnvironment, scope: DatabaseScope
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
        guard let key = try await serverKey(id: keyID, container: container) else {
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

    private func isValid(apiToken: String, container: String) async throws -> Bool {
        if cache.isValidAPIToken(apiToken, container: container) { return true }
        guard try await service.authenticateContainer(named: container, apiToken: apiToken) else { return false }
        cache.rememberValidAPIToken(apiToken, container: container)
        return true
    }

    private func user(webAuthToken: String, container: String) async throws -> String? {
        if let user = cache.user(webAuthToken: webAuthToken, container: container) { return user }
        guard let user = try await service.user(container: container, webAuthToken: webAuthToken) else { return nil }
        cache.rememberUser(user, webAuthToken: webAuthToken, container: container)
        return user
    }

    private func serverKey(id: String, container: String) async throws -> P256.Signing.PublicKey? {
        if let key = cache.serverKey(id: id, container: container) { return key }
        guard let pem = try await service.serverKey(container: container, keyID: id),
            let key = try? P256.Signing.PublicKey(pemRepresentation: pem)
        else { return nil }
        cache.rememberServerKey(key, id: id, container: container)
        return key
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
