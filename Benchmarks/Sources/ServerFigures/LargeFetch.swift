import BenchmarkModels
import Cumulus
import CumulusServer
import CumulusTesting
import Foundation

/// The full fetch of a large zone into a fresh engine, each reader in a
/// child process of its own (this executable, `fetch-child`), so that the
/// resident memory read from `/proc/self/status` is the reader's alone.
enum LargeFetch {
    /// What a child reports: the fetch's time, the records it got, and its
    /// memory before and after.
    struct Outcome: Codable, Sendable {
        var seconds: Double
        var records: Int
        /// The sum of the fetched records' wire JSON, when the child counts it.
        var wireBytes: Int?
        /// `VmRSS` before the fetch, after it (the reader still open) and
        /// `VmHWM` after it, in KiB.
        var rssBeforeKiB: Int
        var rssAfterKiB: Int
        var peakAfterKiB: Int
        /// For an engine: reading `models` once, after the fetch.
        var allModelsSeconds: Double?
        /// For an engine: one `model(withIdentifier:)`, the mean of 10,000
        /// reads of names spread over the zone.
        var oneModelMicroseconds: Double?
        /// For an engine: opening it again on the journal the fetch wrote,
        /// until it is open.
        var reopenSeconds: Double?
    }

    /// How a child reads the zone.
    enum Reader: String, Sendable {
        /// A fresh `SyncEngine` over `RemoteCloudDatabase`, journal in a
        /// temporary directory.
        case engine
        /// `RemoteCloudDatabase` alone, page by page, each page dropped.
        case remote
        /// `RemoteCloudDatabase` alone, keeping every record it gets: what
        /// holding the server's records costs, without the engine.
        case remoteKeeping = "remote-keeping"
        /// A fresh `SyncEngine` over `InMemoryCloudServer` in the child,
        /// filled with the same landmarks before the clock starts.
        case memory
    }

    static let childCommand = "fetch-child"

    // MARK: Parent

    /// Writes `count` landmarks into `user`'s zone through
    /// `CloudService.perform` in 200-record batches (no HTTP); returns the
    /// sum of their wire JSON.
    static func populate(_ deployment: Deployment, user: BenchUser, count: Int) async throws -> Int {
        let database = deployment.serviceDatabase(user)
        let zone = ZoneID(zoneName: Landmark.cloudRecordType)
        _ = try await database.modifyZones([.create(zone)])
        let encoder = RecordEncoder(zoneID: zone)
        var bytes = 0
        for start in stride(from: 0, to: count, by: 200) {
            let batch = try (start..<min(start + 200, count)).map { try encoder.encode(Landmark.sample($0)) }
            for record in batch { bytes += try WireFormat.encode(record).count }
            let results = try await database.modifyRecords(
                batch.map { RecordOperation(.create, $0) }, zoneID: zone, atomic: false)
            if let failure = results.lazy.compactMap(\.error).first { throw failure }
        }
        return bytes
    }

