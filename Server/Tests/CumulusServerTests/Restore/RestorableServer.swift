import Cumulus
import CumulusServer
import Foundation
import Synchronization
import Testing

/// A record server in this process that can be stopped, restored from a
/// backup as an operator would, and started again: `cumulus backup` and
/// `cumulus restore`'s functions on SQLite, `pg_dump` and `pg_restore` into
/// a new database (the README's procedure) on PostgreSQL. Devices keep one
/// address: their transport sends every request to the port the server
/// listens on now (another test may take a port given up in between).
final class RestorableServer: @unchecked Sendable {
    // Safety: a test drives it from one task at a time.
    enum Kind: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case sqlite
        case postgres
        var testDescription: String { rawValue }

        static var available: [Kind] { PostgresTestDatabase.isEnabled ? allCases : [.sqlite] }
    }

    let kind: Kind
    let directory: URL
    let container = "iCloud.com.example.restore"
    private(set) var apiToken = ""
    private(set) var service: CloudService?
    private var postgres: PostgresURL?
    private var databases: [PostgresURL] = []
    private var task: Task<Void, any Error>?
    private let listening = Mutex(0)
    var port: Int { listening.withLock { $0 } }
    private var users: [String: (recordName: String, token: String)] = [:]

    private init(kind: Kind, directory: URL) {
        self.kind = kind
        self.directory = directory
    }

    var dataDirectory: String { directory.appendingPathComponent("data").path }
    var backupPath: String { directory.appendingPathComponent("backup").path }
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    static func start(_ kind: Kind) async throws -> RestorableServer {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-restore-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let server = RestorableServer(kind: kind, directory: directory)
        if kind == .postgres {
            let database = try await PostgresTestDatabase.create()
            server.postgres = database
            server.databases.append(database)
        }
        try await server.open()
        server.apiToken = try await server.service!.addContainer(named: server.container)
        return server
    }

    private func open() async throws {
        let storage: any ServerStorage
        if let postgres {
            storage = try await PostgresStorage(url: postgres, maximumConnections: 4, logger: quietLogger)
        } else {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            storage = try await SQLiteStorage(
                path: dataDirectory + "/" + SQLiteBackup.databaseFileName,
                assetDirectory: dataDirectory + "/" + SQLiteBackup.assetDirectoryName, logger: quietLogger)
        }
        let service = CloudService(storage: storage)
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.logger.logLevel = .warning
        let server = CumulusHTTPServer(service: service, configuration: configuration)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task {
            defer { continuation.finish() }
            try await server.run { port in continuation.yield(port) }
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            try? await service.close()
            throw CloudError(.internalError, reason: "the test server did not start")
        }
        listening.withLock { $0 = bound }
        self.service = service
        self.task = task
    }

    /// The record name and web auth token of user `name`, made on first use.
    func user(_ name: String) async throws -> (recordName: String, token: String) {
        if let known = users[name] { return known }
        let made = try await service!.addUser(named: name, container: container)
        users[name] = (made.userRecordName, made.webAuthToken)
        return users[name]!
    }

    /// A device of `name` talking to the server over HTTP.
    func database(
        _ name: String, scope: DatabaseScope = .private,
        notificationBackoff: RetryPolicy = RetryPolicy(initialDelay: .milliseconds(500), maximumDelay: .seconds(30))
    ) async throws -> RemoteCloudDatabase {
        let token = try await user(name).token
        return RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: baseURL, container: container, scope: scope, notificationBackoff: notificationBackoff),
            credentials: .user(apiToken: apiToken, webAuthToken: token),
            transport: FollowingTransport { [self] in port })
    }

    /// Backs the store up while it serves.
    func backUp() async throws {
        if let postgres {
            try await PostgresCluster.run([
                "\(PostgresCluster.binaries ?? "")/pg_dump", "--format=custom", "--file=\(backupPath)",
                "--dbname=\(Self.connectionString(postgres))",
            ])
        } else {
            _ = try await SQLiteBackup.backUp(dataDirectory: dataDirectory, into: backupPath)
        }
    }

    /// Stops serving and closes the store.
    func stop() async {
        task?.cancel()
        _ = try? await task?.value
        task = nil
        try? await service?.close()
        service = nil
    }

    /// Puts the backup back (the server stopped) and serves again on the
    /// same port: on PostgreSQL, in a new database the dump is restored into.
    func restoreAndStart() async throws {
        if postgres != nil {
            let restored = try await PostgresTestDatabase.create()
            databases.append(restored)
            try await PostgresCluster.run([
                "\(PostgresCluster.binaries ?? "")/pg_restore", "--no-owner",
                "--dbname=\(Self.connectionString(restored))", backupPath,
            ])
            postgres = restored
        } else {
            _ = try await SQLiteBackup.restore(backup: backupPath, into: dataDirectory)
        }
        try await open()
    }

    /// Starts serving again on the same store, as after a plain restart.
    func restart() async throws {
        await stop()
        try await open()
    }

    func remove() async {
        await stop()
        for database in databases { try? await PostgresTestDatabase.drop(database) }
        try? FileManager.default.removeItem(at: directory)
    }

    private static func connectionString(_ url: PostgresURL) -> String {
        var text = "postgresql://\(url.username)"
        if let password = url.password { text += ":\(password)" }
        return text + "@\(url.host):\(url.port)/\(url.database)"
    }
}

/// Sends each request to the loopback port a restarted server listens on
/// now, whatever port its URL names (an earlier listener's, in the URLs of
/// notification channels too).
struct FollowingTransport: CloudTransport {
    let port: @Sendable () -> Int
    private let base = URLSessionTransport()

    init(port: @escaping @Sendable () -> Int) {
        self.port = port
    }

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        var request = request
        if var parts = URLComponents(url: request.url, resolvingAgainstBaseURL: false), parts.host == "127.0.0.1" {
            parts.port = port()
            if let url = parts.url { request.url = url }
        }
        return try await base.send(request)
    }
}
