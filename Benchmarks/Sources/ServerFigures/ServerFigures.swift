import BenchmarkModels
import Cumulus
import CumulusServer
import CumulusTesting
import Foundation

/// The record server's figures, each beside its baselines and floors from
/// the same run:
///
/// - records per second of 200-record `records/modify` requests from one
///   client: over HTTP through the server on SQLite, through the same
///   service without HTTP, into `InMemoryCloudServer`, and the floor: SQLite
///   alone inserting the same rows, one committed transaction per 200;
/// - the same from 1, 8 and 64 concurrent clients (each its own user and
///   `RemoteCloudDatabase`) through each store of ``StoreSetup``, against
///   SQLite alone and PostgreSQL alone from as many connections;
/// - a full fetch of the zone written above, page by page: over HTTP, from
///   the same service without HTTP, and from `InMemoryCloudServer`;
/// - a full fetch of a large zone into a fresh `SyncEngine` in a child
///   process, with its resident memory against the zone's wire size,
///   beside `RemoteCloudDatabase` alone and the engine over
///   `InMemoryCloudServer`;
/// - the time from an upload on one device to the change in another
///   device's `changes` stream, median and 99th percentile;
/// - uploads and downloads of assets of each `--asset-sizes` (1, 10, 50 MB)
///   over HTTP, through `RemoteCloudDatabase` and through `curl`, with the
///   server's resident memory (`--assets-only` runs only these);
/// - with `--throughput-only`, only the write rates and their floors;
/// - with `--console-only` (and nothing else), the operator's console
///   answering its pages about a zone of `records` records, each store's
///   median and slowest answer beside the floor of its stylesheet.
///
/// ```
/// swift run -c release --package-path Benchmarks ServerFigures [records] [changes]
///     [--writes N] [--clients 1,8,64] [--large N] [--stores sqlite,postgres,postgres-2]
///     [--asset-sizes 1,10,50] [--assets-only] [--console-only] [--throughput-only]
/// ```
///
/// `records` (100,000) is the single-client write and the fetch; `--writes`
/// (as many) the records each concurrent run writes in all; `--large`
/// (1,000,000; 0 skips it) the large fetch's zone; `changes` (1,000) the
/// latency's samples. PostgreSQL stores need `CUMULUS_TEST_POSTGRES_URL`.
@main
struct ServerFigures {
    /// Runs the figures; a command line it cannot run prints the usage, and
    /// a failure its error, never a crash report.
    static func main() async {
        do {
            try await run(Array(CommandLine.arguments.dropFirst()))
        } catch let error as UsageError where error.help {
            print(UsageError.usage)
            exit(0)
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(2)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ arguments: [String]) async throws {
        if arguments.first == LargeFetch.childCommand {
            try await LargeFetch.child(Array(arguments.dropFirst()))
            return
        }
        if arguments.first == AssetTransfer.childCommand {
            try await AssetTransfer.child(Array(arguments.dropFirst()))
            return
        }
        let options = try Options(arguments)
        let clock = ContinuousClock()
        let began = clock.now
        if options.consoleOnly {
            try await console(options)
            print("\n(run took \((clock.now - began).seconds.oneDecimal) s)")
            return
        }
        if options.assetsOnly {
            try await assets(options)
            print("\n(run took \((clock.now - began).seconds.oneDecimal) s)")
            return
        }
        let postgres = try PostgresAdmin.fromEnvironment()
        var deployments: [(setup: StoreSetup, deployment: Deployment)] = []
        var skipped: [String] = []
        for setup in options.stores {
            if let reason = setup.unavailability(postgres: postgres) {
                skipped.append("\(setup.title): not run, \(reason)")
            } else {
                deployments.append((setup, try await setup.start(postgres: postgres)))
            }
        }
        // The single-client figures and their baselines are on SQLite.
        if let sqlite = deployments.first(where: { $0.setup == .sqlite })?.deployment {
            try await singleClient(sqlite, options: options)
        }
        try await concurrentClients(deployments, postgres: postgres, skipped: skipped, options: options)
        if options.throughputOnly {
            for (_, deployment) in deployments { await deployment.stop() }
            print("\n(run took \((clock.now - began).seconds.oneDecimal) s)")
            return
        }
        try await largeFetch(deployments, skipped: skipped, options: options)
        try await latency(deployments, skipped: skipped, options: options)
        if let sqlite = deployments.first(where: { $0.setup == .sqlite })?.deployment {
            try await roundTrips(sqlite)
        }
        try await assets(options)

        for (_, deployment) in deployments { await deployment.stop() }
        print("\n(run took \((clock.now - began).seconds.oneDecimal) s)")
    }

    // MARK: Figures

    static func singleClient(_ bench: Deployment, options: Options) async throws {
        let count = options.records
        print("== records/modify, 200 records per request (landmarks), 1 client, \(count) records")
        let memory = InMemoryCloudServer()
        let memoryRate = try await Throughput.writeRate(into: memory.database(signedInAs: "alice"), count: count)
        let serviceDatabase = bench.serviceDatabase(try await bench.addUser("carol"))
        let serviceRate = try await Throughput.writeRate(into: serviceDatabase, count: count)
        let alice = try await bench.addUser("alice")
        let httpRate = try await Throughput.writeRate(into: bench.database(alice), count: count)
        let floorRate = try await Throughput.sqliteFloorRate(count: count)
        let cFloorRate = try await SQLiteFloor.rate(try Throughput.rows(count: count))
        // Besides BEGIN IMMEDIATE, the insert and COMMIT, the service runs 9 statements in such a request:
        // it reads the database, zone, quota and records, and writes index rows, zone, zone log and database,
        // then reads the subscriptions.
        let statementsFloorRate = try await Throughput.sqliteFloorRate(count: count, smallStatements: 9)
        let storageFloorRate = try await Throughput.storageFloorRate(count: count, logger: quietLogger)
        printTable(
            ["path", "records/s", "share of in-memory"],
            [
                ["InMemoryCloudServer (baseline)", memoryRate.grouped, "100.0%"],
                ["CloudService on SQLite, no HTTP", serviceRate.grouped, ratio(serviceRate, memoryRate)],
                ["RemoteCloudDatabase → HTTP → SQLite", httpRate.grouped, ratio(httpRate, memoryRate)],
                [
                    "floor: SQLite's C API, one prepared insert, one commit per 200", cFloorRate.grouped,
                    ratio(cFloorRate, memoryRate),
                ],
                [
                    "floor: SQLite alone, same rows, one commit per 200", floorRate.grouped,
                    ratio(floorRate, memoryRate),
                ],
                [
                    "  the same with 9 SELECT 1 more per commit", statementsFloorRate.grouped,
                    ratio(statementsFloorRate, memoryRate),
                ],
                [
                    "floor: SQLiteStorage alone, the service's calls, no rules", storageFloorRate.grouped,
                    ratio(storageFloorRate, memoryRate),
                ],
            ])
        print("HTTP at \(ratio(httpRate, cFloorRate)) of SQLite's C API floor")
        guard !options.throughputOnly else { return }

        print("\n== full fetch of the \(count)-record zone written above, pages of 200")
        let memoryFetch = try await fetchAll(from: memory.database(signedInAs: "alice"))
        let serviceFetch = try await fetchAll(from: serviceDatabase)
        let httpFetch = try await fetchAll(from: bench.database(alice))
        let parts = try await fetchParts(bench.services[0], as: bench.serviceDatabase(alice).caller)
        let roundTrips = try await roundTrips(bench.database(alice), count: httpFetch.pages)
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
                [
                    "  server's part: CloudService.answer → JSON body", seconds(parts.server),
                    (Double(parts.records) / parts.server.seconds).grouped, "\(parts.pages)",
                ],
                [
                    "  client's part: CloudResponse.decode of the same bodies", seconds(parts.client),
                    (Double(parts.records) / parts.client.seconds).grouped, "\(parts.pages)",
                ],
                [
                    "  floor: the two parts, one after the other, no HTTP", seconds(parts.server + parts.client),
                    (Double(parts.records) / (parts.server + parts.client).seconds).grouped, "\(parts.pages)",
                ],
                [
                    "  floor: as many users/current round trips over HTTP", seconds(roundTrips),
                    (Double(parts.records) / roundTrips.seconds).grouped, "\(httpFetch.pages)",
                ],
            ])
    }

    static func concurrentClients(
        _ deployments: [(setup: StoreSetup, deployment: Deployment)], postgres: PostgresAdmin?, skipped: [String],
        options: Options
    ) async throws {
        let count = options.writes
        let levels = options.clients
        var skipped = skipped
        print(
            "\n== records/modify from concurrent clients (each its own user and RemoteCloudDatabase),"
                + " 200 records per request, \(count) records per run")
        var rows: [[String]] = []
        for (setup, deployment) in deployments {
            var row = [setup.title]
            for clients in levels {
                row.append(
                    try await Throughput.concurrentWriteRate(through: deployment, clients: clients, count: count)
                        .grouped)
            }
            rows.append(row)
        }
        let cFloor = try await SQLiteFloor.rate(try Throughput.rows(count: count))
        rows.append(
            ["floor: SQLite's C API, one writer, one commit per 200", cFloor.grouped]
                + Array(repeating: "", count: levels.count - 1))
        let sqliteFloor = try await Throughput.sqliteFloorRate(count: count)
        rows.append(
            ["floor: SQLite alone, one writer, one commit per 200", sqliteFloor.grouped]
                + Array(repeating: "", count: levels.count - 1))
        if let postgres {
            var row = ["floor: PostgreSQL alone, a connection per client, one commit per 200"]
            for clients in levels {
                row.append(
                    try await Throughput.postgresFloorRate(admin: postgres, connections: clients, count: count).grouped)
            }
            rows.append(row)
        } else {
            skipped.append("floor: PostgreSQL alone: not run, CUMULUS_TEST_POSTGRES_URL is not set")
        }
        printTable(["records/s"] + levels.map { $0 == 1 ? "1 client" : "\($0) clients" }, rows)
        printSkipped(skipped)
    }

    static func largeFetch(
        _ deployments: [(setup: StoreSetup, deployment: Deployment)], skipped: [String], options: Options
    ) async throws {
        let count = options.large
        guard count > 0 else { return }
        print(
            "\n== full fetch of \(count) landmarks over HTTP into a fresh SyncEngine (journal in a temporary"
                + " directory), each reader in a child process")
        var outcomes: [(title: String, outcome: LargeFetch.Outcome)] = []
        var written = 0
        var fetched: Int?
        let clock = ContinuousClock()
        for (setup, deployment) in deployments where setup != .postgresTwoServers {
            let user = try await deployment.addUser("large")
            let start = clock.now
            written = try await LargeFetch.populate(deployment, user: user, count: count)
            print(
                "  filled the zone on \(setup.title) in \(seconds(clock.now - start))"
                    + " (CloudService.perform, 200 records per batch)")
            let engine = try await LargeFetch.run(.engine, deployment: deployment, user: user, count: count)
            outcomes.append(("SyncEngine ← HTTP ← \(setup.title)", engine))
            let remote = try await LargeFetch.run(.remote, deployment: deployment, user: user, count: count)
            outcomes.append(("  baseline: RemoteCloudDatabase alone ← HTTP ← \(setup.title)", remote))
            fetched = remote.wireBytes
            let keeping = try await LargeFetch.run(.remoteKeeping, deployment: deployment, user: user, count: count)
            outcomes.append(("  baseline: RemoteCloudDatabase alone, keeping every record", keeping))
        }
        let memory = try await LargeFetch.run(.memory, deployment: nil, user: nil, count: count)
        outcomes.append(("baseline: SyncEngine ← InMemoryCloudServer in the child", memory))
        let fetchedBytes = fetched ?? written
        print(
            "  the zone's wire JSON (sum of each record's WireFormat.encode): \(megabytes(written)) as written,"
                + " \(megabytes(fetchedBytes)) as fetched (with the server's metadata)")
        printTable(
            [
                "reader", "seconds", "records/s", "RSS before", "RSS after", "peak", "peak − before",
                "÷ written", "÷ fetched",
            ],
            outcomes.map { row($0.title, $0.outcome, written: written, fetched: fetchedBytes) })
        print(
            "  RSS before/after: the child's VmRSS before the fetch and after it, the reader still open;"
                + " peak: its VmHWM after the fetch; ÷: peak − before over the zone's wire JSON")
        for (title, outcome) in outcomes {
            guard let all = outcome.allModelsSeconds, let one = outcome.oneModelMicroseconds,
                let reopen = outcome.reopenSeconds
            else { continue }
            print(
                "  \(title.trimmingCharacters(in: .whitespaces)): models \(String(format: "%.2f", all)) s,"
                    + " model(withIdentifier:) \(String(format: "%.2f", one)) µs,"
                    + " re-open \(String(format: "%.2f", reopen)) s")
        }
        printSkipped(skipped.filter { !$0.hasPrefix(StoreSetup.postgresTwoServers.title) })
    }

    static func latency(
        _ deployments: [(setup: StoreSetup, deployment: Deployment)], skipped: [String], options: Options
    ) async throws {
        let count = options.changes
        print("\n== upload on device A → change in device B's changes stream, \(count) changes")
        let memoryServer = InMemoryCloudServer()
        var rows: [[String]] = []
        let memoryLatency = try await latencies(
            a: memoryServer.database(signedInAs: "bob"), b: memoryServer.database(signedInAs: "bob"), count: count)
        rows.append(["InMemoryCloudServer (baseline)", millis(memoryLatency.median), millis(memoryLatency.p99)])
        for (setup, deployment) in deployments where setup != .postgres {
            let path =
                deployment.servers.count == 1
                ? "two engines over HTTP, \(setup.title), long-poll notifications"
                : "A on server 1, B on server 2, \(setup.title), long-poll notifications"
            // Back to back: A's uploads naming no channel (as before #38), then naming A's.
            for naming in [false, true] {
                let bob = try await deployment.addUser(naming ? "bob" : "bob-unnamed")
                let a = CountingDatabase(base: deployment.database(bob, server: 0), namingChannel: naming)
                let measured = try await latencies(a: a, b: deployment.database(bob, server: 1), count: count)
                let how = naming ? ", A names its channel" : ", A names none"
                rows.append([path + how, millis(measured.median), millis(measured.p99)])
            }
        }
        printTable(["path", "median", "p99"], rows)
        printSkipped(skipped.filter { !$0.hasPrefix(StoreSetup.postgres.title) })
    }

    static func roundTrips(_ deployment: Deployment) async throws {
        print("\n== one upload with automatic sync, and idle polls: the device's requests and fsyncs (SQLite)")
        let unnamed = try await RoundTrips.measure(deployment, namingChannel: false)
        let measured = try await RoundTrips.measure(deployment, namingChannel: true)
        printTable(
            ["", "requests and journal fsyncs"],
            [
                ["one upload, naming no channel (as before #38)", unnamed.upload.described],
                ["one upload, now", measured.upload.described],
                ["one upload, when the goal was set", RoundTrips.before.upload],
                ["goal", "users/current ×1 at most, records/modify ×1, no fetch of its own write; ≤ 2 fsyncs"],
                ["\(measured.polls) idle polls, now", measured.poll.described],
                ["one idle poll, when the goal was set", RoundTrips.before.poll],
                ["goal", "1 request, no fsync, per poll"],
            ])
    }

    // MARK: Workloads

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

    /// The two halves of a full fetch over HTTP without HTTP: the service
    /// answering each page as JSON bytes, then the client decoding those
    /// bytes, each timed alone.
    static func fetchParts(_ service: CloudService, as caller: Caller) async throws
        -> (server: Duration, client: Duration, records: Int, pages: Int)
    {
        let zone = ZoneID(zoneName: "Landmark")
        let clock = ContinuousClock()
        var bodies: [[UInt8]] = []
        var token: SyncToken?
        var more = true
        var server = Duration.zero
        while more {
            let start = clock.now
            let body = try await service.answer(
                .fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: token)]), as: caller
            ).encodedBody()
            server += clock.now - start
            bodies.append(body)
            // Reading the token back is the client's work, off the server's clock.
            guard case .zoneChanges(let pages) = try CloudResponse.decode(.fetchZoneChanges, body: body) else {
                throw CloudError(.internalError, reason: "not zone changes")
            }
            let page = try pages[0].get()
            token = page.syncToken
            more = page.moreComing
        }
        var records = 0
        let decodeStart = clock.now
        for body in bodies {
            guard case .zoneChanges(let pages) = try CloudResponse.decode(.fetchZoneChanges, body: body) else {
                throw CloudError(.internalError, reason: "not zone changes")
            }
            records += try pages[0].get().records.count
        }
        let client = clock.now - decodeStart
        return (server, client, records, bodies.count)
    }

    /// `count` `users/current` requests one after another: the HTTP round
    /// trip with no storage behind it (the caller is cached after the first).
    static func roundTrips(_ database: any CloudDatabase, count: Int) async throws -> Duration {
        _ = try await database.currentUser()
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<count { _ = try await database.currentUser() }
        return clock.now - start
    }

    /// Uploads `count` landmarks one at a time on engine A and times each
    /// one's arrival in engine B's `changes` stream.
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

    static func row(_ title: String, _ outcome: LargeFetch.Outcome, written: Int, fetched: Int) -> [String] {
        let peakGrowth = Double((outcome.peakAfterKiB - outcome.rssBeforeKiB) * 1024)
        return [
            title, "\(outcome.seconds.oneDecimal) s", (Double(outcome.records) / outcome.seconds).grouped,
            megabytes(outcome.rssBeforeKiB * 1024), megabytes(outcome.rssAfterKiB * 1024),
            megabytes(outcome.peakAfterKiB * 1024), megabytes(Int(peakGrowth)),
            "\((peakGrowth / Double(max(written, 1))).oneDecimal)×",
            "\((peakGrowth / Double(max(fetched, 1))).oneDecimal)×",
        ]
    }

    static func assets(_ options: Options) async throws {
        guard !options.assetSizes.isEmpty else { return }
        print("\n== assets over HTTP on SQLite, median of 3: RemoteCloudDatabase against curl, same bytes, same server")
        var rows: [[String]] = []
        for size in options.assetSizes {
            let figures = try await AssetTransfer.measure(megabytes: size, runs: 3)
            func rate(_ seconds: Double) -> String { "\((Double(size) / seconds).oneDecimal) MB/s" }
            rows.append([
                "\(size) MB", rate(figures.clientUpload), rate(figures.curlUpload), rate(figures.clientDownload),
                rate(figures.curlDownload), megabytes(figures.serverStartKiB * 1024),
                megabytes(figures.serverPeakKiB * 1024), megabytes(figures.clientUploadGrowthKiB * 1024),
                megabytes(figures.slowReadGrowthKiB * 1024), rate(figures.oneRequestDownload),
                megabytes(figures.oneRequestSlowReadGrowthKiB * 1024), rate(figures.urlSessionDownload),
            ])
        }
        printTable(
            [
                "asset", "upload", "floor: curl upload", "download", "floor: curl download", "server RSS at start",
                "server peak RSS", "client growth: upload", "client growth: slow read",
                "before: download in one request", "before: slow read growth", "URLSession alone: download",
            ], rows)
    }

    static func console(_ options: Options) async throws {
        let postgres = try PostgresAdmin.fromEnvironment()
        for setup in options.stores where setup != .postgresTwoServers {
            if let reason = setup.unavailability(postgres: postgres) {
                print("\n== console pages on \(setup.rawValue): not run, \(reason)")
                continue
            }
            print(
                "\n== console pages over HTTP, a zone of \(options.records.grouped) records, \(setup.title), 30 samples"
            )
            let deployment = try await setup.start(postgres: postgres, console: true)
            do {
                let timings = try await ConsoleFigures.pages(of: deployment, records: options.records, samples: 30)
                printTable(
                    ["page", "median", "slowest", "within 200 ms"],
                    timings.map {
                        [
                            $0.page, millis($0.median), millis($0.slowest),
                            $0.slowest < .milliseconds(200) ? "yes" : "NO",
                        ]
                    })
            } catch {
                await deployment.stop()
                throw error
            }
            await deployment.stop()
        }
    }

    static func printTable(_ titles: [String], _ rows: [[String]]) {
        var table = TextTable(columns: titles.enumerated().map { TextTable.Column($1, right: $0 > 0) })
        for row in rows { table.add(row) }
        table.print()
        fflush(nil)
    }

    static func printSkipped(_ skipped: [String]) {
        for line in skipped { print("  \(line)") }
    }

    static func ratio(_ value: Double, _ base: Double) -> String { "\((value / base * 100).oneDecimal)%" }
    static func seconds(_ duration: Duration) -> String { "\(duration.seconds.oneDecimal) s" }
    static func millis(_ duration: Duration) -> String { "\((duration.seconds * 1000).oneDecimal) ms" }
    static func megabytes(_ bytes: Int) -> String { "\((Double(bytes) / 1_048_576).grouped) MB" }
}

