import ArgumentParser
import Crypto
import Cumulus
import CumulusServer
import Foundation
import Synchronization
import Testing

@testable import cumulus

@Suite("cumulus command line")
struct CumulusCommandTests {
    /// Parses and runs `arguments` as the executable does, and returns what
    /// the command printed.
    static func run(_ arguments: [String]) async throws -> [String] {
        let command = try CumulusCommand.parseAsRoot(arguments)
        let printing = try #require(command as? any PrintingCommand)
        let lines = Mutex<[String]>([])
        try await printing.run(output: CommandOutput { line in lines.withLock { $0.append(line) } })
        return lines.withLock { $0 }
    }

    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-cli-\(UUID().uuidString)")
    }

    /// Creates the database of the data directory `data` as `cumulus serve`
    /// does when it starts: the other commands need one.
    static func createDatabase(_ data: String) async throws {
        let serve = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", data]) as? ServeCommand)
        try await serve.openService(logger: quietLogger).close()
    }

    @Test("container, user and key add print their value alone on the last line, and the store has them")
    func provisioning() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try await Self.createDatabase(data)
        let container = "iCloud.com.example.cli"

        let apiToken = try #require(try await Self.run(["container", "add", container, "--data", data]).last)
        #expect(apiToken.count == 64 && apiToken.allSatisfy(\.isHexDigit))
        #expect(FileManager.default.fileExists(atPath: data + "/cumulus.sqlite"))

        let webAuthToken = try #require(
            try await Self.run(["user", "add", "alice", "--container", container, "--data", data]).last)
        #expect(!webAuthToken.isEmpty && !webAuthToken.contains(" "))

        let key = P256.Signing.PrivateKey()
        let pemFile = directory.appendingPathComponent("key.pem")
        try key.publicKey.pemRepresentation.write(to: pemFile, atomically: true, encoding: .utf8)
        let keyID = try #require(
            try await Self.run(["key", "add", "--container", container, "--public-key", pemFile.path, "--data", data])
                .last)
        #expect(!keyID.isEmpty && !keyID.contains(" "))

        let service = try await makeTestService(directory: URL(fileURLWithPath: data))
        #expect(try await service.authenticateContainer(named: container, apiToken: apiToken))
        #expect(try await service.user(container: container, webAuthToken: webAuthToken) != nil)
        #expect(try await service.serverKey(container: container, keyID: keyID) != nil)
        try await service.close()
    }

    @Test("schema deploy copies development's field types to production")
    func schemaDeploy() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try await Self.createDatabase(data)
        let container = "iCloud.com.example.schema"
        _ = try await Self.run(["container", "add", container, "--data", data])
        let development = Caller(container: container, environment: .development, scope: .private, user: "_a")
        let production = Caller(container: container, environment: .production, scope: .private, user: "_a")
        let record = Record(recordType: "Note", recordName: "n", zoneID: .defaultZone, fields: ["title": .string("t")])
        let save = CloudRequest.modifyRecords(
            operations: [RecordOperation(.create, record)], zoneID: .defaultZone, atomic: false)

        var service = try await makeTestService(directory: URL(fileURLWithPath: data))
        guard case .records(let refused) = try await service.perform(save, as: production) else {
            throw CloudError(.internalError, reason: "not records")
        }
        #expect(refused[0].error?.code == .badRequest)
        _ = try await service.perform(save, as: development)
        try await service.close()

        let printed = try await Self.run(["schema", "deploy", "--container", container, "--data", data])
        #expect(printed.last?.contains("1 new field types") == true, "\(printed)")
        service = try await makeTestService(directory: URL(fileURLWithPath: data))
        guard case .records(let accepted) = try await service.perform(save, as: production) else {
            throw CloudError(.internalError, reason: "not records")
        }
        #expect(accepted[0].record != nil, "\(accepted[0])")
        try await service.close()
    }

    @Test("a container or user name holding U+0000 is refused")
    func nulNamesRefused() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try await Self.createDatabase(data)
        await #expect(throws: CloudError.self) {
            _ = try await Self.run(["container", "add", "a\u{0}b", "--data", data])
        }
        _ = try await Self.run(["container", "add", "c", "--data", data])
        await #expect(throws: CloudError.self) {
            _ = try await Self.run(["user", "add", "al\u{0}ice", "--container", "c", "--data", data])
        }
    }

    @Test("a missing public key file is a clear error")
    func missingKeyFile() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        await #expect(throws: ValidationError.self) {
            _ = try await Self.run([
                "key", "add", "--container", "c", "--public-key", directory.appendingPathComponent("none.pem").path,
                "--data", directory.path,
            ])
        }
    }

    @Test("user add --email gives the user an address others find them by; a bad address creates no user")
    func userEmail() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try await Self.createDatabase(data)
        let container = "iCloud.com.example.email"
        _ = try await Self.run(["container", "add", container, "--data", data])
        _ = try await Self.run([
            "user", "add", "alice", "--container", container, "--email", "Alice@Example.COM", "--data", data,
        ])
        _ = try await Self.run([
            "user", "add", "bob", "--container", container, "--email", "bob@example.com", "--not-discoverable",
            "--data", data,
        ])
        await #expect(throws: ValidationError.self) {
            _ = try await Self.run([
                "user", "add", "carol", "--container", container, "--email", "not an address", "--data", data,
            ])
        }
        // Refused while parsing: ArgumentParser wraps the validation error.
        await #expect(throws: (any Error).self) {
            _ = try await Self.run([
                "user", "add", "dan", "--container", container, "--not-discoverable", "--data", data,
            ])
        }
        // The refused address left no user named carol behind.
        _ = try await Self.run(["user", "add", "carol", "--container", container, "--data", data])

        let service = try await makeTestService(directory: URL(fileURLWithPath: data))
        let users = try await service.storage.read { transaction in
            try await transaction.users(
                withEmailAddresses: ["alice@example.com", "bob@example.com", "Alice@Example.COM"], container: container)
        }
        try await service.close()
        let byAddress = Dictionary(uniqueKeysWithValues: users.map { ($0.emailAddress ?? "", $0.isDiscoverable) })
        #expect(byAddress == ["alice@example.com": true, "bob@example.com": false], "\(users)")
    }

    @Test("serve --public-url takes an http(s) URL and gives it to the service; anything else is refused")
    func servePublicURL() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try #require(
            try CumulusCommand.parseAsRoot([
                "serve", "--public-url", "https://cumulus.example.com/", "--data", directory.path,
            ]) as? ServeCommand)
        let service = try await serve.openService(logger: quietLogger)
        #expect(service.rules.publicURL == "https://cumulus.example.com")
        try await service.close()
        #expect(try #require(try CumulusCommand.parseAsRoot(["serve"]) as? ServeCommand).publicURL == nil)
        for bad in [
            "cumulus.example.com", "ftp://cumulus.example.com", "https://", "https://x.example/?a=b",
            "https://user:pw@x.example", "javascript:alert(1)",
        ] {
            #expect(throws: (any Error).self, "\(bad)") {
                _ = try CumulusCommand.parseAsRoot(["serve", "--public-url", bad])
            }
        }
        _ = try CumulusCommand.parseAsRoot(["serve", "--public-url", "http://127.0.0.1:8080/cumulus"])
    }

    @Test("serve parses its options with their defaults")
    func serveOptions() throws {
        let serve = try #require(try CumulusCommand.parseAsRoot(["serve"]) as? ServeCommand)
        #expect(serve.host == "127.0.0.1" && serve.port == 8080 && serve.data.data == "./cumulus-data")
        let custom = try #require(
            try CumulusCommand.parseAsRoot(["serve", "--host", "0.0.0.0", "--port", "0", "--data", "/tmp/x"])
                as? ServeCommand)
        #expect(custom.host == "0.0.0.0" && custom.port == 0 && custom.data.data == "/tmp/x")
    }
}
