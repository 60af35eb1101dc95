import CumulusServer
import Foundation
import Testing

@testable import cumulus

@Suite("cumulus console")
struct ConsoleCommandTests {
    /// Runs `body` on a service over the data directory's store.
    static func withService<T: Sendable>(_ data: String, _ body: (CloudService) async throws -> T) async throws -> T {
        let service = try await CloudService.open(path: data + "/cumulus.sqlite", logger: quietLogger)
        do {
            let result = try await body(service)
            try await service.close()
            return result
        } catch {
            try? await service.close()
            throw error
        }
    }

    @Test("add prints the token last and keeps only its hash; list shows IDs; revoke takes it out")
    func addListRevoke() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try await CumulusCommandTests.createDatabase(data)
        let token = try #require(
            try await CumulusCommandTests.run(["console", "add", "--label", "Ada", "--data", data]).last)
        #expect(token.count == 64 && token.allSatisfy(\.isHexDigit))
        let stored = try Data(contentsOf: URL(fileURLWithPath: data + "/cumulus.sqlite"))
        #expect(stored.range(of: Data(token.utf8)) == nil, "only the hash is written")

        let id = try #require(try await Self.withService(data) { try await $0.consoleToken(matching: token)?.id })
        let listed = try await CumulusCommandTests.run(["console", "list", "--data", data])
        #expect(listed.contains { $0.contains(id) && $0.contains("Ada") })
        #expect(!listed.contains { $0.contains(token) })

        let revoked = try await CumulusCommandTests.run(["console", "revoke", "--id", id, "--data", data])
        #expect(revoked.last?.contains(id) == true)
        #expect(try await Self.withService(data) { try await $0.consoleToken(matching: token) } == nil)
        await #expect(throws: (any Error).self) {
            _ = try await CumulusCommandTests.run(["console", "revoke", "--id", id, "--data", data])
        }
        #expect(try await CumulusCommandTests.run(["console", "list", "--data", data]) == ["No console tokens."])
    }

    @Test("serve --console turns the console on; it is off by default")
    func serveFlag() throws {
        let off = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", "/tmp/d"]) as? ServeCommand)
        #expect(off.serverConfiguration(logger: quietLogger).console == nil)
        let on = try #require(
            try CumulusCommand.parseAsRoot(["serve", "--console", "--data", "/tmp/d"]) as? ServeCommand)
        #expect(on.serverConfiguration(logger: quietLogger).console != nil)
    }
}
