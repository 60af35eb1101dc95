import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

/// Fetching an issuer's key set cannot be turned against the server: the
/// fetch reads at most the size limit and ends at its deadline, whatever
/// the URL does. Timing-sensitive: run apart from the other suites.
@Suite("HTTP key set fetch limits", .serialized)
struct HTTPKeySetFetchTests {
    static let key = TestSigningKey.es256(keyID: "fetched")
    static let limit = 64 * 1024
    static let deadline: Duration = .seconds(1)
    /// The longest a sign-in may wait for a fetch held to ``deadline``, on a busy machine.
    static let patience: Duration = .milliseconds(2900)

    static var settings: IdentityTokenSettings {
        IdentityTokenSettings(
            minimumKeySetFetchInterval: .seconds(3600), keySetFetchTimeout: deadline, maximumKeySetSize: limit)
    }

    /// A sign-in with a token of the issuer: the answer, and how long it took.
    static func signIn(_ server: HTTPTestServer) async throws -> (HTTPAnswer, Duration) {
        let token = try await key.sign(TestClaims())
        let start = ContinuousClock.now
        let answer = try await server.sendBearer(token)
        return (answer, ContinuousClock.now - start)
    }

    /// Runs `body` against a server whose issuer's key set is at `keySets`, then stops `keySets`.
    static func withIssuer(
        at keySets: ScriptedHTTPServer, _ body: @Sendable (HTTPTestServer) async throws -> Void
    ) async throws {
        defer { keySets.stop() }
        try await HTTPIdentityKeySetURLTests.withURLIssuer(keySets.url, settings: settings) { server, _ in
            try await body(server)
        }
    }

    @Test("a key set that streams without end is read up to the limit and no further")
    func endless() async throws {
        let keySets = try ScriptedHTTPServer(.endless(cap: 128 << 20))
        try await Self.withIssuer(at: keySets) { server in
            let (answer, elapsed) = try await Self.signIn(server)
            #expect(answer.isError(.tryAgainLater, status: 503), "\(answer.status) \(answer.reason ?? "")")
            #expect(elapsed < Self.patience, "\(elapsed)")
        }
        // What went out before the fetch let go: the limit, and what the sockets' buffers took.
        #expect(keySets.bytesSent < 16 << 20, "\(keySets.bytesSent) bytes sent")
    }

    @Test("a key set URL that never answers holds no sign-in past the deadline, concurrent ones included")
    func stall() async throws {
        let keySets = try ScriptedHTTPServer(.stall)
        try await Self.withIssuer(at: keySets) { server in
            let results = try await withThrowingTaskGroup(of: (HTTPAnswer, Duration).self) { group in
                for _ in 0..<3 { group.addTask { try await Self.signIn(server) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (answer, elapsed) in results {
                #expect(answer.isError(.tryAgainLater, status: 503), "\(answer.status) \(answer.reason ?? "")")
                #expect(elapsed < Self.patience, "\(elapsed)")
            }
            // The failed fetch is not tried again at once: the next sign-in is answered without waiting.
            let (again, elapsed) = try await Self.signIn(server)
            #expect(again.isError(.tryAgainLater, status: 503) && elapsed < .seconds(1), "\(elapsed)")
        }
        #expect(keySets.connectionCount == 1)
    }

    @Test("a key set that drips a byte at a time is given up at the deadline")
    func drip() async throws {
        let keySets = try ScriptedHTTPServer(.drip(every: .milliseconds(100)))
        try await Self.withIssuer(at: keySets) { server in
            let (answer, elapsed) = try await Self.signIn(server)
            #expect(answer.isError(.tryAgainLater, status: 503), "\(answer.status) \(answer.reason ?? "")")
            #expect(elapsed < Self.patience, "\(elapsed)")
        }
    }

    @Test("a key set that comes after the deadline is not used")
    func late() async throws {
        let keySets = try ScriptedHTTPServer(.late(.seconds(4), document: TestSigningKey.keySet([Self.key])))
        try await Self.withIssuer(at: keySets) { server in
            let (answer, elapsed) = try await Self.signIn(server)
            #expect(answer.isError(.tryAgainLater, status: 503), "\(answer.status) \(answer.reason ?? "")")
            #expect(elapsed < Self.patience, "\(elapsed)")
        }
    }

    @Test("a key set of exactly the limit is used; one byte more is refused")
    func limit() async throws {
        let document = TestSigningKey.keySet([Self.key])
        let exact = document + String(repeating: " ", count: Self.limit - document.utf8.count)
        let fits = try ScriptedHTTPServer(.late(.zero, document: exact))
        try await Self.withIssuer(at: fits) { server in
            let (answer, _) = try await Self.signIn(server)
            #expect(answer.status == 200, "\(answer.status) \(answer.reason ?? "")")
        }
        let over = try ScriptedHTTPServer(.late(.zero, document: exact + " "))
        try await Self.withIssuer(at: over) { server in
            let (answer, _) = try await Self.signIn(server)
            #expect(answer.isError(.tryAgainLater, status: 503), "\(answer.status) \(answer.reason ?? "")")
        }
    }
}
