import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

/// Issuers whose key sets each server fetches from a URL: here a JWKS
/// served on loopback, whose keys the tests rotate.
@Suite("HTTP identity key set URLs")
struct HTTPIdentityKeySetURLTests {
    static let first = TestSigningKey.es256(keyID: "first")
    static let second = TestSigningKey.es256(keyID: "second")

    /// A server whose container's issuer fetches its keys from `keySets`.
    static func withURLIssuer(
        _ keySets: LoopbackKeySetServer, settings: IdentityTokenSettings,
        _ body: @Sendable (HTTPTestServer, CloudService, String) async throws -> Void
    ) async throws {
        try await keySets.run { url in
            try await withURLIssuer(url, settings: settings) { server, service in try await body(server, service, url) }
        }
    }

    /// A server whose container's issuer fetches its keys from `url`.
    static func withURLIssuer(
        _ url: String, settings: IdentityTokenSettings,
        _ body: @Sendable (HTTPTestServer, CloudService) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.identityTokens = settings
        try await HTTPTestServer.with(configuration: configuration) { server in
            let service = try #require(server.service as? CloudService)
            try await service.addIdentityIssuer(
                StoredIdentityIssuer(
                    issuer: TestIssuer.defaultIssuer, audiences: [TestIssuer.defaultAudience], keySetURL: url,
                    keySet: nil),
                container: server.container)
            try await body(server, service)
        }
    }

    @Test("a rotated key set is fetched for a new kid: new tokens work, the old key's fail, cached ones too")
    func rotation() async throws {
        let keySets = LoopbackKeySetServer(document: TestSigningKey.keySet([Self.first]))
        let settings = IdentityTokenSettings(minimumKeySetFetchInterval: .zero)
        try await Self.withURLIssuer(keySets, settings: settings) { server, _, _ in
            let old = try await Self.first.sign(TestClaims(sub: "ann"))
            let ann = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(old)))
            let another = try await Self.first.sign(TestClaims(sub: "ann", exp: Date().addingTimeInterval(700)))
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(another)) == ann)
            #expect(keySets.fetchCount == 1)

            keySets.serve(TestSigningKey.keySet([Self.second]))
            let new = try await Self.second.sign(TestClaims(sub: "ann"))
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(new)) == ann)
            #expect(keySets.fetchCount == 2)
            for token in [old, try await Self.first.sign(TestClaims(sub: "ann", exp: Date().addingTimeInterval(800)))] {
                let refused = try await server.sendBearer(token)
                #expect(refused.isError(.authenticationFailed, status: 401) && refused.reason?.contains("kid") == true)
            }
        }
    }

    @Test("a failed refresh keeps the last good key set; an unknown kid refetches at most once per interval")
    func failedRefresh() async throws {
        let keySets = LoopbackKeySetServer(document: TestSigningKey.keySet([Self.first]))
        let settings = IdentityTokenSettings(minimumKeySetFetchInterval: .seconds(3600))
        try await Self.withURLIssuer(keySets, settings: settings) { server, _, _ in
            #expect(try await server.sendBearer(try await Self.first.sign(TestClaims())).status == 200)
            keySets.serve(nil)
            for _ in 0..<3 {
                let unknown = try await server.sendBearer(try await Self.second.sign(TestClaims()))
                #expect(unknown.isError(.authenticationFailed, status: 401))
            }
            // The first fetch was just made: an unknown kid waits for the interval.
            #expect(keySets.fetchCount == 1)
            let answer = try await server.sendBearer(
                try await Self.first.sign(TestClaims(exp: Date().addingTimeInterval(900))))
            #expect(answer.status == 200)
        }
        let failing = LoopbackKeySetServer(document: TestSigningKey.keySet([Self.first]))
        try await Self.withURLIssuer(failing, settings: IdentityTokenSettings(minimumKeySetFetchInterval: .zero)) {
            server, _, _ in
            #expect(try await server.sendBearer(try await Self.first.sign(TestClaims())).status == 200)
            failing.serve("not a key set")
            let unknown = try await server.sendBearer(try await Self.second.sign(TestClaims()))
            #expect(unknown.isError(.authenticationFailed, status: 401))
            #expect(failing.fetchCount == 2)
            let kept = try await server.sendBearer(
                try await Self.first.sign(TestClaims(exp: Date().addingTimeInterval(900))))
            #expect(kept.status == 200)
        }
    }

    @Test("a key set that cannot be fetched at all answers 503 TRY_AGAIN_LATER with Retry-After")
    func neverFetched() async throws {
        let keySets = LoopbackKeySetServer(document: nil)
        try await Self.withURLIssuer(keySets, settings: IdentityTokenSettings()) { server, _, _ in
            let answer = try await server.sendBearer(try await Self.first.sign(TestClaims()))
            #expect(answer.isError(.tryAgainLater, status: 503), "\(answer.status) \(answer.reason ?? "")")
            #expect(answer.retryAfter != nil)
        }
    }
}
