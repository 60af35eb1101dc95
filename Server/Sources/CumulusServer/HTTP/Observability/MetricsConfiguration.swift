import CoreMetrics
import Crypto
import Prometheus

/// Where a server's metrics go, and whether and how `/metrics` serves them.
///
/// ```swift
/// let registry = PrometheusCollectorRegistry()
/// var configuration = ServerConfiguration(logger: logger)
/// configuration.metrics = MetricsConfiguration(
///     factory: PrometheusMetricsFactory(registry: registry),
///     endpoint: .ownListener(registry: registry, host: "127.0.0.1", port: 9464))
/// ```
///
/// The server makes its metrics with ``factory`` and never bootstraps the
/// global `MetricsSystem`, so several servers in one process keep theirs
/// apart.
public struct MetricsConfiguration: Sendable {
    /// What makes the server's counters, gauges and timers: a no-op by default.
    public var factory: any MetricsFactory
    /// How `/metrics` is served; `nil` (the default) answers it 404.
    public var endpoint: MetricsEndpoint?

    /// Creates a configuration; by default no metrics are kept or served.
    public init(factory: any MetricsFactory = NOOPMetricsHandler.instance, endpoint: MetricsEndpoint? = nil) {
        self.factory = factory
        self.endpoint = endpoint
    }
}

/// How `/metrics` answers: a Prometheus registry's text, behind a bearer
/// token on the server's own listener, or on a listener of its own (with a
/// token too, if one is given). It is never public on the server's
/// listener without a token.
public struct MetricsEndpoint: Sendable {
    /// The registry whose metrics `/metrics` answers.
    public let registry: PrometheusCollectorRegistry
    /// Where `/metrics` is served apart from the protocol's paths; `nil`
    /// serves it on the server's own listener.
    public let listener: Listener?
    /// The SHA-256 of the token `Authorization: Bearer` must carry; only the
    /// hash is kept, so that no description shows the token.
    let tokenDigest: SHA256Digest?

    /// A listener for `/metrics` (and `/healthz`, `/readyz`) alone.
    public struct Listener: Sendable {
        /// The address to bind, e.g. `127.0.0.1`.
        public var host: String
        /// The port to bind; `0` lets the system choose one.
        public var port: Int
        /// Called once the listener listens, with its port.
        public var onRunning: @Sendable (Int) async -> Void

        /// Creates a listener.
        public init(host: String, port: Int, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) {
            self.host = host
            self.port = port
            self.onRunning = onRunning
        }
    }

    private init(registry: PrometheusCollectorRegistry, listener: Listener?, token: String?) {
        self.registry = registry
        self.listener = listener
        tokenDigest = token.map { SHA256.hash(data: Array($0.utf8)) }
    }

    /// `/metrics` on the server's own listener, answered only to
    /// `Authorization: Bearer <token>`.
    public static func bearerToken(_ token: String, registry: PrometheusCollectorRegistry) -> MetricsEndpoint {
        MetricsEndpoint(registry: registry, listener: nil, token: token)
    }

    /// `/metrics` on a listener of its own, e.g. on a loopback or private
    /// address that only the scraper reaches; with a `token`, answered only
    /// to `Authorization: Bearer <token>` there too.
    public static func ownListener(
        _ listener: Listener, token: String? = nil, registry: PrometheusCollectorRegistry
    ) -> MetricsEndpoint {
        MetricsEndpoint(registry: registry, listener: listener, token: token)
    }

    /// Whether `header` (an `Authorization` value) carries the token, or no
    /// token is asked for. The hashes are compared in constant time.
    func admits(authorization header: String?) -> Bool {
        guard let tokenDigest else { return true }
        guard let header, header.utf8.count > 7, header.prefix(7).lowercased() == "bearer " else { return false }
        let token = header.dropFirst(7).drop { $0 == " " }
        return SHA256.hash(data: Array(token.utf8)) == tokenDigest
    }
}
