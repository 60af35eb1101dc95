import ArgumentParser
import Crypto
import Cumulus
import CumulusServer
import Foundation
import Testing

@testable import cumulus

@Suite("cumulus command line on PostgreSQL")
struct PostgresCommandTests {
    @Test(
        "container, user and key add work on --postgres", .enabled(if: PostgresTestDatabase.isEnabled))
    func provisioning() async throws {
        try await PostgresTestDatabase.with { url in
            let text = "postgres://\(url.username)@\(url.host):\(url.port)/\(url.database)?sslmode=disable"
            let container = "iCloud.com.example.pg"
            let apiToken = try #require(
                try await CumulusCommandTests.run(["container", "add", container, "--postgres", text]).last)
            let webAuthToken = try #require(
                try await CumulusCommandTests.run([
                    "user", "add", "alice", "--container", container, "--postgres", text,
                ])
                .last)
            let directory = CumulusCommandTests.temporaryDirectory()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let pemFile = directory.appendingPathComponent("key.pem")
            try P256.Signing.PrivateKey().publicKey.pemRepresentation.write(
                to: pemFile, atomically: true, encoding: .utf8)
            let keyID = try #require(
                try await CumulusCommandTests.run([
                    "key", "add", "--container", container, "--public-key", pemFile.path, "--postgres", text,
                ]).last)

            let service = try await CloudService.open(postgres: url, logger: quietLogger)
            #expect(try await service.authenticateContainer(named: container, apiToken: apiToken))
            #expect(try await service.user(container: container, webAuthToken: webAuthToken) != nil)
            #expect(try await service.serverKey(container: container, keyID: keyID) != nil)
            try await service.close()

            let serve = try #require(
                try CumulusCommand.parseAsRoot([
                    "serve", "--postgres", text, "--postgres-connection-wait", "3", "--postgres-statement-timeout",
                    "2.5", "--postgres-transaction-timeout", "20",
                ]) as? ServeCommand)
            let opened = try await serve.openService(logger: quietLogger)
            #expect(try await opened.authenticateContainer(named: container, apiToken: apiToken))
            let limits = try #require((opened.storage as? PostgresStorage)?.limits)
            #expect(
                limits
                    == PostgresStorage.Limits(
                        connectionWait: .seconds(3), statementTimeout: .milliseconds(2500),
                        transactionTimeout: .seconds(20)))
            try await opened.close()
        }
    }

    @Test("--postgres wins over CUMULUS_POSTGRES_URL, which wins over --data")
    func precedence() throws {
        let variable = ["CUMULUS_POSTGRES_URL": "postgres://from-env@envhost/db"]
        let flagged = try #require(
            try CumulusCommand.parseAsRoot(["serve", "--postgres", "postgres://from-flag@flaghost/db"])
                as? ServeCommand)
        #expect(try flagged.data.postgresURL(environment: variable)?.host == "flaghost")
        let plain = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", "/tmp/x"]) as? ServeCommand)
        #expect(try plain.data.postgresURL(environment: variable)?.host == "envhost")
        #expect(try plain.data.postgresURL(environment: [:]) == nil)
    }

    @Test("a malformed --postgres URL is a validation error that does not repeat the password")
    func malformedURL() throws {
        for command in [["serve"], ["container", "add", "c"]] {
            do {
                _ = try CumulusCommand.parseAsRoot(command + ["--postgres", "mysql://u:hunter2@h/d"])
                Issue.record("\(command) accepted a MySQL URL")
            } catch {
                let message = CumulusCommand.message(for: error)
                #expect(message.contains("PostgreSQL URL"), "\(message)")
                #expect(!message.contains("hunter2"))
            }
        }
        let variable = ["CUMULUS_POSTGRES_URL": "postgres://u:hunter2@h/d?sslmode=sometimes"]
        let plain = try DataOptions.parse([])
        #expect(throws: ValidationError.self) { try plain.postgresURL(environment: variable) }
    }

    @Test("the serve log line names the PostgreSQL server without the password")
    func location() throws {
        let serve = try #require(
            try CumulusCommand.parseAsRoot(["serve", "--postgres", "postgres://u:hunter2@dbhost:5433/d"])
                as? ServeCommand)
        let location = try serve.data.location()
        #expect(location.contains("dbhost:5433") && !location.contains("hunter2"))
    }
}
