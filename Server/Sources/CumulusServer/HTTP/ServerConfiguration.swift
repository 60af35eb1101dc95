import Foundation
import Logging

/// How the record server listens and what it accepts.
public struct ServerConfiguration: Sendable {
    /// The address to bind, e.g. `127.0.0.1` or `0.0.0.0`.
    public var host: String
    /// The port to bind; `0` lets the system choose one (the server reports
    /// it once it listens).
    public var port: Int
    /// The largest request body read, in bytes; a larger one is answered 413.
    public var maximumBodySize: Int
    /// The most body bytes held, all requests together, for requests signed
    /// with a server-to-server key whose signature is not checked yet (it
    /// covers the body). A request that would go over it is answered 503
    /// `TRY_AGAIN_LATER` with `retryAfter`; one larger than the whole limit, 413.
    public var maximumUnauthenticatedBodyBytes: Int
    /// The most signed request bodies read at once before their signature is checked.
    public var maximumUnauthenticatedBodies: Int
    /// The longest from the first byte of a request to the end of its head
    /// (request line and headers); then the connection is answered 408 and closed.
    public var requestHeadTimeout: Duration
    /// The longest from the end of a request's head to the end of its body,
    /// and the longest a body may stall; then the request is answered 408
    /// and the connection closed. A body that arrives at
    /// ``minimumBodyRate`` or faster gets longer.
    public var requestBodyTimeout: Duration
    /// The slowest a request body may arrive on average, in bytes a second,
    /// to get more than ``requestBodyTimeout``: each byte that arrives adds
    /// the time it takes at this rate, so that a large asset on a slow link
    /// is not cut off. `0` holds every body to ``requestBodyTimeout``.
    public var minimumBodyRate: Int
    /// How long a connection may stay open with no request on it; a request
    /// being answered (a notification long poll included) is never cut.
    public var idleConnectionTimeout: Duration
    /// The most callers kept by the authentication cache (API tokens, web
    /// auth tokens and server keys found valid); `0` turns the cache off.
    public var authenticationCacheSize: Int
    /// How long the cache trusts what it found before asking the store again.
    /// A revoked credential fails at once on a server that hears of it (see
    /// ``AuthenticationCache``); this bounds how long it goes on working on
    /// one that cannot (its PostgreSQL listening connection broken unnoticed).
    public var authenticationCacheLifetime: Duration
    /// The longest a notification long poll waits; a client may ask less
    /// with `?timeout=` (seconds).
    public var notificationPollTimeout: Duration
    /// How often the server deletes the assets no one can use any more
    /// (``CloudServing/collectAssets()``), starting when it starts; `nil`
    /// never.
    public var assetCollectionInterval: Duration?
    /// How far a signed request's date may be from ``now``.
    public var signatureDateTolerance: Duration
    /// How identity tokens are checked and their issuers' keys kept.
    public var identityTokens = IdentityTokenSettings()
    /// The server's wall clock, which a signed request's date and an identity
    /// token's expiry are checked against: the system time by default, a
    /// fixed or moving date in tests.
    public var now: @Sendable () -> Date
    /// Where the server logs: one line per request, never a token.
    public var logger: Logger
    /// TLS on the listening port; `nil` speaks plain HTTP.
    public var tls: ServerTLS? = nil
    /// The request limits per client address and per user.
    public var rateLimits = RateLimits()
    /// The server's metrics and `/metrics`: none kept and 404 by default.
    public var metrics = MetricsConfiguration()
    /// The operator's console under `/console/`, served over a ``CloudService``
    /// (whose store keeps its tokens); `nil` (the default) serves none.
    public var console: ConsoleConfiguration? = nil

    /// Creates a configuration with the default limits.
    ///
    /// - Parameter logger: Where the server logs; the caller chooses its
    ///   label, level and handler.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, maximumBodySize: Int = 16 * 1024 * 1024,
        maximumUnauthenticatedBodyBytes: Int = 32 * 1024 * 1024, maximumUnauthenticatedBodies: Int = 64,
        requestHeadTimeout: Duration = .seconds(10), requestBodyTimeout: Duration = .seconds(60),
        minimumBodyRate: Int = 16 * 1024, idleConnectionTimeout: Duration = .seconds(75),
        authenticationCacheSize: Int = 10_000,
        authenticationCacheLifetime: Duration = .seconds(60), notificationPollTimeout: Duration = .seconds(25),
        assetCollectionInterval: Duration? = .seconds(3600), signatureDateTolerance: Duration = .seconds(300),
        now: @escaping @Sendable () -> Date = { Date() },
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.maximumBodySize = maximumBodySize
        self.maximumUnauthenticatedBodyBytes = maximumUnauthenticatedBodyBytes
        self.maximumUnauthenticatedBodies = maximumUnauthenticatedBodies
        self.requestHeadTimeout = requestHeadTimeout
        self.requestBodyTimeout = requestBodyTimeout
        self.minimumBodyRate = minimumBodyRate
        self.idleConnectionTimeout = idleConnectionTimeout
        self.authenticationCacheSize = authenticationCacheSize
        self.authenticationCacheLifetime = authenticationCacheLifetime
        self.notificationPollTimeout = notificationPollTimeout
        self.assetCollectionInterval = assetCollectionInterval
        self.signatureDateTolerance = signatureDateTolerance
        self.now = now
        self.logger = logger
    }
}
