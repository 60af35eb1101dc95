import Cumulus
import CumulusServer
import Foundation
import Logging
import PostgresNIO

/// The stores a figure can run through. Each yields one or more running
/// servers on one storage; adding a store is adding a case here.
enum StoreSetup: String, CaseIterable, Sendable {
    /// One server on SQLite in a temporary directory.
    case sqlite
    /// One server on a fresh PostgreSQL database.
    case postgres
    /// Two servers on one fresh PostgreSQL database, as two processes
    /// behind a load balancer would be.
    case postgresTwoServers = "postgres-2"

    /// How the tables name the store.
    var title: String {
        switch self {
        case .sqlite: "1 server on SQLite"
        case .postgres: "1 server on PostgreSQL"
        case .postgresTwoServers: "2 servers on 1 PostgreSQL"
        }
    }

    /// Why this store cannot run in this build or environment, or nil.
    func unavailability(postgres: PostgresAdmin?) -> String? {
        switch self {
        case .sqlite: nil
        case .postgres, .postgresTwoServers:
            postgres == nil ? "CUMULUS_TEST_POSTGRES_URL is not set" : nil
        }
    }

    /// Starts the store's servers, with a container made on them; with
    /// `console`, each serves the operator's console too.
    func start(postgres: PostgresAdmin?, console: Bool = false) async throws -> Deployment {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("cumulus-bench-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let service = try await CloudService.open(
                path: directory.appendingPathComponent("cumulus.sqlite").path, logger: quietLogger)
            return try await Deployment.start(services: [service], console: console) {
                try? FileManager.default.removeItem(at: directory)
            }
        case .postgres, .postgresTwoServers:
            guard let postgres else {
                throw CloudError(.badRequest, reason: "CUMULUS_TEST_POSTGRES_URL is not set")
            }
            let url = try await postgres.createDatabase()
            var services: [CloudService] = []
            do {
                // One after the other: the first creates the schema.
                for _ in 0..<(self == .postgres ? 1 : 2) {
                    services.append(try await CloudService.open(postgres: url, logger: quietLogger))
                }
            } catch {
                for service in services { try? await service.close() }
                await postgres.dropDatabase(url)
                throw error
            }
            return try await Deployment.start(services: services, console: console) {
                await postgres.dropDatabase(url)
            }
        }
    }
}

/// A user of a deployment: its record name and web auth token.
struct BenchUser: Sendable {
    var name: String
    var recordName: String
    var webAuthToken: String
}

/// One or more HTTP servers, each on its own `CloudService`, all on one
/// storage, with one container.
final class Deployment: Sendable {
    let services: [CloudService]
    let servers: [BenchServer]
    let container = "iCloud.com.example.bench"
    let apiToken: String
    private let cleanup: @Sendable () async -> Void

    private init(
        services: [CloudService], servers: [BenchServer], apiToken: String,
        cleanup: @escaping @Sendable () async -> Void
    ) {
        self.services = services
        self.servers = servers
        self.apiToken = apiToken
        self.cleanup = cleanup
    }

    /// Serves each of `services` on a loopback port of its own and makes the
    /// container through the first (they share one storage).
    static func start(
        services: [CloudService], console: Bool = false, cleanup: @escaping @Sendable () async -> Void
    ) async throws -> Deployment {
        let apiToken = try await services[0].addContainer(named: "iCloud.com.example.bench")
        var servers: [BenchServer] = []
        for service in services { servers.append(try await BenchServer.start(service: service, console: console)) }
        return Deployment(services: services, servers: servers, apiToken: apiToken, cleanup: cleanup)
    }

    /// Makes a user in the container.
    func addUser(_ name: String) async throws -> BenchUser {
        let made = try await services[0].addUser(named: name, container: container)
        return BenchUser(name: name, recordName: made.userRecordName, webAuthToken: made.webAuthToken)
    }

    /// `user`'s private database over HTTP through server number `server`
    /// (modulo the number of servers), with a URL session of its own.
    func database(_ user: BenchUser, server: Int = 0) -> RemoteCloudDatabase {
        RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: servers[server % servers.count].baseURL, container: container),
            credentials: .user(apiToken: apiToken, webAuthToken: user.webAuthToken))
    }

    /// `user`'s private database straight into the first service, without HTTP.
    func serviceDatabase(_ user: BenchUser) -> ServiceDatabase {
        ServiceDatabase(
            service: services[0],
            caller: Caller(container: container, environment: .development, scope: .private, user: user.recordName))
    }

    /// Stops the servers, closes the services and removes the store.
    func stop() async {
        for server in servers { await server.stop() }
        for service in services { try? await service.close() }
        await cleanup()
    }
}

