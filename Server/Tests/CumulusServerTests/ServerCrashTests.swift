import Cumulus
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Kills `cumulus serve` with SIGKILL in the middle of a stream of writes,
/// starts it again on the same data, and checks that every write it
/// acknowledged is there, whole.
@Suite("Server crash safety", .serialized)
struct ServerCrashTests {
    /// The `cumulus` executable built beside the test bundle.
    static var executableURL: URL? {
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = runner.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("cumulus")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory),
                !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: candidate.path)
            {
                return candidate
            }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    @Test("every acknowledged write survives SIGKILL of the server", arguments: [40, 150, 400])
    func acknowledgedWritesSurvive(killAfter acknowledged: Int) async throws {
        let executable = try #require(Self.executableURL, "the cumulus executable was not built")
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-crash-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: data) }
        try await CumulusCommandTests.createDatabase(data.path)
        let apiToken = try await Self.lastLine(of: executable, ["container", "add", "crash", "--data", data.path])
        let userToken = try await Self.lastLine(
            of: executable, ["user", "add", "alice", "--container", "crash", "--data", data.path])

        let first = try await ServeProcess.start(executable: executable, data: data)
        let database = first.database(apiToken: apiToken, webAuthToken: userToken)
        let zone = ZoneID(zoneName: "Crash")
        _ = try await database.modifyZones([.create(zone)])

        // Two writers send small batches as fast as they can; each batch's
        // answer is an acknowledgement of its records, remembered with their tags.
        let acknowledgedTags = Acknowledgements()
        let writers = (0..<2).map { writer in
            Task {
                var batch = 0
                while !Task.isCancelled {
                    let records = (0..<5).map { index in
                        Record(
                            recordType: "Entry", recordName: "w\(writer)-b\(batch)-\(index)", zoneID: zone,
                            fields: ["payload": .string(String(repeating: "p", count: 200 + index))])
                    }
                    batch += 1
                    guard
                        let results = try? await database.modifyRecords(
                            records.map { RecordOperation(.create, $0) }, zoneID: zone, atomic: true)
                    else { return }
                    acknowledgedTags.withLock { tags in
                        for result in results {
                            if let record = result.record { tags[record.recordName] = record.metadata?.changeTag }
                        }
                    }
                }
            }
        }
        while acknowledgedTags.withLock({ $0.count }) < acknowledged {
            try await Task.sleep(for: .milliseconds(2))
        }
        first.kill()
        for writer in writers { await writer.value }
        let acknowledgedNow = acknowledgedTags.withLock { $0 }
        #expect(acknowledgedNow.count >= acknowledged)

        let second = try await ServeProcess.start(executable: executable, data: data)
        defer { second.kill() }
        let reopened = second.database(apiToken: apiToken, webAuthToken: userToken)
        var stored: [String: Record] = [:]
        var token: SyncToken?
        var more = true
        while more {
            let page = try await reopened.fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: token)])[0]
                .get()
            for case .record(let record) in page.records { stored[record.recordName] = record }
            token = page.syncToken
            more = page.moreComing
        }
        for (name, tag) in acknowledgedNow {
            let record = try #require(stored[name], "acknowledged record \(name) is missing after the restart")
            #expect(record.metadata?.changeTag == tag)
        }
        // Nothing half-written: every stored record is whole, and batches are all or nothing.
        for record in stored.values {
            #expect(record["payload"] != nil)
        }
        let batches = Dictionary(grouping: stored.keys) { $0.split(separator: "-").prefix(2).joined(separator: "-") }
        for (batch, names) in batches { #expect(names.count == 5, "batch \(batch) is partly stored") }
        // The restarted server takes writes again.
        _ = try await reopened.modifyRecords(
            [RecordOperation(.create, Record(recordType: "Entry", recordName: "after", zoneID: zone))], zoneID: zone,
            atomic: true)
    }

    @Test("an asset whose record was acknowledged survives SIGKILL of the server", arguments: TestStore.single)
    func acknowledgedAssetSurvives(_ store: TestStore) async throws {
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-asset-crash-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: data) }
        guard store == .postgres else {
            try await CumulusCommandTests.createDatabase(data.path)
            return try await Self.assetSurvives(location: ["--data", data.path])
        }
        let database = try await PostgresTestDatabase.create()
        do {
            try await Self.assetSurvives(location: [
                "--postgres", "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)",
            ])
        } catch {
            try? await PostgresTestDatabase.drop(database)
            throw error
        }
        try await PostgresTestDatabase.drop(database)
    }

    /// Saves a record with an asset through one server, kills it, and
    /// downloads the asset from a new one on the same store (`--data DIR` or `--postgres URL`).
    static func assetSurvives(location: [String]) async throws {
        let executable = try #require(Self.executableURL, "the cumulus executable was not built")
        let apiToken = try await Self.lastLine(of: executable, ["container", "add", "crash"] + location)
        let userToken = try await Self.lastLine(
            of: executable, ["user", "add", "alice", "--container", "crash"] + location)

        let first = try await ServeProcess.start(executable: executable, store: location, container: "crash")
        defer { first.kill() }
        let bytes = AssetHTTP.randomBytes(3_000_000)
        let saved = try await AssetHTTP.savePhoto(
            "photo", bytes: bytes, in: first.database(apiToken: apiToken, webAuthToken: userToken),
            on: first.baseURL)
        #expect(saved.recordName == "photo")
        first.kill()

        let second = try await ServeProcess.start(executable: executable, store: location, container: "crash")
        defer { second.kill() }
        let found = try await second.database(apiToken: apiToken, webAuthToken: userToken)
            .lookupRecords(["photo"], zoneID: .defaultZone, desiredKeys: nil)
        let url = try #require(AssetHTTP.downloadURL(of: found.first?.record))
        let downloaded = try await AssetHTTP.download(url, on: second.baseURL)
        #expect(downloaded.status == 200)
        #expect(downloaded.body == bytes)
    }

    @Test("cumulus serve stops cleanly on SIGTERM and SIGINT, and its data opens again", arguments: [SIGTERM, SIGINT])
    func stopsOnSignal(_ signal: Int32) async throws {
        let executable = try #require(Self.executableURL, "the cumulus executable was not built")
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-signal-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: data) }
        try await CumulusCommandTests.createDatabase(data.path)
        let apiToken = try await Self.lastLine(of: executable, ["container", "add", "crash", "--data", data.path])
        let userToken = try await Self.lastLine(
            of: executable, ["user", "add", "alice", "--container", "crash", "--data", data.path])
        let server = try await ServeProcess.start(executable: executable, data: data)
        let database = server.database(apiToken: apiToken, webAuthToken: userToken)
        let saved = try await database.modifyRecords(
            [RecordOperation(.create, Record(recordType: "Entry", recordName: "kept", zoneID: .defaultZone))],
            zoneID: .defaultZone, atomic: false)
        #expect(saved[0].record != nil)
        server.send(signal)
        let process = server.process
        _ = try await offThePool { process.waitUntilExit() }
        // Exited (not ended by the signal), with status 0.
        #expect(process.exitCode == 0)

        let again = try await ServeProcess.start(executable: executable, data: data)
        defer { again.kill() }
        let found = try await again.database(apiToken: apiToken, webAuthToken: userToken)
            .lookupRecords(["kept"], zoneID: .defaultZone, desiredKeys: nil)
        #expect(found[0].record == saved[0].record)
    }

    /// Runs the executable to completion and returns the last line it printed.
    static func lastLine(of executable: URL, _ arguments: [String]) async throws -> String {
        let (status, data) = try await offThePool {
            let process = try ChildProcess(executable, arguments)
            let data = process.output?.readDataToEndOfFile() ?? Data()
            process.waitUntilExit()
            return (process.exitCode, data)
        }
        try #require(status == 0, "cumulus \(arguments.joined(separator: " ")) failed")
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        return String(try #require(lines.last))
    }
}