/// The command line: `[records] [changes]` and named options.
struct Options {
    var records = 100_000
    var changes = 1_000
    var writes: Int
    var clients = [1, 8, 64]
    var large = 1_000_000
    var stores = StoreSetup.allCases
    var assetSizes = [1, 10, 50]
    var assetsOnly = false
    var consoleOnly = false
    var throughputOnly = false

    init(_ arguments: [String]) throws {
        var positional: [Int] = []
        var writes: Int?
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            func value() throws -> String {
                guard let value = remaining.popFirst() else { throw UsageError(message: "\(argument) needs a value") }
                return value
            }
            func number() throws -> Int {
                let text = try value()
                guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number >= 0 else {
                    throw UsageError(message: "\(argument) needs a count, not \(text)")
                }
                return number
            }
            switch argument {
            case "-h", "--help": throw UsageError(help: true)
            case "--writes": writes = try number()
            case "--assets-only": assetsOnly = true
            case "--console-only": consoleOnly = true
            case "--throughput-only": throughputOnly = true
            case "--asset-sizes":
                assetSizes = try value().split(separator: ",").map { text in
                    guard let size = Int(text), size >= 0, size <= 50 else {
                        throw UsageError(message: "--asset-sizes takes megabytes up to 50, such as 1,10,50")
                    }
                    return size
                }.filter { $0 > 0 }
            case "--large": large = try number()
            case "--clients":
                clients = try value().split(separator: ",").map { text in
                    guard let count = Int(text), count > 0 else {
                        throw UsageError(message: "--clients takes counts such as 1,8,64")
                    }
                    return count
                }
            case "--stores":
                stores = try value().split(separator: ",").map { name in
                    guard let setup = StoreSetup(rawValue: String(name)) else {
                        let known = StoreSetup.allCases.map(\.rawValue).joined(separator: ", ")
                        throw UsageError(message: "unknown store \(name); known: \(known)")
                    }
                    return setup
                }
            default:
                guard let number = Int(argument.replacingOccurrences(of: "_", with: "")), number > 0 else {
                    throw UsageError(message: "unknown argument '\(argument)'")
                }
                positional.append(number)
            }
        }
        if let first = positional.first { records = first }
        if positional.count > 1 { changes = positional[1] }
        self.writes = writes ?? records
    }
}

/// A command line that asks for the usage (`help`) or that cannot be run.
struct UsageError: Error, CustomStringConvertible {
    var message = ""
    var help = false

    static let usage = """
        usage: ServerFigures [records] [changes] [--writes N] [--clients 1,8,64] [--large N]
            [--stores \(StoreSetup.allCases.map(\.rawValue).joined(separator: ","))] [--asset-sizes 1,10,50] \
        [--assets-only] [--console-only] [--throughput-only]
        """

    var description: String {
        (message.isEmpty ? "" : "error: \(message)\n") + Self.usage
    }
}

/// Prints a line and flushes it, so that a long run shows its progress in a
/// file or pipe too.
func print(_ line: String) {
    Swift.print(line)
    fflush(nil)
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
