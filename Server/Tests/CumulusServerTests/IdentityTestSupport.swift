import Crypto
import CryptoExtras
import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Hummingbird
import JWTKit
import Synchronization

/// A key the tests sign identity tokens with, and its public half as a JWK.
struct TestSigningKey: Sendable {
    enum Private: Sendable {
        case rsa(JWTKit.Insecure.RSA.PrivateKey)
        case es256(ES256PrivateKey)
    }

    let keyID: String
    let key: Private

    /// A new RSA key (2048 bits) for RS256.
    static func rsa(keyID: String) throws -> TestSigningKey {
        TestSigningKey(
            keyID: keyID,
            key: .rsa(try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))))
    }

    /// A new P-256 key for ES256.
    static func es256(keyID: String) -> TestSigningKey {
        TestSigningKey(keyID: keyID, key: .es256(ES256PrivateKey()))
    }

    /// RSA keys take a while to make, so the tests share a few.
    static let sharedRSA = [try! rsa(keyID: "rsa-1"), try! rsa(keyID: "rsa-2")]

    /// The same key under another key ID.
    func renamed(_ keyID: String) -> TestSigningKey { TestSigningKey(keyID: keyID, key: key) }

    /// The public key as a JWK object.
    var publicJWK: [String: String] {
        switch key {
        case .rsa(let key):
            let numbers = try! key.publicKey.getKeyPrimitives()
            return [
                "kty": "RSA", "alg": "RS256", "use": "sig", "kid": keyID, "n": numbers.modulus.base64URL,
                "e": numbers.publicExponent.base64URL,
            ]
        case .es256(let key):
            let parameters = key.publicKey.parameters!
            return ["kty": "EC", "crv": "P-256", "alg": "ES256", "kid": keyID, "x": parameters.x, "y": parameters.y]
        }
    }

    /// A token of `claims`, signed by this key, with its key ID in the
    /// header unless `keyIDInHeader` is false.
    func sign(_ claims: TestClaims, keyIDInHeader: Bool = true) async throws -> String {
        let keys = JWTKeyCollection()
        let keyID = keyIDInHeader ? JWKIdentifier(string: self.keyID) : nil
        switch key {
        case .rsa(let key): await keys.add(rsa: key, digestAlgorithm: .sha256, kid: keyID)
        case .es256(let key): await keys.add(ecdsa: key, kid: keyID)
        }
        return try await keys.sign(claims, kid: keyID)
    }

    /// `token` with its header replaced by `header` (JSON, sorted keys) and
    /// signed again with this ES256 key, whatever algorithm the header names.
    func resigned(_ token: String, header: [String: String]) throws -> String {
        guard case .es256(let key) = key else { throw CloudError(.internalError, reason: "not an ES256 key") }
        let signer = try P256.Signing.PrivateKey(pemRepresentation: key.pemRepresentation)
        let payload = token.split(separator: ".")[1]
        let headerJSON = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let input = headerJSON.base64URL + "." + payload
        return input + "." + (try signer.signature(for: Data(input.utf8))).rawRepresentation.base64URL
    }

    /// A key set (JWKS document) of public keys.
    static func keySet(_ keys: [TestSigningKey], extra: [[String: String]] = []) -> String {
        let object = ["keys": keys.map(\.publicJWK) + extra]
        return String(
            decoding: try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}

extension Data {
    /// Base64url without padding, as JWKs hold numbers.
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// The claims of a test token; each may be left out or given a wrong type.
struct TestClaims: JWTPayload {
    /// `email_verified` as Apple sends it: a boolean or a string.
    enum Flag: Codable, Sendable {
        case bool(Bool)
        case string(String)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .bool(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            }
        }
    }

    var iss: String?
    var sub: String?
    var aud: [String]?
    var exp: Date?
    var nbf: Date?
    var email: String?
    var emailVerified: Flag?
    var name: String?
    var givenName: String?
    var familyName: String?

    private enum CodingKeys: String, CodingKey {
        case iss, sub, aud, exp, nbf, email, name
        case emailVerified = "email_verified"
        case givenName = "given_name"
        case familyName = "family_name"
    }

    init(
        iss: String? = TestIssuer.defaultIssuer, sub: String? = "subject-1",
        aud: [String]? = [TestIssuer.defaultAudience],
        exp: Date? = Date().addingTimeInterval(600), nbf: Date? = nil, email: String? = nil,
        emailVerified: Flag? = nil, name: String? = nil, givenName: String? = nil, familyName: String? = nil
    ) {
        self.iss = iss
        self.sub = sub
        self.aud = aud
        self.exp = exp
        self.nbf = nbf
        self.email = email
        self.emailVerified = emailVerified
        self.name = name
        self.givenName = givenName
        self.familyName = familyName
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A wall clock a test sets.
final class ManualWallClock: Sendable {
    private let date = Mutex(Date())

    var now: Date { date.withLock { $0 } }

    func set(_ date: Date) { self.date.withLock { $0 = date } }
}

/// Names the identity tests share.
enum TestIssuer {
    static let defaultIssuer = "https://issuer.example.com"
    static let defaultAudience = "com.example.notes"
}

/// A JWKS served on loopback by a small Hummingbird app: the document can
/// be changed while it runs, and each fetch is counted.
final class LoopbackKeySetServer: Sendable {
    private let document: Mutex<String?>
    private let fetches = Atomic<Int>(0)

    init(document: String?) {
        self.document = Mutex(document)
    }

    /// How many times the key set was asked for.
    var fetchCount: Int { fetches.load(ordering: .relaxed) }

    /// Serves `document` from now on; `nil` answers 503.
    func serve(_ document: String?) {
        self.document.withLock { $0 = document }
    }

    /// Runs `body` with the key set's URL, while the server runs.
    func run<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        let router = Router()
        router.get("/jwks") { _, _ -> Response in
            self.fetches.add(1, ordering: .relaxed)
            guard let document = self.document.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: document)))
        }
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: quietLogger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CloudError(.internalError, reason: "no port") }
            do {
                let result = try await body("http://127.0.0.1:\(port)/jwks")
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }
}

extension HTTPTestServer {
    /// Sends `operation` with the API token and an identity token as a bearer header.
    func sendBearer(
        _ token: String, _ operation: String = "users/current", method: String = "GET", body: String = "",
        container: String? = nil, apiToken: String? = nil
    ) async throws -> HTTPAnswer {
        try await send(
            method, path(operation, container: container), query: ["ckAPIToken": apiToken ?? self.apiToken],
            body: Array(body.utf8), headers: ["Authorization": "Bearer \(token)"])
    }

    /// The user record name a `users/current` answer names.
    static func userRecordName(_ answer: HTTPAnswer) -> String? {
        answer.status == 200 ? answer.json["userRecordName"] as? String : nil
    }
}
