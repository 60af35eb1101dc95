import Cumulus
import CumulusServer
import Foundation
import Testing

/// "A revoked token fails at once on every server": after the command (or
/// another storage handle) that takes a credential away returns, the
/// servers that trusted it stop trusting it, though their authentication
/// cache would keep it for much longer.
@Suite("Revocation reaches every server", .serialized)
struct RevocationTests {
    /// The status and reason of `zones/list` on `baseURL` with these tokens.
    static func listZones(
        on baseURL: URL, container: String, apiToken: String, webAuthToken: String, service: any CloudServing
    ) async throws -> HTTPAnswer {
        let client = HTTPTestServer(
            baseURL: baseURL, service: service, container: container, apiToken: apiToken, webAuthToken: webAuthToken,
            userRecordName: "")
        return try await client.send("GET", client.path("zones/list"), query: client.userQuery)
    }

    @Test("SQLite: the next request after `cumulus token revoke`, `user remove` or `rotate-token` fails")
    func sqliteServeProcess() async throws {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-revoke-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: data) }
        let store = ["--data", data.path]
        let run = { (arguments: [String]) in try await ServerCrashTests.lastLine(of: executable, arguments + store) }
        try await CumulusCommandTests.createDatabase(data.path)
        let apiToken = try await run(["container", "add", "revoke"])
        let alice = try await run(["user", "add", "alice", "--container", "revoke"])
        let alicePhone = try await run(["token", "add", "--user", "alice", "--container", "revoke"])
        let bob = try await run(["user", "add", "bob", "--container", "revoke"])
        let server = try await ServeProcess.start(executable: executable, store: store, container: "revoke")
        defer { server.kill() }
        let service = UnusedService()
        func status(_ api: String, _ user: String) async throws -> HTTPAnswer {
            try await Self.listZones(
                on: server.baseURL, container: "revoke", apiToken: api, webAuthToken: user, service: service)
        }
        for token in [alice, alicePhone, bob] {
            // Twice: the second is answered from the server's cache.
            #expect(try await status(apiToken, token).status == 200)
            #expect(try await status(apiToken, token).status == 200)
        }

        let listed = try await Self.lines(
            of: executable, ["token", "list", "--user", "alice", "--container", "revoke"] + store)
        #expect(listed.count == 3 && listed.first?.hasPrefix("ID") == true, "\(listed)")
        #expect(!listed.joined().contains(alice) && !listed.joined().contains(alicePhone))
        let printed = try await Self.lines(
            of: executable, ["token", "revoke", "--container", "revoke", "--token-stdin"] + store, input: alice + "\n")
        #expect(printed.last?.hasPrefix("Revoked token ") == true, "\(printed)")
        let revoked = try await status(apiToken, alice)
        #expect(revoked.isError(.authenticationFailed, status: 401), "\(revoked.status)")
        #expect(try await status(apiToken, alicePhone).status == 200)

        _ = try await run(["user", "remove", "alice", "--container", "revoke", "--keep-data"])
        #expect(try await status(apiToken, alicePhone).isError(.authenticationFailed, status: 401))
        #expect(try await status(apiToken, bob).status == 200)

        let newAPIToken = try await run(["container", "rotate-token", "revoke", "--overlap", "0"])
        #expect(try await status(apiToken, bob).isError(.authenticationFailed, status: 401))
        #expect(try await status(newAPIToken, bob).status == 200)
    }

    /// Runs the executable to completion with `input` on its standard input,
    /// and returns the lines it printed.
    static func lines(of executable: URL, _ arguments: [String], input: String = "") async throws -> [String] {
        let (status, data) = try await offThePool {
            let process = try ChildProcess(executable, arguments, input: .pipe)
            process.input?.write(Data(input.utf8))
            try process.input?.close()
            let data = process.output?.readDataToEndOfFile() ?? Data()
            process.waitUntilExit()
            return (process.exitCode, data)
        }
        try #require(status == 0, "cumulus \(arguments.joined(separator: " ")) failed")
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test(
        "PostgreSQL: a revoke through a third storage handle reaches both servers' caches",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func postgresTwoServers() async throws {
        let database = try await PostgresTestDatabase.create()
        defer { Task { try? await PostgresTestDatabase.drop(database) } }
        let admin = CloudService(storage: try await PostgresStorage(url: database, logger: quietLogger))
        let apiToken = try await admin.addContainer(named: "revoke")
        let alice = try await admin.addUser(named: "alice", container: "revoke").webAuthToken
        let bob = try await admin.addUser(named: "bob", container: "revoke").webAuthToken
        var services: [CloudService] = []
        for _ in 0..<2 {
            let storage = try await PostgresStorage(url: database, maximumConnections: 2, logger: quietLogger)
            let broadcaster = try await PostgresChangeBroadcaster(url: database, logger: quietLogger)
            services.append(CloudService(storage: storage, broadcaster: broadcaster))
        }
        // A cache that would trust a token for an hour: only the revocation can end it sooner.
        let configuration = ServerConfiguration(
            port: 0, authenticationCacheLifetime: .seconds(3600), logger: quietLogger)
        let servers = services.map { CumulusHTTPServer(service: $0, configuration: configuration) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            for server in servers {
                group.addTask { try await server.run { port in continuation.yield(port) } }
            }
            var urls: [URL] = []
            for await port in ports {
                urls.append(URL(string: "http://127.0.0.1:\(port)")!)
                if urls.count == 2 { break }
            }
            func answer(_ url: URL, _ token: String) async throws -> HTTPAnswer {
                try await Self.listZones(
                    on: url, container: "revoke", apiToken: apiToken, webAuthToken: token, service: admin)
            }
            for url in urls {
                #expect(try await answer(url, alice).status == 200)
                #expect(try await answer(url, alice).status == 200)
                #expect(try await answer(url, bob).status == 200)
            }
            try await admin.revokeWebAuthTokens(ofUser: "alice", container: "revoke")
            for url in urls {
                // The notification is on its way when the revoke returns; give it a moment, never an hour.
                let deadline = ContinuousClock.now + .seconds(20)
                var last = try await answer(url, alice)
                while last.status == 200, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                    last = try await answer(url, alice)
                }
                #expect(last.isError(.authenticationFailed, status: 401), "\(url): \(last.status)")
                #expect(try await answer(url, bob).status == 200)
            }
            group.cancelAll()
        }
        for service in services { try? await service.close() }
        try? await admin.close()
    }
}

/// A service the raw HTTP client needs the type of, and never calls.
struct UnusedService: CloudServing {
    func perform(_ request: CloudRequest, as caller: Caller) async throws -> CloudResponse { throw unused }
    func fieldTypes(container: String, environment: CloudEnvironment) async throws -> FieldTypeLookup {
        throw unused
    }
    func addContainer(named name: String) async throws -> String { throw unused }
    func addUser(named name: String, container: String) async throws -> (userRecordName: String, webAuthToken: String) {
        throw unused
    }
    func addServerKey(container: String, publicKeyPEM: String) async throws -> String { throw unused }
    func authenticateContainer(named name: String, apiToken: String) async throws -> Bool { throw unused }
    func user(container: String, webAuthToken: String) async throws -> String? { throw unused }
    func serverKey(container: String, keyID: String) async throws -> String? { throw unused }
    func createNotificationToken(for caller: Caller) async throws -> String { throw unused }
    func pollNotifications(token: String, cursor: String?, timeout: Duration) async throws -> NotificationBatch {
        throw unused
    }
    func sharePreview(shortGUID: String) async throws -> SharePreview? { throw unused }

    private var unused: CloudError { CloudError(.internalError, reason: "not used") }
}
