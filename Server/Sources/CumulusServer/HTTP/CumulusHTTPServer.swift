import CloudCodable
import CloudProtocol
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// The record server's HTTP side: the CloudKit Web Services paths over a
/// ``CloudServing``.
///
/// ```swift
/// let server = CumulusHTTPServer(service: service, configuration: ServerConfiguration(port: 0, logger: logger))
/// try await server.run { port in print("listening on \(port)") }
/// ```
public struct CumulusHTTPServer: Sendable {
    /// The service that carries requests out.
    public let service: any CloudServing
    /// How the server listens and what it accepts.
    public let configuration: ServerConfiguration
    /// Errors injected into the next database requests, for tests.
    @_spi(Testing) public let faults: ServerFaults?
    /// The credentials the server found valid, shared by every copy of this value.
    public let authenticationCache: AuthenticationCache
    /// The probes, the metrics and `/metrics`, shared by every copy of this value.
    let observability: ServerObservability
    /// Checks identity tokens; its issuers and key sets are shared by every copy of this value.
    let identityTokens: IdentityTokenVerifier
    /// The console's sessions, when the configuration turns it on; shared by every copy of this value.
    public let consoleSessions: ConsoleSessions?
    /// The last failed requests, which the console lists; shared by every copy of this value.
    public let recentFailures = RecentFailures()

    /// Creates a server; nothing listens until ``run(onRunning:)``.
    public init(service: any CloudServing, configuration: ServerConfiguration) {
        self.init(service: service, configuration: configuration, faults: nil)
    }

    /// Creates a server that answers the next database requests with the
    /// errors injected into `faults`, for tests.
    @_spi(Testing) public init(service: any CloudServing, configuration: ServerConfiguration, faults: ServerFaults?) {
        self.service = service
        self.configuration = configuration
        self.faults = faults
        authenticationCache = AuthenticationCache(
            size: configuration.authenticationCacheSize, lifetime: configuration.authenticationCacheLifetime)
        observability = ServerObservability(service: service, configuration: configuration)
        identityTokens = IdentityTokenVerifier(
            service: service, settings: configuration.identityTokens, now: configuration.now,
            logger: configuration.logger)
        // The console reads users, their tokens and its own tokens: only the record server's service keeps them.
        consoleSessions = configuration.console.flatMap { console in
            (service as? CloudService).map { ConsoleSessions(configuration: console, service: $0) }
        }
    }

    /// Forgets the credentials the server found valid, of one container or
    /// of all. A revoked token, a removed user or key and a rotated API
    /// token need no call: the cache drops everything when the service's
    /// credentials version moves on (``CloudServing/credentialsVersion()``).
    public func invalidateAuthenticationCache(container: String? = nil) {
        if let container {
            authenticationCache.invalidate(container: container)
        } else {
            authenticationCache.invalidateAll()
        }
    }

    /// Listens until the task is cancelled, then shuts down gracefully: it
    /// stops accepting connections and returns once the requests in flight
    /// are answered (a notification poll is answered `TRY_AGAIN_LATER`).
    ///
    /// - Parameter onRunning: Called once the server listens, with the port
    ///   it is bound to (the chosen one when the configuration says `0`).
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let group = ServiceGroup(
            configuration: .init(services: makeServices(onRunning: onRunning), logger: configuration.logger))
        // The group runs in a task of its own so that cancelling the caller
        // becomes a graceful shutdown instead of cutting requests off.
        let running = Task { try await group.run() }
        try await withTaskCancellationHandler {
            try await running.value
        } onCancel: {
            Task { await group.triggerGracefulShutdown() }
        }
    }

    /// Listens until SIGINT or SIGTERM, then stops accepting connections and
    /// returns once the requests in flight are answered.
    public func runUntilTerminated(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: makeServices(onRunning: onRunning), gracefulShutdownSignals: [.sigterm, .sigint],
                logger: configuration.logger))
        try await group.run()
    }

    /// The HTTP application, and the asset collector when the configuration asks for one.
    func makeServices(onRunning: @escaping @Sendable (Int) async -> Void) -> [any Service] {
        var services: [any Service] = [makeApplication(onRunning: onRunning)]
        if let interval = configuration.assetCollectionInterval {
            services.append(AssetCollector(service: service, interval: interval, logger: configuration.logger))
        }
        if let metricsListener = observability.listenerService(configuration: configuration) {
            services.append(metricsListener)
        }
        return services
    }

    func makeApplication(onRunning: @escaping @Sendable (Int) async -> Void) -> some ApplicationProtocol {
        let router = Router(context: CumulusRequestContext.self)
        observability.prepare(router)
        router.add(
            middleware: RequestLogMiddleware(
                logger: configuration.logger, failures: consoleSessions == nil ? nil : recentFailures))
        let routes = CloudRoutes(
            service: service, configuration: configuration, faults: faults, authenticationCache: authenticationCache,
            identityTokens: identityTokens)
        router.add(middleware: RequestLimitMiddleware(limits: routes.limits))
        routes.add(to: router)
        if let consoleSessions, let cloudService = service as? CloudService {
            ConsoleRoutes(
                service: cloudService, sessions: consoleSessions, failures: recentFailures,
                secureCookie: configuration.tls != nil, logger: configuration.logger, load: observability.metrics.load
            ).add(to: router)
        }
        let configuration = self.configuration
        let service = self.service
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                try Self.childChannel(responder: responder, configuration: configuration)
            },
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "Cumulus"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                service.useListeningAddress(Self.listeningURL(configuration, port: port))
                await onRunning(port)
            },
            logger: configuration.logger)
    }

    /// `scheme://host:port` of the listener: a wildcard host (every
    /// interface) reads as the loopback address of its family, the one
    /// address sure to reach it; serving others wants `--public-url`.
    static func listeningURL(_ configuration: ServerConfiguration, port: Int) -> String {
        var host = configuration.host
        switch host {
        case "", "0.0.0.0": host = "127.0.0.1"
        case "::", "[::]": host = "::1"
        default: break
        }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        return "\(configuration.scheme)://\(host):\(port)"
    }
}
