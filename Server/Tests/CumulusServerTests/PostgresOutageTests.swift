import Cumulus
import Foundation
import HTTPTypes
import Testing

@testable import CumulusServer

#if canImport(Glibc)
    import Glibc
#endif

/// A service whose PostgreSQL server stops and comes back: requests answer
/// `TRY_AGAIN_LATER` meanwhile, and nothing acknowledged is lost.
///
/// Runs its own cluster (through `.ci/postgres`) on `CUMULUS_TEST_OUTAGE_PORT`
/// (55441 by default), since the shared one must not be stopped.
@Suite("PostgreSQL outage", .enabled(if: PostgresTestDatabase.isEnabled && PostgresCluster.binaries != nil))
struct PostgresOutageTests {
    let alice = caller("alice")

    @Test("while PostgreSQL is down requests answer TRY_AGAIN_LATER (503); once back, all is there")
    func outage() async throws {
        let cluster = try await PostgresCluster.start()
        let service: CloudService
        do {
            service = try await CloudService.open(postgres: cluster.url, logger: quietLogger)
        } catch {
            await cluster.remove()
            throw error
        }
        do {
            try await service.createZone(as: alice)
            for index in 0..<5 {
                let results = try await service.modify([RecordOperation(.create, note("r\(index)"))], as: alice)
                guard case .record = results[0] else {
                    Issue.record("not saved: \(results[0])")
                    return
                }
            }

            try await cluster.stop()
            for attempt in 0..<2 {
                do {
                    _ = try await service.modify([RecordOperation(.create, note("lost\(attempt)"))], as: alice)
                    Issue.record("a write succeeded with PostgreSQL stopped")
                } catch let error as CloudError {
                    #expect(error.code == .tryAgainLater && error.retryAfter != nil, "\(error)")
                    let response = HTTPFailure(error).response()
                    #expect(response.status.code == 503)
                    #expect(response.headers[.retryAfter] != nil)
                }
            }
            do {
                _ = try await service.lookup(["r0"], as: alice)
                Issue.record("a read succeeded with PostgreSQL stopped")
            } catch let error as CloudError {
                #expect(error.code == .tryAgainLater && error.retryAfter != nil, "\(error)")
            }

            try await cluster.startAgain()
            // The pool reconnects by itself; until it has, requests may still say "later".
            var found: [RecordResult] = []
            for _ in 0..<60 {
                do {
                    found = try await service.lookup((0..<5).map { "r\($0)" }, as: alice)
                    break
                } catch let error as CloudError where error.code == .tryAgainLater {
                    try await Task.sleep(for: .milliseconds(500))
                }
            }
            #expect(found.count == 5)
            for result in found {
                guard case .record = result else {
                    Issue.record("an acknowledged record is missing: \(result)")
                    continue
                }
            }
            let again = try await service.modify([RecordOperation(.create, note("after"))], as: alice)
            if case .failure(let error) = again[0] { Issue.record("a write failed after the restart: \(error)") }
        } catch {
            try? await service.close()
            await cluster.remove()
            throw error
        }
        try await service.close()
        await cluster.remove()
    }
}

/// A private PostgreSQL cluster that a test may stop, freeze and start again.
struct PostgresCluster {
    let directory: String
    let port: Int
    var url: PostgresURL { try! PostgresURL("postgres://cumulus@127.0.0.1:\(port)/cumulus") }

    /// How `pg_ctl stop` ends the server.
    enum StopMode: String, Sendable, CustomTestStringConvertible {
        /// Backends end their sessions with an error (`57P01`), then the server stops.
        case fast
        /// Backends quit at once, as in a crash; recovery runs at the next start.
        case immediate

        var testDescription: String { rawValue }
    }

    /// The repository's root, where `.ci/postgres` is.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// PostgreSQL's programs, if installed.
    static var binaries: String? {
        if let bin = ProcessInfo.processInfo.environment["CUMULUS_PG_BIN"], !bin.isEmpty { return bin }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return versions.sorted().last.map { "/usr/lib/postgresql/\($0)/bin" }
    }

