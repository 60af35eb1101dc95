import ArgumentParser
import Cumulus
import CumulusServer
import Foundation
import Synchronization
import Testing

@testable import cumulus

/// The lifecycle commands as the operator types them: what they print, and
/// the clear errors of what they refuse.
@Suite("cumulus user, token, key and container lifecycle commands")
struct LifecycleCommandTests {
    static func run(_ arguments: [String], input: String? = nil) async throws -> [String] {
        let command = try CumulusCommand.parseAsRoot(arguments)
        let lines = Mutex<[String]>([])
        let output = CommandOutput { line in lines.withLock { $0.append(line) } }
        if let revoke = command as? TokenCommand.Revoke {
            try await revoke.run(output: output) { input }
        } else {
            try await #require(command as? any PrintingCommand).run(output: output)
        }
        return lines.withLock { $0 }
    }

    @Test("durations read as a number and a unit; anything else is refused")
    func durations() {
        #expect(DurationOption(argument: "90s")?.duration == .seconds(90))
        #expect(DurationOption(argument: "30m")?.duration == .seconds(1800))
        #expect(DurationOption(argument: "12h")?.duration == .seconds(43_200))
        #expect(DurationOption(argument: "7d")?.duration == .seconds(604_800))
        #expect(DurationOption(argument: "2w")?.duration == .seconds(1_209_600))
        #expect(DurationOption(argument: "45")?.duration == .seconds(45))
        #expect(DurationOption(argument: "0")?.duration == .zero)
        for bad in ["", "d", "-1d", "1.5h", "3y", "1e9", "99999999999999999w", "１d"] {
            #expect(DurationOption(argument: bad) == nil, "\(bad)")
        }
        #expect(DurationOption(argument: "14d")?.description == "2w")
    }

    @Test("user remove needs one of --keep-data and --delete-data; token revoke one way to name tokens")
    func requiredChoices() {
        for arguments in [
            ["user", "remove", "alice", "--container", "c"],
            ["user", "remove", "alice", "--container", "c", "--keep-data", "--delete-data"],
            ["token", "revoke", "--container", "c"],
            ["token", "revoke", "--container", "c", "--id", "abc", "--user", "alice"],
            ["token", "revoke", "--container", "c", "--token-stdin", "--user", "alice"],
            ["container", "rotate-token", "c"],
            ["container", "rotate-token", "c", "--overlap", "soon"],
            ["token", "add", "--user", "alice", "--container", "c", "--expires-in", "0"],
            ["user", "add", "alice", "--container", "c", "--token-lifetime", "0"],
        ] {
            #expect(throws: (any Error).self, "\(arguments)") { _ = try CumulusCommand.parseAsRoot(arguments) }
        }
    }

    @Test("the commands list, revoke, rotate and remove, and never print a token they did not make")
    func roundTrip() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = ["--data", directory.appendingPathComponent("data").path]
        try await CumulusCommandTests.createDatabase(data[1])
        let c = "iCloud.com.example.life"
        let apiToken = try #require(try await Self.run(["container", "add", c] + data).last)
        let first = try #require(
            try await Self.run(["user", "add", "alice", "--container", c, "--token-lifetime", "30d"] + data).last)
        let added = try await Self.run(["token", "add", "--user", "alice", "--container", c] + data)
        let second = try #require(added.last)
        #expect(added.first?.contains("never expires") == true)

        let listed = try await Self.run(["token", "list", "--user", "alice", "--container", c] + data)
        #expect(listed.count == 3 && listed[0].hasPrefix("ID"))
        #expect(listed.contains { $0.hasSuffix("never") })
        #expect(!listed.joined().contains(first) && !listed.joined().contains(second))
        let users = try await Self.run(["user", "list", "--container", c] + data)
        #expect(users.count == 2 && users[1].hasPrefix("alice") && users[1].hasSuffix("2"), "\(users)")

        // An empty standard input is refused; the token itself revokes it.
        await #expect(throws: ValidationError.self) {
            _ = try await Self.run(["token", "revoke", "--container", c, "--token-stdin"] + data, input: "\n")
        }
        let revoked = try await Self.run(["token", "revoke", "--container", c, "--token-stdin"] + data, input: first)
        #expect(revoked.last?.hasPrefix("Revoked token ") == true)
        await #expect(throws: CloudError.self) {
            _ = try await Self.run(["token", "revoke", "--container", c, "--token-stdin"] + data, input: first)
        }

        let rotated = try await Self.run(["container", "rotate-token", c, "--overlap", "1h"] + data)
        #expect(rotated.last != apiToken && rotated.last?.count == 64)
        #expect(rotated.first?.contains("(1h)") == true)

        let removed = try await Self.run(["user", "remove", "alice", "--container", c, "--delete-data"] + data)
        #expect(removed.last?.contains("revoked 1 web auth token;") == true, "\(removed)")
        #expect(try await Self.run(["user", "list", "--container", c] + data) == ["\(c) has no users."])
        await #expect(throws: CloudError.self) {
            _ = try await Self.run(["token", "list", "--user", "alice", "--container", c] + data)
        }
        #expect(try await Self.run(["key", "list", "--container", c] + data) == ["\(c) has no keys."])
    }
}
