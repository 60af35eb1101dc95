import Crypto
import Cumulus
import Foundation
import Synchronization
import Testing

@testable import CumulusServer

@Suite("HTTP authentication cache")
struct HTTPAuthenticationCacheTests {
    /// How many times the store was asked about each kind of credential.
    final class Lookups: Sendable {
        private let counts = Mutex<[String: Int]>([:])

        subscript(name: String) -> Int { counts.withLock { $0[name, default: 0] } }

        func count(_ name: String) { counts.withLock { $0[name, default: 0] += 1 } }
    }

    /// A service that counts the credential lookups reaching the store.
    struct CountingService: CloudServing {
        let base: any CloudServing
        let lookups: Lookups

        func perform(_ request: CloudRequest, as caller: Caller) async throws -> CloudResponse {
            try await base.perform(request, as: caller)
        }

        func fieldTypes(container: String, environment: CloudEnvironment) async throws -> FieldTypeLookup {
            try await base.fieldTypes(container: container, environment: environment)
        }

        func addContainer(named name: String) async throws -> String {
            try await base.addContainer(named: name)
        }

        func addUser(named name: String, container: String) async throws
            -> (userRecordName: String, webAuthToken: String)
        {
            try await base.addUser(named: name, container: container)
        }

        func addServerKey(container: String, publicKeyPEM: String) async throws -> String {
            try await base.addServerKey(container: container, publicKeyPEM: publicKeyPEM)
        }

        func authenticateContainer(named name: String, apiToken: String) async throws -> Bool {
            lookups.count("container")
            return try await base.authenticateContainer(named: name, apiToken: apiToken)
        }

        func user(container: String, webAuthToken: String) async throws -> String? {
            lookups.count("user")
            return try await base.user(container: container, webAuthToken: webAuthToken)
        }

        func serverKey(container: String, keyID: String) async throws -> String? {
            lookups.count("key")
            return try await base.serverKey(container: container, keyID: keyID)
        }

        func createNotificationToken(for caller: Caller) async throws -> String {
            try await base.createNotificationToken(for: caller)
        }

        func pollNotifications(token: String, cursor: String?, timeout: Duration) async throws -> NotificationBatch {
            try await base.pollNotifications(token: token, cursor: cursor, timeout: timeout)
        }

        func sharePreview(shortGUID: String) async throws -> SharePreview? {
            try await base.sharePreview(shortGUID: shortGUID)
        }
    }

    static func counting(_ lookups: Lookups) -> @Sendable (CloudService) -> any CloudServing {
        { CountingService(base: $0, lookups: lookups) }
    }

    @Test("a second request does not ask the store; invalidation makes the next one ask again")
    func tokens() async throws {
        let lookups = Lookups()
        try await HTTPTestServer.with(wrap: Self.counting(lookups)) { server in
            let httpServer = try #require(server.httpServer)
            #expect(try await server.sendAsUser("zones/list", method: "GET").status == 200)
            #expect(lookups["container"] == 1 && lookups["user"] == 1)
            #expect(try await server.sendAsUser("zones/list", method: "GET").status == 200)
            #expect(lookups["container"] == 1 && lookups["user"] == 1)

            httpServer.invalidateAuthenticationCache(container: "iCloud.com.example.other")
            #expect(try await server.sendAsUser("zones/list", method: "GET").status == 200)
            #expect(lookups["container"] == 1 && lookups["user"] == 1)

            httpServer.invalidateAuthenticationCache(container: server.container)
            #expect(try await server.sendAsUser("zones/list", method: "GET").status == 200)
            #expect(lookups["container"] == 2 && lookups["user"] == 2)

            httpServer.invalidateAuthenticationCache()
            #expect(try await server.sendAsUser("zones/list", method: "GET").status == 200)
            #expect(lookups["container"] == 3 && lookups["user"] == 3)
        }
    }