/// One HTTP server on a free loopback port.
struct BenchServer: Sendable {
    let baseURL: URL
    let task: Task<Void, any Error>
    /// The console's sessions, when the server serves the console.
    let consoleSessions: ConsoleSessions?

    static func start(service: CloudService, console: Bool = false) async throws -> BenchServer {
        var logger = Logger(label: "cumulus.bench")
        logger.logLevel = .warning
        var configuration = ServerConfiguration(port: 0, logger: logger)
        // The figures measure the server, not its request limits.
        configuration.rateLimits = .unlimited
        if console { configuration.console = ConsoleConfiguration() }
        let server = CumulusHTTPServer(service: service, configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CloudError(.internalError, reason: "no port") }
        return BenchServer(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, task: task, consoleSessions: server.consoleSessions)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}

/// The PostgreSQL cluster the figures may use: makes and drops databases
/// of their own on it.
struct PostgresAdmin: Sendable {
    /// The URL given (its database is used only to create and drop others).
    let url: PostgresURL

    /// The cluster named by `CUMULUS_TEST_POSTGRES_URL`, if set.
    static func fromEnvironment() throws -> PostgresAdmin? {
        guard let text = ProcessInfo.processInfo.environment["CUMULUS_TEST_POSTGRES_URL"], !text.isEmpty else {
            return nil
        }
        return PostgresAdmin(url: try PostgresURL(text))
    }

    /// Creates a fresh database and returns its URL.
    func createDatabase() async throws -> PostgresURL {
        var made = url
        made.database = "cumulus_b_\(UUID().uuidString.prefix(8).lowercased())"
        try await run("CREATE DATABASE \(made.database)")
        return made
    }

    /// Drops a database made by ``createDatabase()``, closing its sessions.
    func dropDatabase(_ database: PostgresURL) async {
        try? await run("DROP DATABASE IF EXISTS \(database.database) WITH (FORCE)")
    }

    private func run(_ sql: String) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: url.connectionConfiguration(), id: 1, logger: quietLogger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: quietLogger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }
}

/// A logger that drops everything below warnings.
let quietLogger: Logger = {
    var logger = Logger(label: "cumulus.bench.postgres")
    logger.logLevel = .warning
    return logger
}()

/// The `CloudDatabase` calls the workloads make, straight into a
/// ``CloudService``: the server's work without HTTP or the codec.
struct ServiceDatabase: CloudDatabase {
    let service: CloudService
    let caller: Caller
    var scope: DatabaseScope { caller.scope }

    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
        guard
            case .records(let results) = try await service.perform(
                .modifyRecords(operations: operations, zoneID: zoneID, atomic: atomic), as: caller)
        else { throw CloudError(.internalError, reason: "unexpected answer") }
        return results
    }

    func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        guard case .zoneResults(let results) = try await service.perform(.modifyZones(operations), as: caller)
        else { throw CloudError(.internalError, reason: "unexpected answer") }
        return results
    }

    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws -> [RecordResult] {
        throw unused
    }
    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
    ) async throws -> QueryResult { throw unused }
    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        guard case .zoneChanges(let results) = try await service.perform(.fetchZoneChanges(requests), as: caller)
        else { throw CloudError(.internalError, reason: "unexpected answer") }
        return results
    }
    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        throw unused
    }
    func listZones() async throws -> [RecordZone] { throw unused }
    func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] { throw unused }
    func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        throw unused
    }
    func listSubscriptions() async throws -> [Subscription] { throw unused }
    func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] { throw unused }
    func currentUser() async throws -> UserIdentity { throw unused }
    func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { throw unused }
    func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { throw unused }
    func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] { throw unused }
    func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] { throw unused }
    func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] { throw unused }
    func notifications() -> AsyncStream<CloudNotification> { AsyncStream { $0.finish() } }

    private var unused: CloudError { CloudError(.badRequest, reason: "not used by the benchmark") }
}
