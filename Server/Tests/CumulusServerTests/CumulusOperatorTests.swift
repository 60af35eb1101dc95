import ArgumentParser
import Crypto
import Cumulus
import CumulusServer
import Foundation
import Logging
import Testing

@testable import cumulus

/// The command line as an operator meets it: data directories, options,
/// the version and the log level.
@Suite("cumulus command line for operators")
struct CumulusOperatorTests {
    @Test("commands but serve refuse a data directory without a database, naming it, and create nothing")
    func missingDatabase() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("nothing-here").path
        let pemFile = directory.appendingPathComponent("key.pem")
        try P256.Signing.PrivateKey().publicKey.pemRepresentation.write(to: pemFile, atomically: true, encoding: .utf8)
        let commands = [
            ["container", "add", "c"], ["user", "add", "alice", "--container", "c"],
            ["key", "add", "--container", "c", "--public-key", pemFile.path], ["schema", "deploy", "--container", "c"],
            ["backup", directory.appendingPathComponent("backup").path],
        ]
        for command in commands {
            do {
                _ = try await CumulusCommandTests.run(command + ["--data", data])
                Issue.record("\(command) ran without a database")
            } catch let failure as CommandFailure {
                #expect(failure.description.contains("No Cumulus database in \(data) "), "\(failure)")
                #expect(failure.description.contains("cumulus serve --data \(data)"), "\(failure)")
            }
            #expect(!FileManager.default.fileExists(atPath: data), "\(command) created \(data)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("backup").path))
    }

    @Test("serve refuses a port outside 0...65535 as a usage error")
    func portRange() throws {
        for port in ["99999", "-1", "65536"] {
            #expect(throws: (any Error).self, "\(port)") {
                _ = try CumulusCommand.parseAsRoot(["serve", "--port", port])
            }
        }
        for port in ["0", "65535"] { _ = try CumulusCommand.parseAsRoot(["serve", "--port", port]) }
    }

    @Test("--log-level, else CUMULUS_LOG_LEVEL, else info; an unknown level is refused")
    func logLevel() throws {
        let plain = try #require(try CumulusCommand.parseAsRoot(["serve"]) as? ServeCommand)
        #expect(try plain.log.level(environment: [:]) == .info)
        #expect(try plain.log.level(environment: ["CUMULUS_LOG_LEVEL": "WARNING"]) == .warning)
        #expect(throws: ValidationError.self) { try plain.log.level(environment: ["CUMULUS_LOG_LEVEL": "loud"]) }
        let chosen = try #require(
            try CumulusCommand.parseAsRoot(["serve", "--log-level", "trace"]) as? ServeCommand)
        #expect(try chosen.log.level(environment: ["CUMULUS_LOG_LEVEL": "error"]) == .trace)
        #expect(throws: (any Error).self) { _ = try CumulusCommand.parseAsRoot(["serve", "--log-level", "loud"]) }
    }

    @Test("serve logs how many containers it serves, and warns with the next step when none")
    func containerCount() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        let serve = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", data]) as? ServeCommand)
        let service = try await serve.openService(logger: quietLogger)
        let lines = LogLines()
        try await serve.reportContainers(of: service, logger: lines.logger())
        _ = try await service.addContainer(named: "iCloud.com.example.one")
        try await serve.reportContainers(of: service, logger: lines.logger())
        try await service.close()
        let all = lines.all
        #expect(all.count == 2, "\(all)")
        #expect(all.first?.hasPrefix("warning Serving no container") == true, "\(all)")
        #expect(all.first?.contains("cumulus container add NAME --data \(data)") == true, "\(all)")
        #expect(all.last?.hasPrefix("info Serving 1 container") == true, "\(all)")
    }

    @Test("cumulus --version prints the version")
    func version() async throws {
        let run = try await CumulusProcess.run(["--version"])
        #expect(run.status == 0)
        #expect(run.output.trimmingCharacters(in: .whitespacesAndNewlines) == CumulusVersion.current)
    }

    @Test("a port in use and a data directory in use each fail with one line naming them, exit 1, no usage")
    func inUse() async throws {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        let server = try await ServeProcess.start(executable: executable, data: data)
        defer { server.kill() }
        let port = try #require(server.baseURL.port)

        let other = directory.appendingPathComponent("other").path
        let portTaken = try await CumulusProcess.run(["serve", "--port", "\(port)", "--data", other])
        #expect(portTaken.status == 1, "\(portTaken.output)")
        #expect(portTaken.output.contains("Cannot listen on 127.0.0.1:\(port): "), "\(portTaken.output)")
        #expect(!portTaken.output.contains("Usage:") && !portTaken.output.contains("bind("), "\(portTaken.output)")

        let second = try await CumulusProcess.run(["serve", "--port", "0", "--data", data.path])
        #expect(second.status == 1, "\(second.output)")
        #expect(second.output.contains("The data directory \(data.path) is in use"), "\(second.output)")
        #expect(!second.output.contains("Usage:"), "\(second.output)")
    }
}

/// One run of the `cumulus` executable: its exit status and what it wrote
/// to standard output and error.
struct CumulusProcess: Sendable {
    let status: Int32
    let output: String

    /// Runs the executable with `arguments` to its end; one that is still
    /// running after `limit` is killed (a refused command ends at once).
    static func run(_ arguments: [String], killAfter limit: TimeInterval = 60) async throws -> CumulusProcess {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        return try await offThePool {
            let process = try ChildProcess(executable, arguments, mergeErrors: true)
            let watchdog = DispatchWorkItem { process.send(SIGTERM) }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
            let data = process.output?.readDataToEndOfFile() ?? Data()
            process.waitUntilExit()
            watchdog.cancel()
            // A child ended by a signal has no exit code: say so with a status no command exits with.
            return CumulusProcess(status: process.exitCode ?? -1, output: String(decoding: data, as: UTF8.self))
        }
    }
}
