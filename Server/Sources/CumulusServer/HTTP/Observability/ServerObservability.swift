import CloudCodable
import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle

/// What lets operators see a server: `/healthz`, `/readyz`, `/metrics`,
/// the metrics themselves, and the listener `/metrics` may have of its own.
///
/// `/healthz` answers 200 whenever the process answers, without touching
/// storage. `/readyz` answers 200 when a read of storage succeeds and its
/// schema is the version this server writes, and 503 with the reason
/// otherwise. Neither asks for a token, nor is logged by the request log:
/// probes ask every few seconds. `/metrics` answers only as its
/// ``MetricsEndpoint`` says.
final class ServerObservability: Sendable {
    /// The longest `/readyz` waits for storage before answering 503.
    static let readinessLimit = Duration.seconds(5)
    /// The longest a scrape waits for the count of open channels; past it
    /// the gauge keeps its last value.
    static let censusLimit = Duration.seconds(1)
    /// How long one check of storage answers `/readyz` and scrapes.
    static let freshness = Duration.seconds(1)

    let metrics: ServerMetrics
    let endpoint: MetricsEndpoint?
    private let readiness: SharedCheck<Readiness>
    private let census: SharedCheck<Int?>

    /// Whether storage is ready, and if not, why.
    enum Readiness: Sendable, Equatable {
        case ready
        case notReady(String)
    }

    init(service: any CloudServing, configuration: ServerConfiguration) {
        metrics = ServerMetrics(factory: configuration.metrics.factory)
        endpoint = configuration.metrics.endpoint
        let logger = configuration.logger
        let last = LockedState<Readiness?>(nil)
        readiness = SharedCheck(freshness: Self.freshness) {
            let readiness = await Self.readiness(of: service)
            let previous = last.withLock { last in
                defer { last = readiness }
                return last
            }
            switch (previous, readiness) {
            case (.some(.notReady), .ready):
                logger.info("ready again: the storage answers")
            case (_, .notReady(let reason)) where previous != readiness:
                logger.warning("not ready: \(reason)")
            default:
                break
            }
            return readiness
        }
        census = SharedCheck(freshness: Self.freshness) { await Self.openChannels(of: service) }
        if let service = service as? CloudService { service.attachMetrics(metrics) }
    }

    // MARK: Routes

    /// Adds the metrics middleware and the probes to the server's router,
    /// before the request log so that the probes stay out of it.
    func prepare<Context: Hummingbird.RequestContext>(_ router: Router<Context>) {
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        addRoutes(to: router, metrics: endpoint?.listener == nil)
    }

    private func addRoutes<Context: Hummingbird.RequestContext>(to router: Router<Context>, metrics: Bool) {
        router.get("/healthz") { request, _ in
            guard request.uri.path == "/healthz" else { return Self.noSuchPath() }
            return Self.json(.ok, ["status": "ok"])
        }
        router.get("/readyz") { request, _ in
            guard request.uri.path == "/readyz" else { return Self.noSuchPath() }
            return await self.readyz()
        }
        guard metrics, let endpoint else { return }
        router.get("/metrics") { request, _ in
            guard request.uri.path == "/metrics" else { return Self.noSuchPath() }
            return await self.scrape(request, endpoint: endpoint)
        }
    }

    func readyz() async -> Response {
        switch await readiness.value(within: Self.readinessLimit) {
        case .ready:
            return Self.json(.ok, ["status": "ready"])
        case .notReady(let reason):
            return Self.json(.serviceUnavailable, ["status": "not ready", "reason": reason])
        case nil:
            let seconds = Self.readinessLimit.components.seconds
            return Self.json(
                .serviceUnavailable,
                ["status": "not ready", "reason": "the storage did not answer within \(seconds) seconds"])
        }
    }

    /// The registry's text, to a request that carries the token (if one is
    /// asked for); anything else gets a bare 401 that tells nothing of the metrics.
    func scrape(_ request: Request, endpoint: MetricsEndpoint) async -> Response {
        guard endpoint.admits(authorization: request.headers[.authorization]) else {
            return Response(
                status: .unauthorized, headers: [.wwwAuthenticate: "Bearer", .contentType: "text/plain"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "authentication required\n")))
        }
        if case .some(.some(let count)) = await census.value(within: Self.censusLimit) {
            metrics.channelsOpen.record(count)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: endpoint.registry.emitToBuffer())))
    }

    // MARK: Checks

    /// Reads the service's storage: its schema version when the store
    /// tells it, or any read. A service that is not a ``CloudService``
    /// has no storage to check.
    static func readiness(of service: any CloudServing) async -> Readiness {
        guard let service = service as? CloudService else { return .ready }
        let versions: SchemaVersions
        do {
            guard let store = service.storage as? any ServerReadiness else {
                try await service.storage.read { _ in }
                return .ready
            }
            versions = try await store.schemaVersions()
        } catch {
            return .notReady("the storage cannot be read")
        }
        if versions.stored < versions.written {
            return .notReady(
                "the storage's schema is version \(versions.stored), older than version \(versions.written) of this server"
            )
        }
        if versions.stored > versions.written {
            return .notReady(
                "the storage's schema is version \(versions.stored), newer than version \(versions.written) of this server"
            )
        }
        return .ready
    }

    /// The channels a poll used within the idle limit, on every server of
    /// the storage; `nil` when the store cannot count them now.
    static func openChannels(of service: any CloudServing) async -> Int? {
        guard let service = service as? CloudService, let store = service.storage as? any ChannelCensus else {
            return nil
        }
        let now = ServerTime.milliseconds(Date())
        let (seconds, attoseconds) = service.rules.channelIdleLimit.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let idle = overflow ? Int64.max : whole &+ attoseconds / 1_000_000_000_000_000
        let (cutoff, below) = now.subtractingReportingOverflow(idle)
        return try? await store.openChannelCount(usedSince: below ? .min : cutoff)
    }

    // MARK: Answers

    private static func json(_ status: HTTPResponse.Status, _ fields: [String: String]) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = (try? encoder.encode(fields)) ?? Data()
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The probes' paths are one spelling each, as the protocol's are.
    private static func noSuchPath() -> Response {
        HTTPFailure(.notFound, "No such path.").response()
    }

    // MARK: The metrics listener

    /// The listener of `/metrics` when it has its own, with the probes.
    func listenerService(configuration: ServerConfiguration) -> (any Service)? {
        guard let endpoint, let listener = endpoint.listener else { return nil }
        let router = Router()
        addRoutes(to: router, metrics: true)
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                GuardedHTTP1Channel(responder: responder, configuration: configuration)
            },
            configuration: ApplicationConfiguration(
                address: .hostname(listener.host, port: listener.port), serverName: "Cumulus"),
            onServerRunning: { channel in
                await listener.onRunning(channel.localAddress?.port ?? 0)
            },
            logger: configuration.logger)
    }
}

extension CloudService {
    /// Reports the storage's failures and pool, and the broadcaster's
    /// announcements, to `metrics`: those of the last server made over
    /// this service.
    func attachMetrics(_ metrics: ServerMetrics) {
        (storage as? any StorageObserving)?.observer.attach(metrics)
        (broadcaster as? PostgresChangeBroadcaster)?.observer.attach(metrics)
    }
}
