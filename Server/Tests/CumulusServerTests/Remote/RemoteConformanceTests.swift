import CumulusConformance
import Testing

@Suite("RemoteCloudDatabase conformance against the record server on SQLite")
struct RemoteConformanceTests {
    @Test(arguments: CloudDatabaseConformance.checks)
    func conforms(_ check: CloudDatabaseConformance.Check) async throws {
        let server = try await RunningServer.start()
        do {
            try await check.run(on: RemoteBackend(server: server))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(arguments: SyncEngineConformance.checks)
    func engineConforms(_ check: SyncEngineConformance.Check) async throws {
        let server = try await RunningServer.start()
        do {
            try await check.run(on: RemoteBackend(server: server))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
