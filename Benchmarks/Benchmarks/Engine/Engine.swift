// Engine benchmarks for ordo-one/package-benchmark: upload until durable,
// fetch and apply a large zone, re-open a large replica, send edits of one
// field of a wide record, merge a 100 KB text edited on two devices. Each
// has a baseline that runs in the same invocation (Foundation's, the whole
// record's send for the edits, comparing and splitting the text for the merge).
//
//   swift package --package-path Benchmarks benchmark --target Engine
//   CUMULUS_BENCH_RECORDS=100000 swift package --package-path Benchmarks benchmark --filter 'Engine fetch.*'
//
// The large workloads use `CUMULUS_BENCH_RECORDS` records (default
// 1,000,000); the replicas they re-open are built once and kept in the
// temporary directory (`cumulus-bench-replica-<count>`).

import Benchmark
import BenchmarkModels
@_spi(Testing) import Cumulus
import CumulusTesting
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `fsync` calls per 1,000 uploads, from the engine's own count.
let fsyncsPerThousand = BenchmarkMetric.custom("fsyncs per 1,000", polarity: .prefersSmaller, useScalingFactor: false)
/// Records fetched, decoded and applied (or loaded) per second.
let recordsPerSecond = BenchmarkMetric.custom("records/s", polarity: .prefersLarger, useScalingFactor: false)
/// The wire JSON of the zone, in MB, to read peak memory against.
let wireMegabytes = BenchmarkMetric.custom("zone wire MB", polarity: .prefersSmaller, useScalingFactor: false)
/// How much the process's resident memory grew while the engine fetched,
/// in MB, with the engine still open: what the replica costs, without the
/// in-process server that the peak also counts.
let residentGrowth = BenchmarkMetric.custom("resident growth MB", polarity: .prefersSmaller, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        scalingFactor: .kilo,
        maxDuration: .seconds(10),
        maxIterations: 20)

    registerUploadBenchmarks()
    registerFieldEditBenchmarks()
    registerTextMergeBenchmarks()
    registerFetchBenchmarks(count: largeRecordCount)
    registerLoadBenchmarks(count: 100_000)
    if largeRecordCount != 100_000 { registerLoadBenchmarks(count: largeRecordCount) }
}

let uploadMetrics: [BenchmarkMetric] = [
    .throughput, .wallClock, .mallocCountTotal, .peakMemoryResident, fsyncsPerThousand,
]

/// 1,000 models per iteration, so throughput reads in models per second.
/// The engines live for the whole benchmark: each iteration uploads the
/// same models again, which replaces the queued ones, as an app saving its
/// models again would.
func registerUploadBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: uploadMetrics, timeUnits: .microseconds)
    Benchmark("Engine upload 1000 in one call", configuration: configuration) { benchmark, fixture in
        let before = fixture.engine.journalSyncCount
        try await fixture.engine.upload(fixture.landmarks)
        benchmark.measurement(fsyncsPerThousand, fixture.engine.journalSyncCount - before)
    } setup: {
        try await UploadFixture()
    }

    Benchmark("Engine upload 1000 concurrent calls", configuration: configuration) { benchmark, fixture in
        let engine = fixture.engine
        let before = engine.journalSyncCount
        try await withThrowingTaskGroup(of: Void.self) { group in
            for landmark in fixture.landmarks { group.addTask { try await engine.upload(landmark) } }
            try await group.waitForAll()
        }
        benchmark.measurement(fsyncsPerThousand, engine.journalSyncCount - before)
    } setup: {
        try await UploadFixture()
    }

    Benchmark("Engine upload baseline JSONEncoder+fsync", configuration: configuration) { benchmark, fixture in
        let data = try JSONEncoder().encode(fixture.landmarks)
        try writeDurably(data, to: fixture.baselineFile)
        benchmark.measurement(fsyncsPerThousand, 1)
    } setup: {
        try await UploadFixture()
    }
}

/// One iteration fetches the whole zone into a fresh engine.
func registerFetchBenchmarks(count: Int) {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident, recordsPerSecond, wireMegabytes, residentGrowth],
        timeUnits: .milliseconds, warmupIterations: 0, scalingFactor: .one, maxDuration: .seconds(1),
        maxIterations: 1)
    Benchmark("Engine fetch and apply \(count)", configuration: configuration) { benchmark, zone in
        let residentBefore = residentBytes()
        let start = ContinuousClock.now
        let engine = try await zone.fetch(into: freshDirectory("fetch"))
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        benchmark.stopMeasurement()
        benchmark.measurement(residentGrowth, (residentBytes() - residentBefore) / 1_000_000)
        let fetched = await engine.models.count
        guard fetched == zone.count else {
            benchmark.error("fetched \(fetched) of \(zone.count) records")
            return
        }
        benchmark.measurement(recordsPerSecond, Int(Double(zone.count) / seconds))
        benchmark.measurement(wireMegabytes, zone.wireBytes / 1_000_000)
    } setup: {
        try await ZoneFixture(count: count)
    }

    // What a Foundation client pays at the least: JSONDecoder over the same
    // number of landmarks, without any network, journal or bookkeeping.
    Benchmark("Engine fetch baseline JSONDecoder \(count)", configuration: configuration) { benchmark, samples in
        let decoder = JSONDecoder()
        let start = ContinuousClock.now
        for index in 0..<count { blackHole(try decoder.decode(Landmark.self, from: samples[index % samples.count])) }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        benchmark.measurement(recordsPerSecond, Int(Double(count) / seconds))
    } setup: {
        try (0..<10_000).map { try JSONEncoder().encode(Landmark.sample($0)) }
    }
}

/// One iteration re-opens an engine on a replica of `count` records.
func registerLoadBenchmarks(count: Int) {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident, recordsPerSecond],
        timeUnits: .milliseconds, warmupIterations: 1, scalingFactor: .one, maxDuration: .seconds(10),
        maxIterations: 5)
    Benchmark("Engine journal load \(count)", configuration: configuration) { benchmark, replica in
        let start = ContinuousClock.now
        let engine = try await SyncEngine<Landmark>(
            database: InMemoryCloudServer().database(signedInAs: "bench"), directory: replica.directory,
            configuration: manualSync)
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        benchmark.stopMeasurement()
        let loaded = await engine.models.count
        guard loaded == replica.count else {
            benchmark.error("loaded \(loaded) of \(replica.count) records")
            return
        }
        benchmark.measurement(recordsPerSecond, Int(Double(replica.count) / seconds))
    } setup: {
        try await ReplicaFixture(count: count)
    }

    // The same models kept the simplest way: one JSON array file, read and
    // decoded with JSONDecoder.
    Benchmark("Engine journal load baseline JSONDecoder \(count)", configuration: configuration) {
        benchmark, replica in
        let start = ContinuousClock.now
        let models = try JSONDecoder().decode([Landmark].self, from: Data(contentsOf: replica.baselineFile))
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        blackHole(models)
        benchmark.measurement(recordsPerSecond, Int(Double(models.count) / seconds))
    } setup: {
        try await ReplicaFixture(count: count)
    }
}

/// Writes `data` to `url` and `fsync`s it, as a careful app would.
func writeDurably(_ data: Data, to url: URL) throws {
    let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
    defer { close(descriptor) }
    let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    guard written == data.count, fsync(descriptor) == 0 else { throw CocoaError(.fileWriteUnknown) }
}

/// The process's resident memory now, in bytes (Linux's `/proc/self/statm`;
/// 0 where it does not exist).
func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
