import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Logging
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server on an ephemeral loopback port over a fresh store, with one
/// container and one user provisioned.
struct HTTPTestServer: Sendable {
    let baseURL: URL
    let service: any CloudServing
    let container: String
    let apiToken: String
    let webAuthToken: String
    let userRecordName: String
    /// The server, for what a test asks of it directly (its authentication cache).
    var httpServer: CumulusHTTPServer? = nil

    /// The port the server listens on.
    var port: Int { baseURL.port ?? 0 }

    /// Runs `body` against a server that stops when it returns.
    static func with<T: Sendable>(
        store: TestStore = .sqlite,
        configuration: ServerConfiguration = ServerConfiguration(port: 0, logger: quietLogger),
        faults: ServerFaults? = nil, wrap: @Sendable (CloudService) -> any CloudServing = { $0 },
        _ body: @Sendable (HTTPTestServer) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-http-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try await store.makeServices(directory: directory)
        let service = stores.services[0]
        let container = "iCloud.com.example.notes"
        let apiToken: String
        let user: (userRecordName: String, webAuthToken: String)
        do {
            apiToken = try await service.addContainer(named: container)
            let made = try await service.addUser(named: "alice", container: container)
            user = (made.userRecordName, made.webAuthToken)
        } catch {
            await stores.close()
            throw error
        }
        var configuration = configuration
        configuration.port = 0
        let server = CumulusHTTPServer(service: wrap(service), configuration: configuration, faults: faults)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await server.run { port in continuation.yield(port) }
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CloudError(.internalError, reason: "no port") }
            let running = HTTPTestServer(
                baseURL: URL(string: "http://127.0.0.1:\(port)")!, service: service, container: container,
                apiToken: apiToken, webAuthToken: user.webAuthToken, userRecordName: user.userRecordName,
                httpServer: server)
            do {
                let result = try await body(running)
                group.cancelAll()
                try await group.waitForAll()
                try await service.close()
                await stores.close()
                return result
            } catch {
                group.cancelAll()
                await stores.close()
                throw error
            }
        }
    }

    /// The path of an operation in this server's container.
    func path(
        _ operation: String, scope: String = "private", environment: String = "development", container: String? = nil
    ) -> String {
        "/database/1/\(container ?? self.container)/\(environment)/\(scope)/\(operation)"
    }

    /// The query that authenticates the provisioned user.
    var userQuery: [String: String] {
        ["ckAPIToken": apiToken, "ckWebAuthToken": webAuthToken]
    }

    /// Sends one request and returns the answer, whatever its status.
    func send(
        _ method: String, _ path: String, query: [String: String] = [:], body: [UInt8] = [],
        headers: [String: String] = [:]
    ) async throws -> HTTPAnswer {
        var components = URLComponents(url: baseURL.appendingPathComponent(""), resolvingAgainstBaseURL: false)!
        components.path = path
        if !query.isEmpty {
            components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        if method != "GET" { request.httpBody = Data(body) }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return HTTPAnswer(
            status: http.statusCode, body: data,
            contentType: http.value(forHTTPHeaderField: "Content-Type"),
            retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
    }

    /// Sends a request as the provisioned user.
    func sendAsUser(_ operation: String, method: String = "POST", body: String = "", scope: String = "private")
        async throws -> HTTPAnswer
    {
        try await send(method, path(operation, scope: scope), query: userQuery, body: Array(body.utf8))
    }
}

/// A logger that drops everything, so that test output stays readable.
let quietLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

/// A service that passes everything to another, except what a test changes:
/// a `perform` that fails with an error that is no ``CloudError``, a look
/// at each request that reaches it, and a signal when a notification poll
/// starts waiting.
struct WrappedService: CloudServing {
    struct Unexpected: Error {}

    let base: any CloudServing
    /// Whether `perform` fails a request with an error that is no ``CloudError``.
    var failsPerform: @Sendable (CloudRequest) -> Bool = { _ in false }
    var performed: @Sendable (CloudRequest, Caller) -> Void = { _, _ in }
    var pollStarted: @Sendable () -> Void = {}
    /// Called for each API or web auth token the store is asked about.
    var credentialLookedUp: @Sendable () -> Void = {}
    /// Called each time a download URL's bytes are opened.
    var downloadOpened: @Sendable () -> Void = {}

    func perform(_ request: CloudRequest, as caller: Caller) async throws -> CloudResponse {
        performed(request, caller)
        if failsPerform(request) { throw Unexpected() }
        return try await base.perform(request, as: caller)
    }

    func fieldTypes(container: String, environment: CloudEnvironment) async throws -> FieldTypeLookup {
        try await base.fieldTypes(container: container, environment: environment)
    }

    func addContainer(named name: String) async throws -> String {
        try await base.addContainer(named: name)
    }

    func addUser(named name: String, container: String) async throws -> (userRecordName: String, webAuthToken: String) {
        try await base.addUser(named: name, container: container)
    }

    func addServerKey(container: String, publicKeyPEM: String) async throws -> String {
        try await base.addServerKey(container: container, publicKeyPEM: publicKeyPEM)
    }

    func authenticateContainer(named name: String, apiToken: String) async throws -> Bool {
        try await base.authenticateContainer(named: name, apiToken: apiToken)
    }

    func user(container: String, webAuthToken: String) async throws -> String? {
        try await base.user(container: container, webAuthToken: webAuthToken)
    }

    func serverKey(container: String, keyID: String) async throws -> String? {
        try await base.serverKey(container: container, keyID: keyID)
    }

    func authenticateAPIToken(_ apiToken: String, container: String) async throws -> CredentialFinding<Void> {
        credentialLookedUp()
        return try await base.authenticateAPIToken(apiToken, container: container)
    }

    func authenticateWebAuthToken(_ webAuthToken: String, container: String) async throws
        -> CredentialFinding<String>
    {
        credentialLookedUp()
        return try await base.authenticateWebAuthToken(webAuthToken, container: container)
    }

    func credentialsVersion() async throws -> CredentialsVersion {
        try await base.credentialsVersion()
    }

    func createNotificationToken(for caller: Caller) async throws -> String {
        try await base.createNotificationToken(for: caller)
    }

    func pollNotifications(token: String, cursor: String?, timeout: Duration) async throws -> NotificationBatch {
        pollStarted()
        return try await base.pollNotifications(token: token, cursor: cursor, timeout: timeout)
    }

    func sharePreview(shortGUID: String) async throws -> SharePreview? {
        try await base.sharePreview(shortGUID: shortGUID)
    }

    func receiveAsset<Chunks: AsyncSequence>(ticket: String, contentLength: Int64?, chunks: Chunks)
        async throws -> Asset where Chunks.Element == [UInt8]
    {
        try await base.receiveAsset(ticket: ticket, contentLength: contentLength, chunks: chunks)
    }

    func openAssetDownload(token: String, choosingRange: (_ assetSize: Int64) throws -> Range<Int64>?)
        async throws -> AssetDownload
    {
        downloadOpened()
        return try await base.openAssetDownload(token: token, choosingRange: choosingRange)
    }

    func useListeningAddress(_ url: String) { base.useListeningAddress(url) }

    func absoluteURL(_ path: String) -> String { base.absoluteURL(path) }
}

/// An HTTP answer and its JSON.
struct HTTPAnswer: Sendable {
    let status: Int
    let body: Data
    let contentType: String?
    let retryAfter: String?

    /// The body as a JSON object, or an empty one.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
    }

    /// The `serverErrorCode` of an error dictionary.
    var serverErrorCode: String? { json["serverErrorCode"] as? String }

    /// The `reason` of an error dictionary.
    var reason: String? { json["reason"] as? String }

    /// Whether this is the error dictionary of `code` with `status`, served as JSON.
    func isError(_ code: CloudError.Code, status: Int) -> Bool {
        self.status == status && serverErrorCode == code.rawValue && contentType == "application/json"
            && json["uuid"] is String && reason?.isEmpty == false
    }
}

/// Every line logged through a ``CapturingLogHandler``.
final class LogLines: Sendable {
    private let storage = Mutex<[String]>([])

    var all: [String] { storage.withLock { $0 } }

    func append(_ line: String) { storage.withLock { $0.append(line) } }

    /// A logger whose lines end up here.
    func logger() -> Logger {
        Logger(label: "test") { _ in CapturingLogHandler(lines: self) }
    }
}

/// A log handler that keeps every line with its metadata, for checking
/// what the server logs.
struct CapturingLogHandler: LogHandler {
    let lines: LogLines
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let text = all.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
        lines.append("\(event.level) \(event.message) \(text)")
    }
}
