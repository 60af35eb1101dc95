import CumulusConformance
import Testing

@Suite("RemoteCloudDatabase conformance against the record server on each store")
struct RemoteConformanceTests {
    @Test(arguments: TestStore.available, CloudDatabaseConformance.checks)
    func conforms(_ store: TestStore, _ check: CloudDatabaseConformance.Check) async throws {
        let server = try await RunningServer.start(store: store)
        do {
            try await check.run(on: RemoteBackend(server: server))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(arguments: TestStore.available, SyncEngineConformance.checks)
    func engineConforms(_ store: TestStore, _ check: SyncEngineConformance.Check) async throws {
        let server = try await RunningServer.start(store: store)
        do {
            try await check.run(on: RemoteBackend(server: server))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
