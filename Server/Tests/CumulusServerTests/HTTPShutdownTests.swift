import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP failures and shutdown")
struct HTTPShutdownTests {
    @Test("an unexpected error is a 500 INTERNAL_ERROR whose uuid is in the log, and serving goes on")
    func unexpectedError() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        let failing: @Sendable (CloudService) -> any CloudServing = {
            WrappedService(base: $0, failsPerform: { $0.operation == .listZones })
        }
        let uuid = try await HTTPTestServer.with(configuration: configuration, wrap: failing) { server in
            let failed = try await server.sendAsUser("zones/list", method: "GET")
            #expect(failed.isError(.internalError, status: 500))
            let user = try await server.sendAsUser("tokens/create", body: "{}")
            #expect(user.status == 200)
            return try #require(failed.json["uuid"] as? String)
        }
        #expect(lines.all.contains { $0.contains("error") && $0.contains(uuid) })
    }

    @Test("cancelling run() answers a waiting notification poll before the server stops")
    func gracefulShutdown() async throws {
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-http-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = try await makeTestService(directory: directory)
        let container = "iCloud.com.example.notes"
        let apiToken = try await base.addContainer(named: container)
        let user = try await base.addUser(named: "alice", container: container)
        let service = WrappedService(base: base, pollStarted: { startedContinuation.yield() })
        let configuration = ServerConfiguration(
            port: 0, notificationPollTimeout: .seconds(120), logger: quietLogger)
        let server = CumulusHTTPServer(service: service, configuration: configuration)
        let serverTask = Task { try await server.run { portContinuation.yield($0) } }
        var portIterator = ports.makeAsyncIterator()
        let port = try #require(await portIterator.next())
        let running = HTTPTestServer(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, service: base, container: container,
            apiToken: apiToken, webAuthToken: user.webAuthToken, userRecordName: user.userRecordName)

        let created = try await running.sendAsUser("tokens/create", body: "{}")
        let token = try #require(created.json["apnsToken"] as? String)
        let poll = Task { try await running.send("GET", "/notifications/1/\(token)") }
        var startedIterator = started.makeAsyncIterator()
        await startedIterator.next()
        serverTask.cancel()
        let answer = try await poll.value
        // The service ends a cancelled poll with an empty batch; one that
        // throws instead is answered TRY_AGAIN_LATER. Either way the client
        // polls again from its cursor.
        if answer.status == 200 {
            #expect((answer.json["notifications"] as? [Any])?.isEmpty == true)
            #expect(answer.json["cursor"] is String)
        } else {
            #expect(answer.isError(.tryAgainLater, status: 503))
            #expect(answer.retryAfter == "1")
        }
        try await serverTask.value
        try await base.close()
    }
}
