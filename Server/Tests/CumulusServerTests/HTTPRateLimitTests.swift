import Cumulus
import CumulusTesting
import Foundation
import Synchronization
import Testing

@testable import CumulusServer
@testable import cumulus

/// The request limits: per address before authentication, per user after
/// it, and failed authentications per address, on a clock the test moves.
@Suite("HTTP request limits")
struct HTTPRateLimitTests {
    /// A configuration with only the given limits, on `clock`.
    static func configuration(
        clock: ManualClock, perAddress: RateLimit? = nil, perUser: RateLimit? = nil,
        failedAuthentications: RateLimit? = nil, trustedProxies: [String] = []
    ) -> ServerConfiguration {
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.rateLimits = RateLimits(
            perAddress: perAddress, perUser: perUser, failedAuthentications: failedAuthentications,
            trustedProxies: trustedProxies, uptime: { clock.now.offset })
        return configuration
    }

    /// Whether `answer` is `THROTTLED` with a `retryAfter` of `seconds` and a
    /// `Retry-After` of those seconds rounded up.
    static func isThrottled(_ answer: HTTPAnswer, retryAfter seconds: Double) -> Bool {
        guard answer.isError(.throttled, status: 429), let given = (answer.json["retryAfter"] as? NSNumber)?.doubleValue
        else {
            return false
        }
        return abs(given - seconds) < 0.01 && answer.retryAfter == String(Int(seconds.rounded(.up)))
    }

    @Test("a burst over the address limit is throttled until a token comes back; another address is not")
    func addressLimit() async throws {
        let clock = ManualClock()
        let configuration = Self.configuration(
            clock: clock, perAddress: RateLimit(perSecond: 0.5, burst: 3), trustedProxies: ["127.0.0.1"])
        try await HTTPTestServer.with(configuration: configuration) { server in
            let first = ["X-Forwarded-For": "203.0.113.7"]
            for _ in 0..<3 {
                #expect(try await server.send("GET", "/share/nothing", headers: first).status == 404)
            }
            let throttled = try await server.send("GET", "/share/nothing", headers: first)
            #expect(Self.isThrottled(throttled, retryAfter: 2), "\(throttled.status) \(throttled.json)")
            // Every route counts, an authenticated one too.
            let database = try await server.send(
                "GET", server.path("users/caller"), query: server.userQuery, headers: first)
            #expect(database.isError(.throttled, status: 429))

            // Another client behind the same trusted proxy has its own bucket.
            let second = ["X-Forwarded-For": "198.51.100.1, 203.0.113.9"]
            #expect(try await server.send("GET", "/share/nothing", headers: second).status == 404)

            clock.advance(by: .milliseconds(1999))
            #expect(try await server.send("GET", "/share/nothing", headers: first).status == 429)
            clock.advance(by: .milliseconds(1))
            #expect(try await server.send("GET", "/share/nothing", headers: first).status == 404)
            #expect(try await server.send("GET", "/share/nothing", headers: first).status == 429)
        }
    }

    @Test("X-Forwarded-For from a peer that is not a trusted proxy changes nothing")
    func forwardedForIgnored() async throws {
        let clock = ManualClock()
        let configuration = Self.configuration(clock: clock, perAddress: RateLimit(perSecond: 1, burst: 2))
        try await HTTPTestServer.with(configuration: configuration) { server in
            for address in ["10.0.0.1", "10.0.0.2"] {
                let answer = try await server.send("GET", "/share/nothing", headers: ["X-Forwarded-For": address])
                #expect(answer.status == 404)
            }
            let spoofed = try await server.send("GET", "/share/nothing", headers: ["X-Forwarded-For": "10.0.0.3"])
            #expect(Self.isThrottled(spoofed, retryAfter: 1))
        }
    }