    /// Runs `reader` in a child process against `user` of `deployment`
    /// (or, for ``Reader/memory``, its own in-memory zone of `count`).
    static func run(_ reader: Reader, deployment: Deployment?, user: BenchUser?, count: Int) async throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = [childCommand, reader.rawValue, "\(count)"]
        var environment = ProcessInfo.processInfo.environment
        if let deployment, let user {
            // Tokens go through the environment, not the command line.
            environment["CUMULUS_FIGURES_URL"] = deployment.servers[0].baseURL.absoluteString
            environment["CUMULUS_FIGURES_CONTAINER"] = deployment.container
            environment["CUMULUS_FIGURES_API_TOKEN"] = deployment.apiToken
            environment["CUMULUS_FIGURES_USER_TOKEN"] = user.webAuthToken
        }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // Read on a thread of its own: the child's output must not wait on
        // the cooperative pool while the servers run on it.
        let handle = output.fileHandleForReading
        let data = try await Task.detached { try handle.readToEnd() ?? Data() }.value
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last(where: {
                $0.hasPrefix("RESULT ")
            })
        else {
            throw CloudError(
                .internalError, reason: "\(childCommand) \(reader.rawValue) ended with \(process.terminationStatus)")
        }
        return try JSONDecoder().decode(Outcome.self, from: Data(line.dropFirst("RESULT ".count).utf8))
    }

    // MARK: Child

    /// The child's entry point: `fetch-child <reader> <count>`.
    static func child(_ arguments: [String]) async throws {
        guard arguments.count == 2, let reader = Reader(rawValue: arguments[0]), let count = Int(arguments[1]) else {
            throw CloudError(.badRequest, reason: "usage: \(childCommand) engine|remote|memory <count>")
        }
        let outcome =
            switch reader {
            case .engine: try await engineFetch(from: try remoteFromEnvironment(), count: count)
            case .remote: try await remoteFetch(from: try remoteFromEnvironment(), keeping: false)
            case .remoteKeeping: try await remoteFetch(from: try remoteFromEnvironment(), keeping: true)
            case .memory: try await memoryFetch(count: count)
            }
        let json = try JSONEncoder().encode(outcome)
        print("RESULT " + String(decoding: json, as: UTF8.self))
    }

    static func remoteFromEnvironment() throws -> RemoteCloudDatabase {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["CUMULUS_FIGURES_URL"].flatMap(URL.init(string:)),
            let container = environment["CUMULUS_FIGURES_CONTAINER"],
            let apiToken = environment["CUMULUS_FIGURES_API_TOKEN"],
            let userToken = environment["CUMULUS_FIGURES_USER_TOKEN"]
        else { throw CloudError(.badRequest, reason: "the server's URL and tokens are not in the environment") }
        return RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(baseURL: url, container: container),
            credentials: .user(apiToken: apiToken, webAuthToken: userToken))
    }

    /// A fresh engine (manual sync, journal in a temporary directory)
    /// fetches the whole zone; the engine stays open while memory is read.
    static func engineFetch(from database: any CloudDatabase, count: Int) async throws -> Outcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cumulus-bench-fetch-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = MemoryStatus.read()
        let clock = ContinuousClock()
        let start = clock.now
        let engine = try await SyncEngine<Landmark>(
            database: database, directory: directory, configuration: SyncConfiguration(automaticSync: false))
        try await engine.sync()
        let time = clock.now - start
        let after = MemoryStatus.read()
        // The UI's reads, off the fetch's clock: every model, then single ones.
        let modelsStart = clock.now
        let fetched = await engine.models.count
        let allModels = clock.now - modelsStart
        let reads = 10_000
        let oneStart = clock.now
        var found = 0
        for index in 0..<reads {
            let name = Landmark.sample(index * max(count / reads, 1) % max(count, 1)).cloudIdentifier
            if await engine.model(withIdentifier: name) != nil { found += 1 }
        }
        let oneModel = (clock.now - oneStart).seconds / Double(reads) * 1e6
        await engine.close()
        guard fetched == count, found == min(reads, count) else {
            throw CloudError(
                .internalError, reason: "the engine holds \(fetched) of \(count) records, found \(found) by name")
        }
        let reopenStart = clock.now
        let reopened = try await SyncEngine<Landmark>(
            database: database, directory: directory, configuration: SyncConfiguration(automaticSync: false))
        let reopen = clock.now - reopenStart
        await reopened.close()
        return Outcome(
            seconds: time.seconds, records: fetched, wireBytes: nil, rssBeforeKiB: before.rss,
            rssAfterKiB: after.rss, peakAfterKiB: after.peak, allModelsSeconds: allModels.seconds,
            oneModelMicroseconds: oneModel, reopenSeconds: reopen.seconds)
    }

    /// `RemoteCloudDatabase` alone fetches the zone page by page, keeping
    /// the records or not. The wire size of the records received is summed
    /// off the clock.
    static func remoteFetch(from database: RemoteCloudDatabase, keeping: Bool) async throws -> Outcome {
        let zone = ZoneID(zoneName: Landmark.cloudRecordType)
        let before = MemoryStatus.read()
        let clock = ContinuousClock()
        var time = Duration.zero
        var token: SyncToken?
        var count = 0
        var bytes = 0
        var more = true
        var kept: [RecordResult] = []
        while more {
            let start = clock.now
            let page = try await database.fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: token)])[0]
                .get()
            if keeping { kept.append(contentsOf: page.records) }
            time += clock.now - start
            count += page.records.count
            for record in page.records.lazy.compactMap(\.record) { bytes += try WireFormat.encode(record).count }
            token = page.syncToken
            more = page.moreComing
        }
        let after = MemoryStatus.read()
        withExtendedLifetime(kept) {}
        return Outcome(
            seconds: time.seconds, records: count, wireBytes: bytes, rssBeforeKiB: before.rss, rssAfterKiB: after.rss,
            peakAfterKiB: after.peak)
    }

    /// A fresh engine fetches `count` landmarks from an `InMemoryCloudServer`
    /// in this process, filled before the memory is first read.
    static func memoryFetch(count: Int) async throws -> Outcome {
        let server = InMemoryCloudServer()
        let writer = server.database(signedInAs: "bench")
        let zone = ZoneID(zoneName: Landmark.cloudRecordType)
        _ = try await writer.modifyZones([.create(zone)])
        let encoder = RecordEncoder(zoneID: zone)
        for start in stride(from: 0, to: count, by: 200) {
            let operations = try (start..<min(start + 200, count)).map {
                RecordOperation(.create, try encoder.encode(Landmark.sample($0)))
            }
            _ = try await writer.modifyRecords(operations, zoneID: zone, atomic: false)
        }
        return try await engineFetch(from: server.database(signedInAs: "bench"), count: count)
    }
}

/// The process's resident memory from `/proc/self/status`, in KiB.
struct MemoryStatus {
    /// `VmRSS`: resident now.
    var rss: Int
    /// `VmHWM`: the most resident so far.
    var peak: Int

    /// The status of this process, or of another at `path` (`/proc/<pid>/status`).
    static func read(path: String = "/proc/self/status") -> MemoryStatus {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return MemoryStatus(rss: field("VmRSS"), peak: field("VmHWM"))
    }
}