    @Test("wrong tokens are never cached as valid and do not fill the cache")
    func wrongTokens() async throws {
        let lookups = Lookups()
        // More wrong credentials from one address than its failed-authentication limit allows.
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.rateLimits = .unlimited
        try await HTTPTestServer.with(configuration: configuration, wrap: Self.counting(lookups)) { server in
            let cache = try #require(server.httpServer?.authenticationCache)
            let path = server.path("zones/list")
            for attempt in 0..<2 {
                let wrongUser = try await server.send(
                    "GET", path, query: ["ckAPIToken": server.apiToken, "ckWebAuthToken": "nobody-\(attempt)"])
                #expect(wrongUser.isError(.authenticationFailed, status: 401))
                let wrongUserAgain = try await server.send(
                    "GET", path, query: ["ckAPIToken": server.apiToken, "ckWebAuthToken": "nobody-\(attempt)"])
                #expect(wrongUserAgain.isError(.authenticationFailed, status: 401))
            }
            #expect(lookups["user"] == 4)
            for attempt in 0..<50 {
                let junk = String(format: "%064x", attempt)
                let answer = try await server.send(
                    "GET", path, query: ["ckAPIToken": junk, "ckWebAuthToken": server.webAuthToken])
                #expect(answer.isError(.authenticationFailed, status: 401))
            }
            #expect(lookups["container"] == 51)
            // The one valid API token, and no user.
            #expect(cache.count == 1)
        }
    }

    @Test("a server key is looked up once")
    func serverKeys() async throws {
        let lookups = Lookups()
        try await HTTPTestServer.with(wrap: Self.counting(lookups)) { server in
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let path = server.path("zones/list", scope: "public")
            for _ in 0..<3 {
                let answer = try await server.send(
                    "GET", path,
                    headers: try HTTPAuthenticationTests.signature(key: key, keyID: keyID, body: [], path: path))
                #expect(answer.status == 200)
            }
            #expect(lookups["key"] == 1)
            let wrongKey = P256.Signing.PrivateKey()
            let forged = try await server.send(
                "GET", path,
                headers: try HTTPAuthenticationTests.signature(key: wrongKey, keyID: keyID, body: [], path: path))
            #expect(forged.isError(.authenticationFailed, status: 401))
        }
    }

    @Test("an entry is trusted for its lifetime, and the least recently used goes first when full")
    func lifetimeAndSize() {
        let now = Mutex(ContinuousClock.now)
        let cache = AuthenticationCache(size: 2, lifetime: .seconds(60), now: { now.withLock { $0 } })
        cache.rememberUser("_a", webAuthToken: "ta", container: "c")
        cache.rememberUser("_b", webAuthToken: "tb", container: "c")
        #expect(cache.user(webAuthToken: "ta", container: "c") == "_a")
        cache.rememberUser("_c", webAuthToken: "tc", container: "c")
        #expect(cache.user(webAuthToken: "tb", container: "c") == nil)
        #expect(cache.user(webAuthToken: "ta", container: "c") == "_a")
        #expect(cache.user(webAuthToken: "tc", container: "c") == "_c")
        #expect(cache.user(webAuthToken: "ta", container: "other") == nil)
        #expect(!cache.isValidAPIToken("ta", container: "c"))

        now.withLock { $0 += .seconds(61) }
        #expect(cache.user(webAuthToken: "ta", container: "c") == nil)
        #expect(cache.count == 1)

        let off = AuthenticationCache(size: 0, lifetime: .seconds(60))
        off.rememberValidAPIToken("t", container: "c")
        #expect(!off.isValidAPIToken("t", container: "c"))
    }

    @Test("the LRU map keeps the most recently used entries")
    func lru() {
        var cache = LRUCache<Int, String>(capacity: 3)
        for key in 0..<3 { cache.insert("\(key)", for: key) }
        #expect(cache.keysByRecency == [2, 1, 0])
        #expect(cache.value(for: 0) == "0")
        cache.insert("3", for: 3)
        #expect(cache.keysByRecency == [3, 0, 2])
        #expect(cache.value(for: 1) == nil)
        cache.insert("2'", for: 2)
        #expect(cache.keysByRecency == [2, 3, 0])
        cache.removeValue(for: 3)
        cache.removeAll { $0 == "0" }
        #expect(cache.keysByRecency == [2])
        cache.insert("4", for: 4)
        cache.insert("5", for: 5)
        cache.insert("6", for: 6)
        #expect(cache.keysByRecency == [6, 5, 4])
        #expect(cache.count == 3)
    }
}
