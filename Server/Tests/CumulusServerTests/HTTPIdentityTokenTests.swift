import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import JWTKit
import Synchronization
import Testing

/// Users signed in by identity tokens (JWT) from the issuers configured for
/// their container, over HTTP against a running server.
@Suite("HTTP identity tokens")
struct HTTPIdentityTokenTests {
    static let rsa = TestSigningKey.sharedRSA[0]
    static let ec = TestSigningKey.es256(keyID: "ec-1")

    /// A server whose container accepts tokens of the default issuer and
    /// audience, signed with `keys` (stored with the issuer).
    static func withIssuer(
        store: TestStore = .sqlite, keys: [TestSigningKey] = [rsa, ec],
        settings: IdentityTokenSettings = IdentityTokenSettings(),
        now: @escaping @Sendable () -> Date = { Date() },
        _ body: @Sendable (HTTPTestServer, CloudService) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration(port: 0, now: now, logger: quietLogger)
        configuration.identityTokens = settings
        try await HTTPTestServer.with(store: store, configuration: configuration) { server in
            let service = try #require(server.service as? CloudService)
            try await service.addIdentityIssuer(
                StoredIdentityIssuer(
                    issuer: TestIssuer.defaultIssuer, audiences: [TestIssuer.defaultAudience], keySetURL: nil,
                    keySet: TestSigningKey.keySet(keys)),
                container: server.container)
            try await body(server, service)
        }
    }

