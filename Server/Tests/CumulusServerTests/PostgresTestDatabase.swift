import Cumulus
import CumulusServer
import Foundation
import Logging
import PostgresNIO
import Testing

/// A fresh PostgreSQL database for one test: `cumulus_t_<random>` on the
/// server of `CUMULUS_TEST_POSTGRES_URL`, created through that URL's
/// database and dropped at the end, so tests can run in parallel.
///
/// ```swift
/// @Test(.enabled(if: PostgresTestDatabase.isEnabled))
/// func something() async throws {
///     let database = try await PostgresTestDatabase.create()
///     defer { Task { try? await PostgresTestDatabase.drop(database) } }
/// }
/// ```
enum PostgresTestDatabase {
    /// The variable naming the test server's admin database.
    static let variable = "CUMULUS_TEST_POSTGRES_URL"

    /// Whether PostgreSQL tests run: the URL is set, or CI requires them
    /// (`CUMULUS_REQUIRE_POSTGRES=1`), in which case a missing URL fails them.
    static var isEnabled: Bool {
        let environment = ProcessInfo.processInfo.environment
        return !(environment[variable] ?? "").isEmpty || environment["CUMULUS_REQUIRE_POSTGRES"] == "1"
    }

    /// The admin URL.
    static func adminURL() throws -> PostgresURL {
        guard let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty else {
            throw CloudError(.internalError, reason: "\(variable) is not set; PostgreSQL tests need a server")
        }
        return try PostgresURL(text)
    }

    /// How many test databases may exist at once: Swift Testing runs the
    /// parameterised checks side by side, and each database's servers hold
    /// connections, so unbounded they would exceed the cluster's limit.
    static let slots = TestSlots(count: 6)

    /// Creates an empty database and returns its URL, waiting for a slot.
    static func create() async throws -> PostgresURL {
        var url = try adminURL()
        await slots.acquire()
        let name = "cumulus_t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        var attempt = 0
        while true {
            do {
                // The name is ours (letters and digits): DDL takes no bound parameters.
                try await admin { connection, logger in
                    _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
                        .collect()
                }
                break
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55006" && attempt < 50 {
                // Another CREATE DATABASE is copying the template at this moment.
                attempt += 1
                try await Task.sleep(for: .milliseconds(20 * attempt))
            } catch {
                await slots.release()
                throw error
            }
        }
        url.database = name
        return url
    }

    /// Drops a database `create()` made, closing the connections left on it.
    static func drop(_ url: PostgresURL) async throws {
        guard url.database.hasPrefix("cumulus_t_"), url.database.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
        else { return }
        defer { Task { await slots.release() } }
        try await admin { connection, logger in
            _ = try await connection.query(
                PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(url.database) WITH (FORCE)"), logger: logger
            ).collect()
        }
    }

    /// A pool on the admin database for the whole test run: creating and
    /// dropping hundreds of databases through connections of their own
    /// left some of those connections hanging in `close()`.
    static let adminClient: PostgresClient? = {
        guard let url = try? adminURL() else { return nil }
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = 4
        let client = PostgresClient(configuration: configuration)
        Task.detached { await client.run() }
        return client
    }()

    /// Runs `body` on a connection to the admin database.
    static func admin(_ body: (PostgresConnection, Logger) async throws -> Void) async throws {
        guard let client = adminClient else {
            _ = try adminURL()
            return
        }
        let logger = Logger(label: "cumulus.tests.postgres")
        try await client.withConnection { connection in try await body(connection, logger) }
    }

    /// Runs `body` on one connection to the database at `url`.
    static func connect(to url: PostgresURL, _ body: (PostgresConnection, Logger) async throws -> Void)
        async throws
    {
        let logger = Logger(label: "cumulus.tests.postgres")
        let connection = try await PostgresConnection.connect(
            configuration: try url.connectionConfiguration(), id: 1, logger: logger)
        do {
            try await body(connection, logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    /// Runs `body` with a fresh database, dropped afterwards even when `body` throws.
    static func with<T>(_ body: (PostgresURL) async throws -> T) async throws -> T {
        let url = try await create()
        do {
            let result = try await body(url)
            try await drop(url)
            return result
        } catch {
            try? await drop(url)
            throw error
        }
    }
}

/// A counting semaphore for tests.
actor TestSlots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) {
        free = count
    }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
