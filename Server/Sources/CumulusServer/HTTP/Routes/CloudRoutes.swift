import CloudCodable
import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The handlers of the protocol's paths: database operations (behind
/// ``AuthenticationMiddleware``), the notification long poll, the page at a
/// share's URL, and the asset URLs.
struct CloudRoutes: Sendable {
    let service: any CloudServing
    let configuration: ServerConfiguration
    let faults: ServerFaults?
    let authenticator: RequestAuthenticator
    let limits: RequestLimits

    init(
        service: any CloudServing, configuration: ServerConfiguration, faults: ServerFaults?,
        authenticationCache: AuthenticationCache, identityTokens: IdentityTokenVerifier
    ) {
        self.service = service
        self.configuration = configuration
        self.faults = faults
        self.authenticator = RequestAuthenticator(
            service: service, signatureDateTolerance: configuration.signatureDateTolerance, now: configuration.now,
            cache: authenticationCache, identityTokens: identityTokens,
            unauthenticatedBodies: UnauthenticatedBodyBudget(
                maximumBytes: configuration.maximumUnauthenticatedBodyBytes,
                maximumBodies: configuration.maximumUnauthenticatedBodies),
            maximumBodySize: configuration.maximumBodySize)
        self.limits = RequestLimits(configuration.rateLimits)
    }

    /// The route parameters that are capabilities (a notification channel's
    /// or an asset download's token, an asset upload's ticket, a share's
    /// shortGUID), which the request log leaves out.
    static let secretParameters: Set<String> = ["token", "ticket", "shortGUID"]

    func add<Context: AuthenticatedRequestContext>(to router: Router<Context>) {
        let databases = router.group()
            .add(middleware: AuthenticationMiddleware<Context>(authenticator: authenticator, limits: limits))
        for databasePath in DatabaseRoute.paths {
            databases.post(databasePath) { request, context in
                try await self.database(request, context.authentication)
            }
            databases.get(databasePath) { request, context in
                try await self.database(request, context.authentication)
            }
        }
        router.get("/notifications/1/:token") { request, context in
            try await self.poll(request, token: context.parameters.get("token") ?? "")
        }
        router.get("/share/:shortGUID") { _, context in
            try await self.sharePage(shortGUID: context.parameters.get("shortGUID") ?? "")
        }
        addAssetRoutes(to: router)
    }

    /// The page at a share's URL: anyone holding the URL may see the share's
    /// title and owner, so no token is asked for.
    /// The segment is percent-decoded; one that does not decode finds nothing.
    func sharePage(shortGUID segment: String) async throws -> Response {
        guard let shortGUID = segment.removingPercentEncoding,
            let preview = try await service.sharePreview(shortGUID: shortGUID)
        else {
            return SharePage.response(status: .notFound, html: SharePage.notFound)
        }
        return SharePage.response(status: .ok, html: SharePage.html(preview))
    }

    /// One database request, authenticated: injected faults, body, then the
    /// service, which answers every operation (`tokens/create` included).
    func database(_ request: Request, _ authentication: Authentication?) async throws -> Response {
        guard let authentication else {
            // Every database route sits behind the authentication middleware.
            throw HTTPFailure(CloudError(.internalError, reason: "The request was not authenticated."))
        }
        let route = authentication.route
        // Opening a notification channel is not one of the requests a fault
        // stands in for: the in-memory server's notifications() makes none.
        if route.operation != .createToken, let fault = faults?.next() {
            throw HTTPFailure(fault)
        }
        let bytes: [UInt8]
        if let body = authentication.signedBody {
            bytes = body
        } else {
            bytes = try await request.collectBody(upTo: configuration.maximumBodySize)
        }
        let fieldTypes = try await service.fieldTypes(container: route.container, environment: route.environment)
        let cloudRequest = try CloudRequest.decode(route.operation, body: bytes, fieldTypes: fieldTypes)
        let answer = try await service.answer(
            cloudRequest, as: authentication.caller, credential: authentication.credential,
            channel: request.headers[Self.writingChannelHeader])
        ServerMetrics.current?.recordsAnswered(answer.recordCount, operation: route.operation)
        return Self.json(try answer.identifyingErrors().encodedBody())
    }

    /// The notification long poll: `?cursor=` from the previous answer and
    /// `?timeout=` in seconds, at most the configured timeout.
    func poll(_ request: Request, token: String) async throws -> Response {
        let query = request.uri.queryParameters
        let timeout = try pollTimeout(asked: query["timeout"].map(String.init))
        let cursor = query["cursor"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let service = self.service
        do {
            // A poll waits up to its timeout; a shutdown should not wait for it.
            let batch = try await cancelWhenGracefulShutdown {
                try await service.pollNotifications(token: token, cursor: cursor, timeout: timeout)
            }
            return Self.json(batch.encodedBody())
        } catch  where Task.isShuttingDownGracefully && !(error is CloudError) {
            throw HTTPFailure(
                CloudError(.tryAgainLater, reason: "The server is shutting down.", retryAfter: .seconds(1)))
        }
    }

    /// The poll's timeout: the configured one, or less when the client asks.
    func pollTimeout(asked text: String?) throws -> Duration {
        guard let text else { return configuration.notificationPollTimeout }
        guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
            throw HTTPFailure(.badRequest, "The timeout must be a number of seconds.")
        }
        return min(configuration.notificationPollTimeout, ServerTime.duration(seconds: min(seconds, 1e9)))
    }

    static let writingChannelHeader = HTTPField.Name(CloudRequest.writingChannelHeader)!

    static func json(_ bytes: [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