    /// The record names a `users/lookup/email` answer holds.
    static func usersFound(_ server: HTTPTestServer, email: String) async throws -> [String] {
        let answer = try await server.sendAsUser(
            "users/lookup/email", body: #"{"users":[{"emailAddress":"\#(email)"}]}"#, scope: "public")
        #expect(answer.status == 200)
        let users = answer.json["users"] as? [[String: Any]] ?? []
        return users.compactMap { $0["userRecordName"] as? String }
    }

    @Test(
        "RS256 and ES256 tokens sign a user in, created on first sight; bearer and ckWebAuthToken",
        arguments: TestStore.single)
    func validTokens(_ store: TestStore) async throws {
        try await Self.withIssuer(store: store) { server, _ in
            let first = try await Self.rsa.sign(TestClaims(sub: "alice"))
            let alice = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(first)))
            #expect(alice.hasPrefix("_") && alice.utf8.count == 33 && alice != server.userRecordName)
            let again = try await Self.ec.sign(TestClaims(sub: "alice"))
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(again)) == alice)
            let query = try await server.send(
                "GET", server.path("users/current"), query: ["ckAPIToken": server.apiToken, "ckWebAuthToken": again])
            #expect(HTTPTestServer.userRecordName(query) == alice)
            let bob = try await Self.ec.sign(TestClaims(sub: "bob"))
            let bobName = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(bob)))
            #expect(bobName != alice)
            // The new user has a private database like any other.
            let zones = try await server.sendBearer(first, "zones/list")
            #expect(zones.status == 200, "\(zones.reason ?? "")")
        }
    }

    @Test("bad tokens answer 401 AUTHENTICATION_FAILED with a reason that never holds the token")
    func refusals() async throws {
        let other = TestSigningKey.sharedRSA[1]
        let none = try await JWTKeyCollection().addUnsecuredNone().sign(TestClaims())
        let hmac = try await JWTKeyCollection().add(
            hmac: HMACKey(from: String(repeating: "s", count: 32)), digestAlgorithm: .sha256
        )
        .sign(TestClaims())
        let now = Date()
        let cases: [(String, String)] = [
            (try await Self.rsa.sign(TestClaims(exp: now.addingTimeInterval(-3600))), "expired"),
            (try await Self.rsa.sign(TestClaims(exp: nil)), "no expiry"),
            (try await Self.rsa.sign(TestClaims(nbf: now.addingTimeInterval(3600))), "not valid yet"),
            (try await Self.rsa.sign(TestClaims(iss: "https://other.example.com")), "issuer is not configured"),
            (try await Self.rsa.sign(TestClaims(iss: nil)), "no issuer"),
            (try await Self.rsa.sign(TestClaims(aud: ["com.example.other"])), "audience"),
            (try await Self.rsa.sign(TestClaims(aud: nil)), "audience"),
            (try await other.renamed(Self.rsa.keyID).sign(TestClaims()), "signature"),
            (try await other.sign(TestClaims()), "kid"),
            (try await Self.rsa.sign(TestClaims(sub: nil)), "subject"),
            (try await Self.rsa.sign(TestClaims(sub: "a\u{0}b")), "U+0000"),
            (none, "not signed"),
            (hmac, "algorithm"),
            ("bm90anNvbg.e30.c2ln", "well-formed"),
        ]
        try await Self.withIssuer { server, _ in
            for (token, reason) in cases {
                let answer = try await server.sendBearer(token)
                #expect(answer.isError(.authenticationFailed, status: 401), "\(reason): \(answer.status)")
                #expect(answer.reason?.contains(reason) == true, "\(reason): \(answer.reason ?? "")")
                #expect(!String(decoding: answer.body, as: UTF8.self).contains(token))
            }
        }
    }

    @Test("a header naming another algorithm than its key's (ES256) is refused, the key's own one accepted")
    func algorithmOfTheKey() async throws {
        let token = try await Self.ec.sign(TestClaims())
        try await Self.withIssuer { server, _ in
            let own = try Self.ec.resigned(token, header: ["alg": "ES256", "kid": Self.ec.keyID, "typ": "JWT"])
            let accepted = try await server.sendBearer(own)
            #expect(accepted.status == 200, "\(accepted.reason ?? "")")
            for algorithm in ["RS256", "PS256", "ES384", "ES512", "EdDSA"] {
                let other = try Self.ec.resigned(token, header: ["alg": algorithm, "kid": Self.ec.keyID, "typ": "JWT"])
                let answer = try await server.sendBearer(other)
                #expect(answer.isError(.authenticationFailed, status: 401), "\(algorithm): \(answer.status)")
                #expect(answer.reason?.contains("algorithm (alg)") == true, "\(algorithm): \(answer.reason ?? "")")
                // Without a kid, the header's algorithm picks the keys it may be tried with: none here.
                let anonymous = try Self.ec.resigned(token, header: ["alg": algorithm, "typ": "JWT"])
                #expect(try await server.sendBearer(anonymous).status == 401, "\(algorithm) without kid")
            }
            let withoutKeyID = try Self.ec.resigned(token, header: ["alg": "ES256", "typ": "JWT"])
            #expect(try await server.sendBearer(withoutKeyID).status == 200)
        }
    }

    @Test("a token is one spelling: padding, or unused bits set in a segment's last character, is refused")
    func canonicalSpelling() async throws {
        let token = try await Self.ec.sign(TestClaims())
        let parts = token.split(separator: ".").map(String.init)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        // The segment with its last character's lowest bit flipped: the same bytes once decoded when that bit is unused.
        func flipped(_ segment: String) -> String {
            let last = alphabet.firstIndex(of: segment.last!)!
            return String(segment.dropLast()) + String(alphabet[last ^ 1])
        }
        // A 64-byte signature is 86 characters: its last one has four unused bits.
        #expect(parts[2].count == 86)
        let spellings = [
            "\(parts[0]).\(parts[1]).\(parts[2])=", "\(parts[0]).\(parts[1]).\(parts[2])==",
            "\(parts[0])=.\(parts[1]).\(parts[2])", "\(parts[0]).\(parts[1])=.\(parts[2])",
            "\(parts[0]).\(parts[1]).\(flipped(parts[2]))",
        ]
        try await Self.withIssuer { server, _ in
            #expect(try await server.sendBearer(token).status == 200)
            for spelling in spellings {
                let answer = try await server.sendBearer(spelling)
                #expect(answer.isError(.authenticationFailed, status: 401), "\(spelling): \(answer.status)")
                #expect(answer.reason?.contains("base64url") == true, "\(answer.reason ?? "")")
                let query = try await server.send(
                    "GET", server.path("users/current"),
                    query: ["ckAPIToken": server.apiToken, "ckWebAuthToken": spelling])
                #expect(query.isError(.authenticationFailed, status: 401), "\(spelling): \(query.status)")
            }
        }
    }

    @Test(
        "the clock-skew leeway accepts a token just expired or not quite valid yet; a token without kid is tried with each key"
    )
    func leewayAndKeyID() async throws {
        try await Self.withIssuer { server, _ in
            let now = Date()
            for claims in [
                TestClaims(exp: now.addingTimeInterval(-20)), TestClaims(nbf: now.addingTimeInterval(20)),
            ] {
                let answer = try await server.sendBearer(try await Self.rsa.sign(claims))
                #expect(answer.status == 200, "\(answer.reason ?? "")")
            }
            let withoutKeyID = try await Self.ec.sign(TestClaims(), keyIDInHeader: false)
            let answer = try await server.sendBearer(withoutKeyID)
            #expect(answer.status == 200, "\(answer.reason ?? "")")
        }
    }

    @Test("malformed Authorization headers, both forms at once, and a missing API token are refused")
    func malformedRequests() async throws {
        try await Self.withIssuer { server, _ in
            let token = try await Self.rsa.sign(TestClaims())
            let path = server.path("users/current")
            let cases: [(query: [String: String], headers: [String: String])] = [
                (["ckAPIToken": server.apiToken], ["Authorization": "Basic YTpi"]),
                (["ckAPIToken": server.apiToken], ["Authorization": "Bearer not-a-token"]),
                (["ckAPIToken": server.apiToken], ["Authorization": "Bearer"]),
                (
                    ["ckAPIToken": server.apiToken, "ckWebAuthToken": server.webAuthToken],
                    ["Authorization": "Bearer \(token)"]
                ),
                ([:], ["Authorization": "Bearer \(token)"]),
                (["ckAPIToken": String(repeating: "0", count: 64)], ["Authorization": "Bearer \(token)"]),
                (["ckAPIToken": server.apiToken, "ckWebAuthToken": "a.b"], [:]),
            ]
            for (query, headers) in cases {
                let answer = try await server.send("GET", path, query: query, headers: headers)
                #expect(answer.isError(.authenticationFailed, status: 401), "\(query.keys.sorted()) \(headers)")
            }
            // A classic web auth token still works beside the issuer.
            let classic = try await server.send("GET", path, query: server.userQuery)
            #expect(HTTPTestServer.userRecordName(classic) == server.userRecordName)
        }
    }

    @Test(
        "a verified email becomes the user's address others find; an unverified one does not",
        arguments: TestStore.single)
    func emails(_ store: TestStore) async throws {
        try await Self.withIssuer(store: store) { server, _ in
            let cases: [(String, String, TestClaims.Flag?, Bool)] = [
                ("carol", "Carol@Example.com", .bool(true), true),
                ("dave", "dave@example.com", .string("true"), true),
                ("erin", "erin@example.com", .bool(false), false),
                ("frank", "frank@example.com", .string("false"), false),
                ("gina", "gina@example.com", nil, false),
            ]
            for (subject, email, verified, found) in cases {
                let token = try await Self.rsa.sign(TestClaims(sub: subject, email: email, emailVerified: verified))
                let user = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(token)))
                let users = try await Self.usersFound(server, email: email.lowercased())
                #expect(users == (found ? [user] : []), "\(subject)")
            }
            // A new verified address replaces the old one.
            let moved = try await Self.rsa.sign(
                TestClaims(sub: "carol", email: "carol@new.example.com", emailVerified: .bool(true)))
            let carol = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(moved)))
            #expect(try await Self.usersFound(server, email: "carol@new.example.com") == [carol])
            #expect(try await Self.usersFound(server, email: "carol@example.com") == [])
        }
    }

    @Test(
        "one subject under two issuers is two users; an issuer of container A does not sign in to B",
        arguments: TestStore.single)
    func issuersAndContainers(_ store: TestStore) async throws {
        // Issuers added while the server runs are read at once, not after the usual interval.
        let settings = IdentityTokenSettings(issuerRefreshInterval: .zero)
        try await Self.withIssuer(store: store, settings: settings) { server, service in
            let second = "https://second.example.com"
            try await service.addIdentityIssuer(
                StoredIdentityIssuer(
                    issuer: second, audiences: [TestIssuer.defaultAudience], keySetURL: nil,
                    keySet: TestSigningKey.keySet([Self.ec])),
                container: server.container)
            let first = try await Self.rsa.sign(TestClaims(sub: "same"))
            let viaSecond = try await Self.ec.sign(TestClaims(iss: second, sub: "same"))
            let one = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(first)))
            let two = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(viaSecond)))
            #expect(one != two)

            let other = "iCloud.com.example.other"
            let otherToken = try await service.addContainer(named: other)
            let refused = try await server.sendBearer(first, container: other, apiToken: otherToken)
            #expect(refused.isError(.authenticationFailed, status: 401))
            #expect(refused.reason?.contains("not configured") == true)
            try await service.addIdentityIssuer(
                StoredIdentityIssuer(
                    issuer: TestIssuer.defaultIssuer, audiences: [TestIssuer.defaultAudience], keySetURL: nil,
                    keySet: TestSigningKey.keySet([Self.rsa])),
                container: other)
            let inOther = try #require(
                HTTPTestServer.userRecordName(
                    try await server.sendBearer(first, container: other, apiToken: otherToken)))
            #expect(inOther != one)
        }
    }

    @Test("concurrent first requests of one subject create exactly one user", arguments: TestStore.single)
    func concurrentFirstSight(_ store: TestStore) async throws {
        try await Self.withIssuer(store: store) { server, _ in
            var tokens: [String] = []
            for index in 0..<4 {
                tokens.append(
                    try await Self.ec.sign(TestClaims(sub: "zoe", exp: Date().addingTimeInterval(600 + Double(index)))))
            }
            let requests = tokens + tokens
            let names = try await withThrowingTaskGroup(of: String?.self) { group in
                for token in requests {
                    group.addTask { HTTPTestServer.userRecordName(try await server.sendBearer(token)) }
                }
                var names: [String?] = []
                for try await name in group { names.append(name) }
                return names
            }
            #expect(names.count == requests.count && names.allSatisfy { $0 != nil })
            #expect(Set(names.compactMap { $0 }).count == 1, "\(names)")
        }
    }

    @Test("issuer changes reach the server, cached tokens included; a re-added issuer signs the same user in")
    func issuerChanges() async throws {
        let settings = IdentityTokenSettings(issuerRefreshInterval: .zero)
        try await Self.withIssuer(settings: settings) { server, service in
            let token = try await Self.rsa.sign(TestClaims(sub: "yves"))
            let user = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(token)))
            #expect(try await service.removeIdentityIssuer(TestIssuer.defaultIssuer, container: server.container))
            let removed = try await server.sendBearer(token)
            #expect(removed.isError(.authenticationFailed, status: 401) && removed.reason?.contains("issuer") == true)
            let issuer = StoredIdentityIssuer(
                issuer: TestIssuer.defaultIssuer, audiences: ["com.example.elsewhere"], keySetURL: nil,
                keySet: TestSigningKey.keySet([Self.rsa]))
            try await service.addIdentityIssuer(issuer, container: server.container)
            let audience = try await server.sendBearer(token)
            #expect(
                audience.isError(.authenticationFailed, status: 401) && audience.reason?.contains("audience") == true)
            var restored = issuer
            restored.audiences.append(TestIssuer.defaultAudience)
            try await service.addIdentityIssuer(restored, container: server.container)
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(token)) == user)
            // Replacing the keys drops tokens signed with the old ones, cached or not.
            restored.keySet = TestSigningKey.keySet([Self.ec])
            try await service.addIdentityIssuer(restored, container: server.container)
            #expect(try await server.sendBearer(token).isError(.authenticationFailed, status: 401))
        }
    }

    @Test("a cached token is not served past its expiry on the server's clock, nor after the cache is emptied")
    func cacheBoundedByExpiry() async throws {
        let clock = ManualWallClock()
        let now: @Sendable () -> Date = { clock.now }
        let settings = IdentityTokenSettings(clockSkewLeeway: .zero)
        try await Self.withIssuer(settings: settings, now: now) { server, _ in
            let start = clock.now
            let token = try await Self.rsa.sign(TestClaims(exp: start.addingTimeInterval(30)))
            #expect(try await server.sendBearer(token).status == 200)
            #expect(server.httpServer?.authenticationCache.count == 2)
            clock.set(start.addingTimeInterval(31))
            let expired = try await server.sendBearer(token)
            #expect(expired.isError(.authenticationFailed, status: 401) && expired.reason?.contains("expired") == true)
            clock.set(start)
            #expect(try await server.sendBearer(token).status == 200)
            server.httpServer?.invalidateAuthenticationCache()
            #expect(server.httpServer?.authenticationCache.count == 0)
            #expect(try await server.sendBearer(token).status == 200)
        }
    }
}
