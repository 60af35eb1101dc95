import BenchmarkModels
import Cumulus
import CumulusTesting
import Foundation

/// The number of records of the large workloads: `CUMULUS_BENCH_RECORDS`,
/// by default 1,000,000.
let largeRecordCount = ProcessInfo.processInfo.environment["CUMULUS_BENCH_RECORDS"].flatMap(Int.init) ?? 1_000_000

/// An engine that syncs only when told to, as every workload wants.
let manualSync = SyncConfiguration(automaticSync: false)

/// A new, empty directory under the system's temporary directory.
func freshDirectory(_ name: String) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "cumulus-bench-\(name)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// The models every upload workload sends, and the engine they go to.
struct UploadFixture: Sendable {
    let landmarks = (0..<1_000).map(Landmark.sample)
    let engine: SyncEngine<Landmark>
    /// Foundation's baseline: what an app that keeps its models as a JSON
    /// file would write, then `fsync`.
    let baselineFile = freshDirectory("baseline").appendingPathComponent("landmarks.json")

    init() async throws {
        engine = try await SyncEngine<Landmark>(
            database: InMemoryCloudServer().database(signedInAs: "bench"), directory: freshDirectory("upload"),
            configuration: manualSync)
    }
}

/// An in-memory server holding a zone of `count` landmarks, ready to be fetched.
struct ZoneFixture: Sendable {
    let server = InMemoryCloudServer()
    let count: Int
    /// The size of the zone's records as wire JSON.
    let wireBytes: Int

    init(count: Int) async throws {
        self.count = count
        let zone = ZoneID(zoneName: Landmark.cloudRecordType)
        let writer = server.database(signedInAs: "bench")
        _ = try await writer.modifyZones([.create(zone)])
        let encoder = RecordEncoder(zoneID: zone)
        var bytes = 0
        for start in stride(from: 0, to: count, by: 200) {
            let operations = try (start..<min(start + 200, count)).map { index in
                let record = try encoder.encode(Landmark.sample(index))
                bytes += try WireFormat.encode(record).count
                return RecordOperation(.create, record)
            }
            _ = try await writer.modifyRecords(operations, zoneID: zone, atomic: false)
        }
        wireBytes = bytes
    }

    /// A fresh engine that fetches the whole zone into `directory`.
    func fetch(into directory: URL) async throws -> SyncEngine<Landmark> {
        let engine = try await SyncEngine<Landmark>(
            database: server.database(signedInAs: "bench"), directory: directory, configuration: manualSync)
        try await engine.sync()
        return engine
    }
}

/// A journal directory holding a fetched replica of `count` landmarks,
/// made once and kept in the temporary directory between runs.
struct ReplicaFixture: Sendable {
    let directory: URL
    let count: Int
    /// Foundation's baseline: the same landmarks as one JSON array file.
    let baselineFile: URL

    init(count: Int) async throws {
        self.count = count
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-bench-replica-\(count)")
        directory = base.appendingPathComponent("journal")
        baselineFile = base.appendingPathComponent("landmarks.json")
        let complete = base.appendingPathComponent("complete")
        if FileManager.default.fileExists(atPath: complete.path) { return }

        try? FileManager.default.removeItem(at: base)
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        let zone = try await ZoneFixture(count: count)
        let engine = try await zone.fetch(into: directory)
        try JSONEncoder().encode(await engine.models).write(to: baselineFile)
        try Data().write(to: complete)
    }
}
