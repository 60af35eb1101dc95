import Foundation
import Testing

@Suite("cumulus demo")
struct DemoCommandTests {
    @Test("demo --server runs one device against a running server: what it adds, a second run finds")
    func oneDeviceAgainstAServer() async throws {
        let server = try await RunningServer.start()
        let journal = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: journal) }
        do {
            let token = try await server.user("alice").token
            let arguments = [
                "demo", "--server", server.baseURL.absoluteString, "--token", server.apiToken, "--user-token", token,
                "--container", server.container, "--listen", "0", "--journal", journal.path,
            ]
            let first = try await CumulusCommandTests.run(arguments)
            #expect(first.contains("The account holds 0 notes."))
            let added = try #require(first.first { $0.hasPrefix("Added ") })

            // Another device of the same user (another journal) sees the note.
            let other = try await CumulusCommandTests.run(
                Array(arguments.dropLast(2)) + ["--journal", journal.appendingPathComponent("other").path])
            #expect(other.contains("The account holds 1 note:"))
            let title = added.dropFirst("Added \"".count).prefix { $0 != "\"" }
            #expect(other.contains("  \(title)"))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("demo --server without the tokens is a usage error")
    func serverNeedsTokens() async throws {
        await #expect(throws: (any Error).self) {
            _ = try await CumulusCommandTests.run(["demo", "--server", "http://127.0.0.1:1"])
        }
    }
}
