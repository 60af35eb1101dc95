import Cumulus
import CumulusConformance
import CumulusServer
import Foundation
import Testing

/// "A credential that is revoked closes the channels opened with it, at
/// once, on every server, and the device's status changes within a second."
/// The engines here poll once an hour: only the closed channel can tell them.
/// Timing-sensitive (a bound on seconds), so it runs in a `swift test` call
/// of its own.
@Suite("Revocation reaches devices", .serialized)
struct RevocationReachesDevicesTests {
    /// Well above the second the server and engine need, well below the
    /// engines' hour between polls.
    static let bound = Duration.seconds(5)

    static let watching = SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600))

    @Test(
        "revoking a user's tokens through one server turns the device on the other to credentialsRefused",
        arguments: TestStore.available.filter { $0 != .postgres })
    func revokedToken(store: TestStore) async throws {
        try await Self.watch(store, until: .credentialsRefused, what: "revocation") { server in
            try await server.database(signedInAs: "carol")
        } takeAway: { server in
            let revoked = try await server.stores.services.last!.revokeWebAuthTokens(
                ofUser: "carol", container: server.container)
            #expect(revoked.count == 1)
        }
    }

    @Test(
        "removing the identity issuer through one server turns the device on the other to credentialsRefused",
        arguments: TestStore.available.filter { $0 != .postgres })
    func removedIssuer(store: TestStore) async throws {
        try await Self.watch(store, until: .credentialsRefused, what: "the issuer's removal") { server in
            server.signedIn(subject: "dave", email: nil, key: try await server.addTestIssuer(), server: 0)
        } takeAway: { server in
            let removed = try await server.stores.services.last!.removeIdentityIssuer(
                TestIssuer.defaultIssuer, container: server.container)
            #expect(removed)
        }
    }

    @Test(
        "blocking an identity through one server turns its device on the other to restricted",
        arguments: TestStore.available.filter { $0 != .postgres })
    func blockedIdentity(store: TestStore) async throws {
        try await Self.watch(store, until: .restricted, what: "the block") { server in
            server.signedIn(subject: "erin", email: nil, key: try await server.addTestIssuer(), server: 0)
        } takeAway: { server in
            _ = try await server.stores.services.last!.blockIdentity(
                issuer: TestIssuer.defaultIssuer, subject: "erin", container: server.container)
        }
    }

    /// A device on the first server watches; `takeAway` acts through the
    /// last; the device's status must become `status` within ``bound``.
    private static func watch(
        _ store: TestStore, until status: AccountStatus, what: String,
        device: (RunningServer) async throws -> RemoteCloudDatabase,
        takeAway: (RunningServer) async throws -> Void
    ) async throws {
        let server = try await RunningServer.start(store: store)
        let directory = DeviceDirectories()
        defer { directory.remove() }
        do {
            let engine = try await SyncEngine<ConformanceNote>(
                database: try await device(server), directory: directory.directory("device"),
                configuration: watching)
            try await waitUntilListening(engine)
            let start = ContinuousClock.now
            try await takeAway(server)
            let took = await time(until: status, of: engine, from: start)
            #expect(took != nil, "the device never heard")
            if let took { print("\(what) reached the device in \(took)") }
            await engine.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("`cumulus token revoke` beside a running `cumulus serve` turns the watching device to credentialsRefused")
    func commandBesideServe() async throws {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-revoke-device-\(UUID().uuidString)", isDirectory: true)
        let directory = DeviceDirectories()
        defer {
            try? FileManager.default.removeItem(at: data)
            directory.remove()
        }
        let store = ["--data", data.path]
        let run = { (arguments: [String]) in try await ServerCrashTests.lastLine(of: executable, arguments + store) }
        try await CumulusCommandTests.createDatabase(data.path)
        let apiToken = try await run(["container", "add", "revoke"])
        let carol = try await run(["user", "add", "carol", "--container", "revoke"])
        let server = try await ServeProcess.start(executable: executable, store: store, container: "revoke")
        defer { server.kill() }
        let engine = try await SyncEngine<ConformanceNote>(
            database: server.database(apiToken: apiToken, webAuthToken: carol), directory: directory.directory("carol"),
            configuration: Self.watching)
        try await Self.waitUntilListening(engine)
        let start = ContinuousClock.now
        _ = try await run(["token", "revoke", "--user", "carol", "--container", "revoke"])
        let took = await Self.time(until: .credentialsRefused, of: engine, from: start)
        #expect(took != nil, "the device never heard")
        if let took { print("`cumulus token revoke` reached the device in \(took)") }
        await engine.close()
    }

    /// Returns once the engine synced, is available, and its channel listens.
    static func waitUntilListening(_ engine: SyncEngine<ConformanceNote>) async throws {
        try await engine.sync()
        #expect(await time(until: .available, of: engine, from: .now) != nil)
        // The channel opens with a request of its own after the engine starts: give it time to wait on the server.
        try await Task.sleep(for: .milliseconds(500))
    }

    /// How long after `start` the engine's status became `status`, or `nil`
    /// when it did not within ``bound``.
    static func time(
        until status: AccountStatus, of engine: SyncEngine<ConformanceNote>, from start: ContinuousClock.Instant
    ) async -> Duration? {
        let statuses = engine.accountStatus
        return await withTaskGroup(of: Duration?.self) { group in
            group.addTask {
                for await seen in statuses where seen == status { return ContinuousClock.now - start }
                return nil
            }
            group.addTask {
                try? await Task.sleep(until: start + bound)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