    @Test("a user over the limit is throttled; another user of the container is not", arguments: TestStore.single)
    func userLimit(_ store: TestStore) async throws {
        let clock = ManualClock()
        let configuration = Self.configuration(clock: clock, perUser: RateLimit(perSecond: 4, burst: 2))
        try await HTTPTestServer.with(store: store, configuration: configuration) { server in
            let bob = try await server.service.addUser(named: "bob", container: server.container)
            let bobQuery = ["ckAPIToken": server.apiToken, "ckWebAuthToken": bob.webAuthToken]
            for _ in 0..<2 {
                #expect(try await server.sendAsUser("users/caller", method: "GET").status == 200)
            }
            let throttled = try await server.sendAsUser("users/caller", method: "GET")
            #expect(Self.isThrottled(throttled, retryAfter: 0.25), "\(throttled.status) \(throttled.json)")
            #expect(try await server.send("GET", server.path("users/caller"), query: bobQuery).status == 200)
            // An anonymous reader meets the address limit only.
            let anonymous = try await server.send(
                "POST", server.path("records/query", scope: "public"), query: ["ckAPIToken": server.apiToken],
                body: Array(#"{"query":{"recordType":"Note"}}"#.utf8))
            #expect(anonymous.status == 200)

            clock.advance(by: .milliseconds(250))
            #expect(try await server.sendAsUser("users/caller", method: "GET").status == 200)
        }
    }

    @Test("an address that spent its failed authentications waits for unknown credentials only; valid ones are served")
    func failedAuthentications() async throws {
        let clock = ManualClock()
        let lookups = Atomic<Int>(0)
        let configuration = Self.configuration(
            clock: clock, failedAuthentications: RateLimit(perSecond: 0.1, burst: 2), trustedProxies: ["127.0.0.1"])
        let wrap: @Sendable (CloudService) -> any CloudServing = { service in
            var wrapped = WrappedService(base: service)
            wrapped.credentialLookedUp = { lookups.add(1, ordering: .relaxed) }
            return wrapped
        }
        try await HTTPTestServer.with(configuration: configuration, wrap: wrap) { server in
            // Many people behind one NAT: a user of the container has signed in lately.
            let shared = ["X-Forwarded-For": "203.0.113.66"]
            let caller = server.path("users/caller")
            #expect(try await server.send("GET", caller, query: server.userQuery, headers: shared).status == 200)
            let wrong = ["ckAPIToken": server.apiToken, "ckWebAuthToken": "not-a-user"]
            for _ in 0..<2 {
                let answer = try await server.send("GET", caller, query: wrong, headers: shared)
                #expect(answer.isError(.authenticationFailed, status: 401))
            }
            // Another guess from that address waits, without the store being asked about it.
            let before = lookups.load(ordering: .relaxed)
            let guessed = try await server.send("GET", caller, query: wrong, headers: shared)
            #expect(Self.isThrottled(guessed, retryAfter: 10), "\(guessed.status) \(guessed.json)")
            #expect(lookups.load(ordering: .relaxed) == before)
            // The user's valid credentials are served, again and again, and spend nothing.
            for _ in 0..<3 {
                let good = try await server.send("GET", caller, query: server.userQuery, headers: shared)
                #expect(good.status == 200, "\(good.status) \(good.json)")
            }
            // So are an anonymous reader of the public database and a page that asks for no credential.
            let anonymous = try await server.send(
                "POST", server.path("records/query", scope: "public"), query: ["ckAPIToken": server.apiToken],
                body: Array(#"{"query":{"recordType":"Note"}}"#.utf8), headers: shared)
            #expect(anonymous.status == 200, "\(anonymous.status) \(anonymous.json)")
            #expect(try await server.send("GET", "/share/nothing", headers: shared).status == 404)
            let stillGuessing = try await server.send("GET", caller, query: wrong, headers: shared)
            #expect(Self.isThrottled(stillGuessing, retryAfter: 10))
            // Another address is not affected.
            let other = ["X-Forwarded-For": "203.0.113.67"]
            #expect(try await server.send("GET", caller, query: wrong, headers: other).status == 401)

            // A credential the server has not checked lately is checked once the address has a token again.
            server.httpServer?.invalidateAuthenticationCache()
            let unchecked = try await server.send("GET", caller, query: server.userQuery, headers: shared)
            #expect(Self.isThrottled(unchecked, retryAfter: 10), "\(unchecked.status) \(unchecked.json)")
            clock.advance(by: .seconds(10))
            #expect(try await server.send("GET", caller, query: server.userQuery, headers: shared).status == 200)
            let again = try await server.send("GET", caller, query: wrong, headers: shared)
            #expect(again.isError(.authenticationFailed, status: 401))
            #expect(try await server.send("GET", caller, query: wrong, headers: shared).status == 429)
        }
    }

    @Test("RemoteCloudDatabase surfaces THROTTLED as CloudError.throttled with retryAfter")
    func remoteDatabaseSeesThrottled() async throws {
        let clock = ManualClock()
        let configuration = Self.configuration(clock: clock, perUser: RateLimit(perSecond: 0.2, burst: 1))
        try await HTTPTestServer.with(configuration: configuration) { server in
            let database = RemoteCloudDatabase(
                configuration: RemoteCloudDatabase.Configuration(
                    baseURL: server.baseURL, container: server.container, scope: .private),
                credentials: .user(apiToken: server.apiToken, webAuthToken: server.webAuthToken))
            // However many requests the client makes first, one soon meets the limit.
            var thrown: CloudError?
            for _ in 0..<5 where thrown == nil {
                do {
                    _ = try await database.listZones()
                } catch let error as CloudError {
                    thrown = error
                }
            }
            let error = try #require(thrown)
            #expect(error.code == .throttled)
            #expect(error.retryAfter == .seconds(5))
            #expect(error.isTransient)
        }
    }

    @Test("the options default to RateLimits and take RATE:BURST or off; bad values are refused")
    func options() throws {
        let defaults = try ServeCommand.parse([]).serverConfiguration(logger: quietLogger).rateLimits
        #expect(defaults.perAddress == RateLimits().perAddress)
        #expect(defaults.perUser == RateLimits().perUser)
        #expect(defaults.failedAuthentications == RateLimits().failedAuthentications)
        #expect(defaults.trustedProxies.isEmpty)

        let set = try ServeCommand.parse([
            "--address-rate-limit", "10:20", "--user-rate-limit", "off", "--failed-auth-limit", "0.5:3",
            "--trusted-proxy", "127.0.0.1", "--trusted-proxy", "::1", "--rate-limit-clients", "50",
        ]).serverConfiguration(logger: quietLogger).rateLimits
        #expect(set.perAddress == RateLimit(perSecond: 10, burst: 20))
        #expect(set.perUser == nil)
        #expect(set.failedAuthentications == RateLimit(perSecond: 0.5, burst: 3))
        #expect(try set.normalizedTrustedProxies() == ["127.0.0.1", "::1"])
        #expect(set.trackedClients == 50)

        let refused: [[String]] = [
            ["--address-rate-limit", "10"], ["--address-rate-limit", "10:0"], ["--user-rate-limit", "-1:5"],
            ["--failed-auth-limit", "nan:5"], ["--failed-auth-limit", "fast"], ["--trusted-proxy", "proxy.local"],
            ["--rate-limit-clients", "0"],
        ]
        for arguments in refused {
            #expect(throws: (any Error).self, "\(arguments)") { try ServeCommand.parse(arguments) }
        }
    }
}

/// The token bucket and the limiter, with no server.
@Suite("Token buckets")
struct TokenBucketTests {
    @Test("a bucket gives its burst, then one token per refill interval, never more than the burst")
    func bucket() {
        let limit = RateLimit(perSecond: 2, burst: 2)
        var bucket = TokenBucket(limit: limit, now: .zero)
        #expect(bucket.take(limit, now: .zero) == nil)
        #expect(bucket.take(limit, now: .zero) == nil)
        #expect(bucket.take(limit, now: .zero) == .milliseconds(500))
        #expect(bucket.take(limit, now: .milliseconds(250)) == .milliseconds(250))
        #expect(bucket.take(limit, now: .milliseconds(500)) == nil)
        #expect(bucket.isFull(limit, now: .seconds(2)))
        #expect(bucket.take(limit, now: .seconds(100)) == nil)
        #expect(bucket.take(limit, now: .seconds(100)) == nil)
        #expect(bucket.take(limit, now: .seconds(100)) != nil)
        // A clock that goes back adds nothing.
        #expect(bucket.take(limit, now: .seconds(99)) != nil)
    }

    @Test("the limiter remembers at most its capacity, and forgets a full bucket it is asked about")
    func boundedMemory() {
        let limiter = RateLimiter<String>(limit: RateLimit(perSecond: 1, burst: 1), capacity: 3, uptime: { .zero })
        for client in ["a", "b", "c", "d", "e"] { #expect(limiter.take(client) == nil) }
        #expect(limiter.trackedCount == 3)
        #expect(limiter.take("e") == .seconds(1))
        // "a" was forgotten to make room: it starts again with a full bucket.
        #expect(limiter.take("a") == nil)
        #expect(limiter.wait("never-seen") == nil)
        #expect(limiter.trackedCount == 3)
    }
}
