import CloudCodable
import CloudProtocol
import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The handlers of the protocol's paths: database operations, the
/// notification long poll, the page at a share's URL, and the asset URLs.
struct CloudRoutes: Sendable {
    let service: any CloudServing
    let configuration: ServerConfiguration
    let faults: ServerFaults?
    let authenticator: RequestAuthenticator
    let unauthenticatedBodies: UnauthenticatedBodyBudget
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
            cache: authenticationCache, identityTokens: identityTokens)
        self.unauthenticatedBodies = UnauthenticatedBodyBudget(
            maximumBytes: configuration.maximumUnauthenticatedBodyBytes,
            maximumBodies: configuration.maximumUnauthenticatedBodies)
        self.limits = RequestLimits(configuration.rateLimits)
    }

    /// The route parameters that are capabilities (a notification channel's
    /// or an asset download's token, an asset upload's ticket, a share's
    /// shortGUID), which the request log leaves out.
    static let secretParameters: Set<String> = ["token", "ticket", "shortGUID"]

    /// `users/caller` is the newer name of `users/current`.
    static func operation(named name: String) -> CloudOperation? {
        name == "users/caller" ? .currentUser : CloudOperation(rawValue: name)
    }

    func add<Context: RemoteAddressRequestContext>(to router: Router<Context>) {
        // Most operations are two path components; `users/lookup/email` and
        // `users/lookup/id` are three.
        let databasePaths: [RouterPath] = [
            "/database/1/:container/:environment/:scope/:group/:action",
            "/database/1/:container/:environment/:scope/:group/:action/:detail",
        ]
        for databasePath in databasePaths {
            router.post(databasePath) { request, context in
                try await self.database(request, parameters: context.parameters, peer: context.remoteAddress)
            }
            router.get(databasePath) { request, context in
                try await self.database(request, parameters: context.parameters, peer: context.remoteAddress)
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

    /// One database request: path, authentication, injected faults, body,
    /// then the service. `peer` is the connection's, for the failed
    /// authentications of the address.
    func database(_ request: Request, parameters: Parameters, peer: SocketAddress?) async throws -> Response {
        let container = parameters.get("container") ?? ""
        var name = "\(parameters.get("group") ?? "")/\(parameters.get("action") ?? "")"
        if let detail = parameters.get("detail") { name += "/\(detail)" }
        guard let operation = Self.operation(named: name) else {
            throw HTTPFailure(.notFound, "No such operation: \(name).")
        }
        if request.method == .get && operation.httpMethod != "GET" {
            throw HTTPFailure(.notFound, "\(name) takes POST.")
        }
        guard let environment = parameters.get("environment").flatMap(CloudEnvironment.init(rawValue:)) else {
            throw HTTPFailure(.badRequest, "The environment must be development or production.")
        }
        guard let scope = parameters.get("scope").flatMap(DatabaseScope.init(rawValue:)) else {
            throw HTTPFailure(.badRequest, "The database must be public, private or shared.")
        }
        if let fixed = operation.fixedScope, fixed != scope {
            throw HTTPFailure(.notFound, "\(name) is served on the \(fixed.rawValue) database only.")
        }
        var body: [UInt8]? = nil
        let caller: Caller
        let gate = CredentialGate(limits: limits, address: limits.clientAddress(of: request, peer: peer))
        if RequestAuthenticator.isSigned(request) {
            (caller, body) = try await signedCaller(
                of: request, container: container, environment: environment, scope: scope, gate: gate)
        } else {
            caller = try await authenticator.caller(
                tokensOf: request, container: container, environment: environment, scope: scope, gate: gate)
        }
        try limits.admit(caller)
        // Opening a notification channel is not one of the requests a fault
        // stands in for: the in-memory server's notifications() makes none.
        if operation != .createToken, let fault = faults?.next() {
            throw HTTPFailure(fault)
        }
        let bytes: [UInt8]
        if let body {
            bytes = body
        } else {
            bytes = try await collectBody(of: request)
        }
        let fieldTypes = try await service.fieldTypes(container: container, environment: environment)
        let cloudRequest = try CloudRequest.decode(operation, body: bytes, fieldTypes: fieldTypes)
        let answer: ServiceAnswer
        if case .createToken = cloudRequest {
            guard !caller.isAnonymous else {
                throw HTTPFailure(.authenticationRequired, "A notification channel needs a signed-in user or a key.")
            }
            answer = ServiceAnswer(
                try await token(for: caller, credential: try RequestAuthenticator.channelCredential(of: request)))
        } else {
            answer = try await service.answer(cloudRequest, as: caller)
        }
        ServerMetrics.current?.recordsAnswered(answer.recordCount, operation: operation)
        return Self.json(try answer.identifyingErrors().encodedBody())
    }

    /// `tokens/create`: a notification channel and the address to poll it,
    /// on the public URL or the listening address (never the `Host` header).
    func token(for caller: Caller, credential: ChannelCredential?) async throws -> CloudResponse {
        let token = try await service.createNotificationToken(for: caller, credential: credential)
        return .token(
            NotificationToken(
                apnsEnvironment: caller.environment.rawValue, apnsToken: token,
                webcourierURL: service.absoluteURL("/notifications/1/\(token)")))
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
        return min(configuration.notificationPollTimeout, .milliseconds(Int64(min(seconds, 1e9) * 1000)))
    }

    /// The caller of a signed request and its body. The key is looked up
    /// before the body is read, and the body is read within the budget of
    /// bodies held before authentication.
    func signedCaller(
        of request: Request, container: String, environment: CloudEnvironment, scope: DatabaseScope,
        gate: CredentialGate
    ) async throws -> (Caller, [UInt8]) {
        let pending = try await authenticator.signature(
            of: request, container: container, environment: environment, scope: scope, gate: gate)
        let limit = configuration.maximumBodySize
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > limit { throw Self.tooLarge(limit: limit) }
        // Without a length or a chunked encoding, an HTTP/1.1 request has no body.
        let reserved = declared ?? (request.headers[.transferEncoding] == nil ? 0 : limit)
        let body = try await unauthenticatedBodies.withReservation(of: reserved) {
            try await collectBody(of: request, upTo: reserved)
        }
        return (try pending.verify(body: body, path: request.uri.path), body)
    }

    /// The body, at most `limit` bytes (the configured size by default).
    func collectBody(of request: Request, upTo limit: Int? = nil) async throws -> [UInt8] {
        let limit = limit ?? configuration.maximumBodySize
        // Straight into the array the decoder takes: collecting a ByteBuffer
        // and copying it out held each body twice at its peak.
        var bytes: [UInt8] = []
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared <= limit {
            bytes.reserveCapacity(declared)
        }
        for try await buffer in request.body {
            guard bytes.count + buffer.readableBytes <= limit else { throw Self.tooLarge(limit: limit) }
            bytes.append(contentsOf: buffer.readableBytesView)
        }
        return bytes
    }

    static func tooLarge(limit: Int) -> HTTPFailure {
        HTTPFailure(
            CloudError(.badRequest, reason: "The request body is larger than the limit of \(limit) bytes."),
            status: 413)
    }

    static func json(_ bytes: [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