    /// Starts a cluster on `CUMULUS_TEST_OUTAGE_PORT`, or else on a port
    /// that is free, so that tests and engineers sharing a machine do not collide.
    static func start() async throws -> PostgresCluster {
        let port = try Int(ProcessInfo.processInfo.environment["CUMULUS_TEST_OUTAGE_PORT"] ?? "") ?? freePort()
        let output = try await run(["bash", root.appendingPathComponent(".ci/postgres").path, "start", String(port)])
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("export CUMULUS_PG_DIR=") }) else {
            throw CloudError(.internalError, reason: "`.ci/postgres start` printed no directory")
        }
        return PostgresCluster(directory: String(line.dropFirst("export CUMULUS_PG_DIR=".count)), port: port)
    }

    /// A loopback TCP port no one listens on now (the kernel's choice).
    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw CloudError(.internalError, reason: "no socket for finding a free port") }
        defer { close(socket) }
        guard let port = bindToLoopback(socket) else { throw CloudError(.internalError, reason: "no free port") }
        return port
    }

    /// Stops the server as an operator would (`pg_ctl stop -m fast`), keeping its data.
    func stop(_ mode: StopMode = .fast) async throws {
        try await Self.run(
            asOwner([
                "\(Self.binaries ?? "")/pg_ctl", "-D", "\(directory)/data", "-m", mode.rawValue, "-w", "stop",
            ]))
    }

    func startAgain() async throws {
        try await Self.run(
            asOwner([
                "\(Self.binaries ?? "")/pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w",
                "-o", "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1", "start",
            ]))
    }

    /// Suspends the server and all its processes (SIGSTOP): connections
    /// stay open and nothing answers, as when its host hangs or the network
    /// drops packets. Returns the processes, for ``thaw(_:)``.
    func freeze() async throws -> [String] {
        let pidFile = try String(contentsOfFile: "\(directory)/data/postmaster.pid", encoding: .utf8)
        guard let postmaster = pidFile.split(separator: "\n").first.map(String.init), Int(postmaster) != nil else {
            throw CloudError(.internalError, reason: "postmaster.pid names no process")
        }
        let children = try await Self.run(["pgrep", "-P", postmaster]).split(separator: "\n").map(String.init)
        let processes = [postmaster] + children.filter { Int($0) != nil }
        try await Self.run(["kill", "-STOP"] + processes)
        return processes
    }

    /// Resumes the processes ``freeze()`` suspended.
    func thaw(_ processes: [String]) async throws {
        try await Self.run(["kill", "-CONT"] + processes)
    }

    /// Stops the server and deletes its files.
    func remove() async {
        _ = try? await Self.run(["bash", Self.root.appendingPathComponent(".ci/postgres").path, "stop", directory])
    }

    private func asOwner(_ arguments: [String]) -> [String] {
        getuid() == 0 ? ["runuser", "-u", "postgres", "--"] + arguments : arguments
    }

    /// Runs a program to its end on a thread of its own (not one of the
    /// concurrency pool, which the tests share) and returns what it printed.
    /// `system` reaps the child itself, which `Process` does not reliably do
    /// inside the test runner.
    @discardableResult
    static func run(_ arguments: [String]) async throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-pg-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let command =
            (arguments + [">", output.path]).map { $0 == ">" ? $0 : quoted($0) }.joined(separator: " ")
            + " 2>/dev/null"
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            Thread { continuation.resume(returning: system(command)) }.start()
        }
        guard status == 0 else {
            throw CloudError(.internalError, reason: "\(arguments.prefix(3)) failed with status \(status)")
        }
        return String(decoding: (try? Data(contentsOf: output)) ?? Data(), as: UTF8.self)
    }

    /// `text` as one word of a shell command.
    private static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
