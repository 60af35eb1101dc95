// Engine workloads: upload into the journal, fetch and apply a large zone,
// and re-open a large journal, each with a Foundation baseline measured in
// the same run.
//
//   swift run -c release --package-path Benchmarks EngineWorkloads [records]
//
// `records` (default 100,000) is the size of the zone fetched and re-opened.

import BenchmarkModels
import Cumulus
import CumulusTesting
import Foundation

func seconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func temporaryDirectory(_ name: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "cumulus-bench-\(name)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The process's peak resident memory in bytes (Linux: VmHWM).
func peakResidentBytes() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let digits = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        return digits.map { $0 * 1024 }
    }
    return nil
}

func format(_ value: Double) -> String { String(format: "%12.0f", value) }

let records = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 100_000
let manual = SyncConfiguration(automaticSync: false)
let landmarks = (0..<1_000).map(Landmark.sample)

print("Engine workloads (\(ProcessInfo.processInfo.activeProcessorCount) cores); rates in models per second")

// 1. One upload call with 1,000 models, until durable in the journal.
do {
    var rates: [Double] = []
    var syncs = 0
    for round in 0..<5 {
        let engine = try await SyncEngine<Landmark>(
            database: InMemoryCloudServer().database(signedInAs: "u"), directory: temporaryDirectory("batch\(round)"),
            configuration: manual)
        let before = engine.journalSyncCount
        let time = try await seconds { try await engine.upload(landmarks) }
        syncs = engine.journalSyncCount - before
        rates.append(Double(landmarks.count) / time)
    }
    let encoder = JSONEncoder()
    let baseline = try await seconds { for landmark in landmarks { _ = try encoder.encode(landmark) } }
    print(
        "upload, one call of 1,000      \(format(rates.sorted()[2]))   fsyncs per 1,000: \(syncs)   baseline JSONEncoder alone: \(format(1_000 / baseline))"
    )
}

// 2. 1,000 concurrent single-model uploads (group commit).
do {
    var rates: [Double] = []
    var syncs = 0
    for round in 0..<5 {
        let engine = try await SyncEngine<Landmark>(
            database: InMemoryCloudServer().database(signedInAs: "u"), directory: temporaryDirectory("single\(round)"),
            configuration: manual)
        let before = engine.journalSyncCount
        let time = try await seconds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for landmark in landmarks { group.addTask { try await engine.upload(landmark) } }
                try await group.waitForAll()
            }
        }
        syncs = engine.journalSyncCount - before
        rates.append(Double(landmarks.count) / time)
    }
    print("upload, 1,000 concurrent calls \(format(rates.sorted()[2]))   fsyncs per 1,000: \(syncs)")
}

// 3. Fetch and apply a zone of `records` landmarks into a fresh engine.
let server = InMemoryCloudServer()
let zone = ZoneID(zoneName: "Landmark")
let writer = server.database(signedInAs: "u")
_ = try await writer.modifyZones([.create(zone)])
var wireBytes = 0
let encoder = RecordEncoder(zoneID: zone)
var index = 0
while index < records {
    let end = min(index + 200, records)
    let operations = try (index..<end).map { i -> RecordOperation in
        let record = try encoder.encode(Landmark.sample(i))
        wireBytes += try WireFormat.encode(record).count
        return RecordOperation(.create, record)
    }
    _ = try await writer.modifyRecords(operations, zoneID: zone, atomic: false)
    index = end
}
let residentBefore = peakResidentBytes() ?? 0
let fetchDirectory = temporaryDirectory("fetch")
var fetchTime = 0.0
do {
    let engine = try await SyncEngine<Landmark>(
        database: server.database(signedInAs: "u"), directory: fetchDirectory, configuration: manual)
    let events = engine.events
    let watcher = Task {
        for await event in events {
            if case .retryScheduled = event { print("  (retry during the fetch: \(event))") }
        }
    }
    fetchTime = try await seconds { try await engine.sync() }
    watcher.cancel()
    let fetched = await engine.models.count
    precondition(fetched == records, "the engine fetched \(fetched) of \(records) records")
}
let residentAfter = peakResidentBytes() ?? 0
print(
    "fetch and apply \(records) records: \(String(format: "%.2f", fetchTime)) s, \(format(Double(records) / fetchTime)) records/s"
)
print(
    "  wire JSON of the zone \(wireBytes / 1_000_000) MB; peak resident memory \(residentAfter / 1_000_000) MB (\(residentBefore / 1_000_000) MB before the fetch, server included)"
)

// 4. Re-open the engine whose journal now holds `records` records.
do {
    var opened: SyncEngine<Landmark>?
    let time = try await seconds {
        opened = try await SyncEngine<Landmark>(
            database: server.database(signedInAs: "u"), directory: fetchDirectory, configuration: manual)
    }
    let count = await opened!.models.count
    let sample = try (0..<1_000).map { try JSONEncoder().encode(Landmark.sample($0)) }
    let decoder = JSONDecoder()
    let baseline = try await seconds { for data in sample { _ = try decoder.decode(Landmark.self, from: data) } }
    print(
        "journal load of \(count) records: \(String(format: "%.3f", time)) s   (JSONDecoder would take \(String(format: "%.3f", baseline * Double(count) / 1_000)) s to decode as many landmarks)"
    )
}
