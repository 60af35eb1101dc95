// Serialisation benchmarks for ordo-one/package-benchmark.
//
//   swift package --package-path Benchmarks benchmark --filter 'Landmark.*'
//
// Names are "<Model> <path>"; the filter is a regular expression that must
// match the whole name. Every codec benchmark runs a batch of 1,000 distinct
// models per iteration with `scalingFactor: .kilo`, so throughput, time and
// malloc counts read per model. "wire MB/s" is the wire JSON (for the
// baselines, Foundation's own output) produced or consumed per second.
//
// For ratios against the Foundation baselines in one run, use
// `swift run -c release --package-path Benchmarks CodecRatios`.

import Benchmark
import BenchmarkModels
import CloudCodable

/// Bytes of wire JSON per second in MB (10⁶ B), measured around each batch.
let wireMegabytesPerSecond = BenchmarkMetric.custom("wire MB/s", polarity: .prefersLarger, useScalingFactor: false)

/// Models per iteration; matches `scalingFactor: .kilo`.
let batchSize = BenchmarkScalingFactor.kilo.rawValue

let codecMetrics: [BenchmarkMetric] = [
    .throughput, .wallClock, .mallocCountTotal, .peakMemoryResident, wireMegabytesPerSecond,
]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: codecMetrics,
        timeUnits: .nanoseconds,
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 1_000)

    registerCodecBenchmarks(Landmark.self)
    registerCodecBenchmarks(Note.self)
    registerCodecBenchmarks(WideRecord.self)
    registerSizeCheckBenchmarks()

    // The engine's workloads are in Benchmarks/Engine.
}

/// One benchmark per Cumulus path and per Foundation baseline for `Model`,
/// each over the same batch of 1,000 models.
func registerCodecBenchmarks<Model: BenchmarkModel>(_: Model.Type) {
    for path in CodecPath.cumulus + CodecPath.baselines + CodecPath.floors {
        Benchmark("\(Model.displayName) \(path.rawValue)") { benchmark, fixture in
            // One pass over the fixture is one iteration: `batchSize` models.
            let clock = ContinuousClock()
            let start = clock.now
            do {
                blackHole(try fixture.run(path))
            } catch {
                benchmark.error("\(Model.displayName) \(path.rawValue) failed: \(error)")
                return
            }
            let seconds = max((clock.now - start) / .seconds(1), 1e-9)
            let megabytes = Double(fixture.byteCount(of: path)) / 1e6
            benchmark.measurement(wireMegabytesPerSecond, Int((megabytes / seconds).rounded()))
        } setup: {
            try Fixture<Model>(count: batchSize)
        }
    }
}

/// The size check against encoding, on a note with a 900 KB body.
func registerSizeCheckBenchmarks() {
    for operation in SizeCheckFixture.Operation.allCases {
        // The check and model → record should take nanoseconds to a few
        // microseconds (the record shares the body with the model): a thousand
        // calls per iteration. While they take milliseconds, expect few samples.
        let scalingFactor: BenchmarkScalingFactor = operation == .modelToWire ? .one : .kilo
        Benchmark(
            "SizeCheck 900KB \(operation.rawValue)",
            configuration: .init(
                metrics: [.throughput, .wallClock, .mallocCountTotal, .peakMemoryResident],
                scalingFactor: scalingFactor,
                maxDuration: .seconds(5))
        ) { benchmark, fixture in
            for _ in benchmark.scaledIterations {
                do {
                    blackHole(try fixture.run(operation))
                } catch {
                    benchmark.error("SizeCheck \(operation.rawValue) failed: \(error)")
                    return
                }
            }
        } setup: {
            try SizeCheckFixture()
        }
    }
}
