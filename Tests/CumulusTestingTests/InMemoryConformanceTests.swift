import CumulusConformance
import CumulusTesting
import Testing

@Suite("InMemoryCloudDatabase conformance")
struct InMemoryConformanceTests {
    @Test(arguments: CloudDatabaseConformance.checks)
    func conforms(_ check: CloudDatabaseConformance.Check) async throws {
        try await check.run(on: InMemoryBackend())
    }

    @Test("every check has a distinct name")
    func namesAreDistinct() {
        let names = CloudDatabaseConformance.checks.map(\.name)
        #expect(Set(names).count == names.count)
    }
}

@Suite("SyncEngine conformance over InMemoryCloudDatabase")
struct InMemoryEngineConformanceTests {
    @Test(arguments: SyncEngineConformance.checks)
    func conforms(_ check: SyncEngineConformance.Check) async throws {
        try await check.run(on: InMemoryBackend())
    }
}
