import BenchmarkModels
import Cumulus
import CumulusServer
import CumulusTesting
import Foundation
import Logging
import SQLiteNIO

/// The record server's figures, each beside its baseline from the same run:
///
/// - records per second of 200-record `records/modify` requests: over HTTP
///   through the server on SQLite, through the same service without HTTP,
///   into `InMemoryCloudServer`, and the floor: SQLite alone inserting the
///   same rows, one committed transaction per 200;
/// - a full fetch of a 100,000-record zone, page by page: over HTTP, from
///   the same service without HTTP, and from `InMemoryCloudServer`;
/// - the time from an upload on one device to the change in another
///   device's `changes` stream, median and 99th percentile over 1,000
///   changes: over HTTP and over `InMemoryCloudServer`.
///
/// `swift run -c release --package-path Benchmarks ServerFigures [records] [changes]`
@main
struct ServerFigures {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
        let fetchCount = arguments.first ?? 100_000
        let latencyCount = arguments.dropFirst().first ?? 1_000
        let bench = try await BenchServer.start()

        print("== records/modify, 200 records per request (landmarks), \(fetchCount) records")
        let memory = InMemoryCloudServer()
        let memoryRate = try await writeRate(into: memory.database(signedInAs: "alice"), count: fetchCount)
        let serviceDatabase = try await bench.serviceDatabase()
        let serviceRate = try await writeRate(into: serviceDatabase, count: fetchCount)
        let httpRate = try await writeRate(into: bench.database(), count: fetchCount)
        let floorRate = try await sqliteFloorRate(count: fetchCount)
        printTable(
            ["path", "records/s", "share of in-memory"],
            [
                ["InMemoryCloudServer (baseline)", memoryRate.grouped, "100.0%"],
                ["CloudService on SQLite, no HTTP", serviceRate.grouped, ratio(serviceRate, memoryRate)],
                ["RemoteCloudDatabase → HTTP → SQLite", httpRate.grouped, ratio(httpRate, memoryRate)],
                [
                    "floor: SQLite alone, same rows, one commit per 200", floorRate.grouped,
                    ratio(floorRate, memoryRate),
                ],
            ])

        print("\n== full fetch of the \(fetchCount)-record zone written above, pages of 200")
        let memoryFetch = try await fetchAll(from: memory.database(signedInAs: "alice"))
        let serviceFetch = try await fetchAll(from: serviceDatabase)
        let httpFetch = try await fetchAll(from: bench.database())
        printTable(
            ["path", "seconds", "records/s", "pages"],
            [
                [
                    "InMemoryCloudServer (baseline)", seconds(memoryFetch.time), memoryFetch.rate.grouped,
                    "\(memoryFetch.pages)",
                ],
                [
                    "CloudService on SQLite, no HTTP", seconds(serviceFetch.time), serviceFetch.rate.grouped,
                    "\(serviceFetch.pages)",
                ],
                [
                    "RemoteCloudDatabase over HTTP", seconds(httpFetch.time), httpFetch.rate.grouped,
                    "\(httpFetch.pages)",
                ],
            ])

        print("\n== upload on device A → change in device B's changes stream, \(latencyCount) changes")
        let memoryServer = InMemoryCloudServer()
        let memoryLatency = try await latencies(
            a: memoryServer.database(signedInAs: "bob"), b: memoryServer.database(signedInAs: "bob"),
            count: latencyCount)
        let httpLatency = try await latencies(
            a: bench.database(user: "bob"), b: bench.database(user: "bob"), count: latencyCount)
        printTable(
            ["path", "median", "p99"],
            [
                ["InMemoryCloudServer (baseline)", millis(memoryLatency.median), millis(memoryLatency.p99)],
                [
                    "two engines over HTTP, long-poll notifications", millis(httpLatency.median),
                    millis(httpLatency.p99),
                ],
            ])

