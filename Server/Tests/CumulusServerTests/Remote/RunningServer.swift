import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Logging
import Synchronization

/// A record server (or two on one PostgreSQL database) in this process,
/// listening on ephemeral loopback ports, with one container; users are
/// made on first use.
final class RunningServer: Sendable {
    let stores: TestServices
    /// The first server's service, which the admin controls go through.
    var service: CloudService { stores.services[0] }
    let baseURLs: [URL]
    /// The first server's address.
    var baseURL: URL { baseURLs[0] }
    let container: String
    let apiToken: String
    let faults: ServerFaults
    /// The services' wall clock, which tests move.
    let clock: TestWallClock
    let directory: URL
    private let tasks: [Task<Void, any Error>]
    private let users = Mutex<[String: (recordName: String, token: String)]>([:])
    /// How many devices were made, so that they alternate between servers.
    private let devices = Mutex(0)

    private init(
        stores: TestServices, baseURLs: [URL], container: String, apiToken: String, faults: ServerFaults,
        clock: TestWallClock, directory: URL, tasks: [Task<Void, any Error>]
    ) {
        self.faults = faults
        self.clock = clock
        self.stores = stores
        self.baseURLs = baseURLs
        self.container = container
        self.apiToken = apiToken
        self.directory = directory
        self.tasks = tasks
    }

    /// Starts a server over a fresh store: a new SQLite file in a temporary
    /// directory, or a new PostgreSQL database with one server or two
    /// (devices then alternate between them, and faults hit both). Its
    /// services run on `clock`; its assets are at most 1 MiB by default,
    /// as the conformance checks want.
    static func start(
        store: TestStore = .sqlite,
        configuration: ServerConfiguration = ServerConfiguration(port: 0, logger: quietLogger),
        assetSettings: AssetSettings = AssetSettings(sizeLimit: 1 << 20), clock: TestWallClock = TestWallClock(),
        logLevel: Logger.Level = .warning
    ) async throws -> RunningServer {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-server-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let stores = try await store.makeServices(
            directory: directory, assetSettings: assetSettings, now: clock.now)
        let container = "iCloud.com.example.conformance"
        let apiToken: String
        do {
            apiToken = try await stores.services[0].addContainer(named: container)
        } catch {
            await stores.close()
            throw error
        }
        var configuration = configuration
        configuration.port = 0
        configuration.logger.logLevel = logLevel
        let faults = ServerFaults()
        var baseURLs: [URL] = []
        var tasks: [Task<Void, any Error>] = []
        for service in stores.services {
            let server = CumulusHTTPServer(service: service, configuration: configuration, faults: faults)
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let task = Task { try await server.run { port in continuation.yield(port) } }
            tasks.append(task)
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                for task in tasks { task.cancel() }
                await stores.close()
                throw CloudError(.internalError, reason: "the test server did not start")
            }
            baseURLs.append(URL(string: "http://127.0.0.1:\(port)")!)
        }
        return RunningServer(
            stores: stores, baseURLs: baseURLs, container: container, apiToken: apiToken, faults: faults,
            clock: clock, directory: directory, tasks: tasks)
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
        let index = devices.withLock { count in
            defer { count += 1 }
            return count % baseURLs.count
        }
        return RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: baseURLs[index], container: container, scope: scope,
                notificationBackoff: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(1))),
            credentials: .user(apiToken: apiToken, webAuthToken: token), transport: transport)
    }

    /// Stops listening and closes the store.
    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
        await stores.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
