import CumulusServer
import Foundation
import Testing

@testable import cumulus

@Suite("cumulus console")
struct ConsoleCommandTests {
    @Test("add prints the token last and keeps only its hash; list shows IDs; revoke takes it out")
    func addListRevoke() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        let token = try #require(
            try await CumulusCommandTests.run(["console", "add", "--label", "Ada", "--data", data]).last)
        #expect(token.count == 64 && token.allSatisfy(\.isHexDigit))
        let file = data + "/" + ConsoleConfiguration.tokenFileName
        let stored = try String(contentsOfFile: file, encoding: .utf8)
        #expect(!stored.contains(token), "only the hash is written")
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)

        let store = ConsoleTokenStore(path: file)
        let id = try #require(try store.token(matching: token)?.id)
        let listed = try await CumulusCommandTests.run(["console", "list", "--data", data])
        #expect(listed.contains { $0.contains(id) && $0.contains("Ada") })
        #expect(!listed.contains { $0.contains(token) })

        let revoked = try await CumulusCommandTests.run(["console", "revoke", "--id", id, "--data", data])
        #expect(revoked.last?.contains(id) == true)
        #expect(try store.token(matching: token) == nil)
        await #expect(throws: (any Error).self) {
            _ = try await CumulusCommandTests.run(["console", "revoke", "--id", id, "--data", data])
        }
        #expect(try await CumulusCommandTests.run(["console", "list", "--data", data]) == ["No console tokens."])
    }

    @Test("serve --console turns the console on, with its token file in the data directory; it is off by default")
    func serveFlag() throws {
        let off = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", "/tmp/d"]) as? ServeCommand)
        #expect(off.serverConfiguration(logger: quietLogger).console == nil)
        let on = try #require(
            try CumulusCommand.parseAsRoot(["serve", "--console", "--data", "/tmp/d"]) as? ServeCommand)
        #expect(on.serverConfiguration(logger: quietLogger).console?.tokenFile == "/tmp/d/console-tokens.json")
    }
}