/// Runs blocking work (starting a child process, waiting for it) on a
/// thread of its own: on the tasks' few threads it would stall every test
/// running beside it, and the HTTP timeout tests measure time.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// The change tags of the records the server acknowledged, by name.
final class Acknowledgements: Sendable {
    private let tags = Mutex<[String: String]>([:])

    func withLock<T>(_ body: (inout [String: String]) -> T) -> T {
        tags.withLock { body(&$0) }
    }
}

/// A `cumulus serve` process on a free port.
final class ServeProcess: Sendable {
    let process: ChildProcess
    let baseURL: URL
    let container: String
    /// What the server printed up to the line saying where it listens.
    let startupOutput: String

    /// Serves the SQLite store in `data`.
    static func start(executable: URL, data: URL) async throws -> ServeProcess {
        try await start(executable: executable, store: ["--data", data.path], container: "crash")
    }

    /// Serves the store that `store` (`--data DIR` or `--postgres URL`) names,
    /// once it says where it listens.
    static func start(executable: URL, store: [String], container: String) async throws -> ServeProcess {
        try await offThePool { try ServeProcess(executable: executable, store: store, container: container) }
    }

    private init(executable: URL, store: [String], container: String) throws {
        let process = try ChildProcess(executable, ["serve", "--port", "0"] + store, mergeErrors: true)
        // The server logs the address it listens on; read until then.
        var text = ""
        guard let reader = process.output else { throw CloudError(.internalError, reason: "no output pipe") }
        var port: Int?
        while port == nil {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let range = text.range(of: #"http://127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                port = Int(text[range].split(separator: ":").last ?? "")
            }
        }
        guard let port else {
            process.send(SIGTERM)
            throw CloudError(.internalError, reason: "cumulus serve did not say where it listens: \(text)")
        }
        // Keep draining the pipe so that the server never blocks on a full one.
        Thread.detachNewThread {
            while !reader.availableData.isEmpty {}
        }
        self.process = process
        self.container = container
        startupOutput = text
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    func database(apiToken: String, webAuthToken: String, scope: DatabaseScope = .private) -> RemoteCloudDatabase {
        RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: baseURL, container: container, scope: scope, requestTimeout: .seconds(10),
                notificationBackoff: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(1))),
            credentials: .user(apiToken: apiToken, webAuthToken: webAuthToken))
    }

    /// Sends `signal` to the server.
    func send(_ signal: Int32) {
        process.send(signal)
    }

    /// Kills the server with SIGKILL and waits for it to end.
    func kill() {
        guard process.isRunning else { return }
        process.send(SIGKILL)
        process.waitUntilExit()
    }
}