        await bench.stop()
    }

    // MARK: Workloads

    static func records(_ range: Range<Int>, zone: ZoneID) throws -> [Record] {
        let encoder = RecordEncoder(zoneID: zone)
        return try range.map { try encoder.encode(Landmark.sample($0)) }
    }

    /// Writes `count` landmarks in 200-record requests; returns records per second.
    static func writeRate(into database: any CloudDatabase, count: Int) async throws -> Double {
        let zone = ZoneID(zoneName: "Landmark")
        _ = try await database.modifyZones([.create(zone)])
        let batches = try stride(from: 0, to: count, by: 200).map { try records($0..<min($0 + 200, count), zone: zone) }
        let clock = ContinuousClock()
        let start = clock.now
        for batch in batches {
            let results = try await database.modifyRecords(
                batch.map { RecordOperation(.forceReplace, $0) }, zoneID: zone, atomic: false)
            if let failure = results.lazy.compactMap(\.error).first { throw failure }
        }
        return Double(count) / (clock.now - start).seconds
    }

    /// The floor of the server's writes: SQLite alone (WAL, `synchronous=FULL`,
    /// as the server opens it) inserting the same records' wire JSON, 200 rows
    /// per committed transaction, with no reads, no rules and no HTTP.
    static func sqliteFloorRate(count: Int) async throws -> Double {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cumulus-floor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let connection = try await SQLiteConnection.open(
            storage: .file(path: directory.appendingPathComponent("floor.sqlite").path))
        _ = try await connection.query("PRAGMA journal_mode=WAL")
        _ = try await connection.query("PRAGMA synchronous=FULL")
        _ = try await connection.query("CREATE TABLE records (name TEXT PRIMARY KEY, body BLOB NOT NULL)")
        let zone = ZoneID(zoneName: "Landmark")
        let batches = try stride(from: 0, to: count, by: 200).map { start in
            try records(start..<min(start + 200, count), zone: zone).map { record in
                [SQLiteData.text(record.recordName), .blob(ByteBuffer(bytes: try WireFormat.encode(record)))]
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        for batch in batches {
            _ = try await connection.query("BEGIN IMMEDIATE")
            let placeholders = Array(repeating: "(?, ?)", count: batch.count).joined(separator: ", ")
            _ = try await connection.query(
                "INSERT OR REPLACE INTO records (name, body) VALUES \(placeholders)", batch.flatMap { $0 })
            _ = try await connection.query("COMMIT")
        }
        let rate = Double(count) / (clock.now - start).seconds
        try await connection.close()
        return rate
    }

    /// Fetches the landmark zone from its start, page by page.
    static func fetchAll(from database: any CloudDatabase) async throws -> (time: Duration, rate: Double, pages: Int) {
        let zone = ZoneID(zoneName: "Landmark")
        let clock = ContinuousClock()
        let start = clock.now
        var token: SyncToken?
        var pages = 0
        var count = 0
        var more = true
        while more {
            let page = try await database.fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: token)])[0]
                .get()
            count += page.records.count
            token = page.syncToken
            more = page.moreComing
            pages += 1
        }
        let time = clock.now - start
        return (time, Double(count) / time.seconds, pages)
    }

    /// Uploads `count` notes one at a time on engine A and times each one's
    /// arrival in engine B's `changes` stream.
    static func latencies(a: any CloudDatabase, b: any CloudDatabase, count: Int) async throws
        -> (median: Duration, p99: Duration)
    {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-latency-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let configuration = SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600))
        let sender = try await SyncEngine<Landmark>(
            database: a, directory: base.appendingPathComponent("a"), configuration: configuration)
        let receiver = try await SyncEngine<Landmark>(
            database: b, directory: base.appendingPathComponent("b"), configuration: configuration)
        try await sender.sync()
        try await receiver.sync()
        // Let the receiver's notification channel open before timing.
        try await Task.sleep(for: .milliseconds(500))
        var arrivals = receiver.changes.makeAsyncIterator()
        let clock = ContinuousClock()
        var samples: [Duration] = []
        for index in 0..<count {
            var landmark = Landmark.sample(1_000_000 + index)
            landmark.name = "latency \(index)"
            let start = clock.now
            try await sender.upload(landmark)
            arrival: while let change = await arrivals.next() {
                if case .updated(let models) = change, models.contains(where: { $0.id == landmark.id }) {
                    break arrival
                }
            }
            samples.append(clock.now - start)
        }
        await sender.close()
        await receiver.close()
        samples.sort()
        return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)])
    }

    // MARK: Formatting

    static func printTable(_ titles: [String], _ rows: [[String]]) {
        var table = TextTable(columns: titles.enumerated().map { TextTable.Column($1, right: $0 > 0) })
        for row in rows { table.add(row) }
        table.print()
    }

    static func ratio(_ value: Double, _ base: Double) -> String { "\((value / base * 100).oneDecimal)%" }
    static func seconds(_ duration: Duration) -> String { "\(duration.seconds.oneDecimal) s" }
    static func millis(_ duration: Duration) -> String { "\((duration.seconds * 1000).oneDecimal) ms" }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// A server on SQLite in a temporary directory, on a free loopback port.
