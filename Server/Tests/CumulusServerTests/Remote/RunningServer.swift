import Cumulus
import CumulusServer
import Foundation
import Synchronization

/// A record server on SQLite in this process, listening on an ephemeral
/// loopback port, with one container; users are made on first use.
final class RunningServer: Sendable {
    let service: CloudService
    let baseURL: URL
    let container: String
    let apiToken: String
    let faults: ServerFaults
    let directory: URL
    private let task: Task<Void, any Error>
    private let users = Mutex<[String: (recordName: String, token: String)]>([:])

    private init(
        service: CloudService, baseURL: URL, container: String, apiToken: String, faults: ServerFaults,
        directory: URL, task: Task<Void, any Error>
    ) {
        self.faults = faults
        self.service = service
        self.baseURL = baseURL
        self.container = container
        self.apiToken = apiToken
        self.directory = directory
        self.task = task
    }

    /// Starts a server over a new SQLite file in a temporary directory.
    static func start(configuration: ServerConfiguration = ServerConfiguration(port: 0)) async throws
        -> RunningServer
    {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-server-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let service = try await CloudService.open(path: directory.appendingPathComponent("cumulus.sqlite").path)
        let container = "iCloud.com.example.conformance"
        let apiToken = try await service.addContainer(named: container)
        var configuration = configuration
        configuration.port = 0
        configuration.logger.logLevel = .warning
        let faults = ServerFaults()
        let server = CumulusHTTPServer(service: service, configuration: configuration, faults: faults)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            task.cancel()
            throw CloudError(.internalError, reason: "the test server did not start")
        }
        let running = RunningServer(
            service: service, baseURL: URL(string: "http://127.0.0.1:\(port)")!, container: container,
            apiToken: apiToken, faults: faults, directory: directory, task: task)
        return running
    }

    /// The record name and web auth token of the container's user `name`,
    /// made on first use.
    func user(_ name: String) async throws -> (recordName: String, token: String) {
        if let known = users.withLock({ $0[name] }) { return known }
        let made = try await service.addUser(named: name, container: container)
        let user = (recordName: made.userRecordName, token: made.webAuthToken)
        users.withLock { $0[name] = user }
        return user
    }

    /// The name of the user whose record name is `recordName`.
    func userName(recordName: String) -> String? {
        users.withLock { users in users.first { $0.value.recordName == recordName }?.key }
    }

    /// A device of `user` over HTTP.
    func database(
        signedInAs user: String, scope: DatabaseScope = .private,
        transport: any CloudTransport = URLSessionTransport()
    ) async throws -> RemoteCloudDatabase {
        let token = try await self.user(user).token
        return RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: baseURL, container: container, scope: scope,
                notificationBackoff: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(1))),
            credentials: .user(apiToken: apiToken, webAuthToken: token), transport: transport)
    }

    /// Stops listening and closes the store.
    func stop() async {
        task.cancel()
        _ = try? await task.value
        try? await service.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