struct BenchServer {
    let service: CloudService
    let baseURL: URL
    let container = "iCloud.com.example.bench"
    let apiToken: String
    let tokens: [String: String]
    let directory: URL
    let task: Task<Void, any Error>

    static func start() async throws -> BenchServer {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-bench-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let service = try await CloudService.open(path: directory.appendingPathComponent("cumulus.sqlite").path)
        let apiToken = try await service.addContainer(named: "iCloud.com.example.bench")
        var tokens: [String: String] = [:]
        for user in ["alice", "bob"] {
            tokens[user] = try await service.addUser(named: user, container: "iCloud.com.example.bench").webAuthToken
        }
        var logger = Logger(label: "cumulus.bench")
        logger.logLevel = .warning
        let server = CumulusHTTPServer(service: service, configuration: ServerConfiguration(port: 0, logger: logger))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CloudError(.internalError, reason: "no port") }
        return BenchServer(
            service: service, baseURL: URL(string: "http://127.0.0.1:\(port)")!, apiToken: apiToken, tokens: tokens,
            directory: directory, task: task)
    }

    func database(user: String = "alice") -> RemoteCloudDatabase {
        RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(baseURL: baseURL, container: container),
            credentials: .user(apiToken: apiToken, webAuthToken: tokens[user]))
    }

    /// The service itself as a database of `user`, without HTTP: the floor of the HTTP path.
    func serviceDatabase(user: String = "carol") async throws -> ServiceDatabase {
        let made = try await service.addUser(named: user, container: container)
        return ServiceDatabase(
            service: service,
            caller: Caller(container: container, environment: .development, scope: .private, user: made.userRecordName))
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
        try? await service.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The `CloudDatabase` calls the workloads make, straight into a
/// ``CloudService``: the server's work without HTTP or the codec.
struct ServiceDatabase: CloudDatabase {
    let service: CloudService
    let caller: Caller
    var scope: DatabaseScope { caller.scope }

    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
        guard
            case .records(let results) = try await service.perform(
                .modifyRecords(operations: operations, zoneID: zoneID, atomic: atomic), as: caller)
        else { throw CloudError(.internalError, reason: "unexpected answer") }
        return results
    }

    func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] {
        guard case .zoneResults(let results) = try await service.perform(.modifyZones(operations), as: caller)
        else { throw CloudError(.internalError, reason: "unexpected answer") }
        return results
    }

    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws -> [RecordResult] {
        throw unused
    }
    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
    ) async throws -> QueryResult { throw unused }
    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        guard case .zoneChanges(let results) = try await service.perform(.fetchZoneChanges(requests), as: caller)
        else { throw CloudError(.internalError, reason: "unexpected answer") }
        return results
    }
    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        throw unused
    }
    func listZones() async throws -> [RecordZone] { throw unused }
    func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] { throw unused }
    func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        throw unused
    }
    func listSubscriptions() async throws -> [Subscription] { throw unused }
    func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] { throw unused }
    func currentUser() async throws -> UserIdentity { throw unused }
    func notifications() -> AsyncStream<CloudNotification> { AsyncStream { $0.finish() } }

    private var unused: CloudError { CloudError(.badRequest, reason: "not used by the benchmark") }
}
