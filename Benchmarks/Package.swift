// swift-tools-version: 6.1
// Benchmarks for Cumulus. A package of its own, so that the root package keeps
// zero dependencies: only this one pulls in ordo-one/package-benchmark.
//
//   swift package --package-path Benchmarks benchmark                # every harness benchmark
//   swift package --package-path Benchmarks benchmark --filter 'Landmark.*'
//   swift package --package-path Benchmarks benchmark --target Engine
//   swift run -c release --package-path Benchmarks CodecRatios       # ratio table, no harness
//   swift run -c release --package-path Benchmarks ServerFigures     # the record server's figures
//   bash .ci/codec-ratios                                             # CodecInstructions under callgrind
import PackageDescription

let package = Package(
    name: "CumulusBenchmarks",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [
        // Named, so that targets can say `package: "Cumulus"` whatever the
        // checkout directory is called (a bare path's identity is its last component).
        .package(name: "Cumulus", path: ".."),
        .package(name: "CumulusServer", path: "../Server"),
        .package(name: "CumulusCrypto", path: "../Crypto"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The models and batches every workload measures, shared so that the
        // harness and CodecRatios measure exactly the same values.
        .target(
            name: "BenchmarkModels",
            dependencies: [.product(name: "CloudCodable", package: "Cumulus")]
        ),
        // The ratio table: each Cumulus path against its Foundation baseline,
        // back to back in one process. No harness.
        .executableTarget(
            name: "CodecRatios",
            dependencies: [
                "BenchmarkModels",
                .product(name: "CloudCodable", package: "Cumulus"),
            ]
        ),
        // One whole codec path or its Foundation baseline, N times, for
        // callgrind to count (.ci/codec-ratios). Only the root package's
        // CloudCodable, so CI builds none of the server in release.
        .executableTarget(
            name: "CodecInstructions",
            dependencies: [
                "BenchmarkModels",
                .product(name: "CloudCodable", package: "Cumulus"),
            ]
        ),
        // The record server's figures against in-memory baselines: write
        // throughput, a full zone fetch, device-to-device latency. No harness.
        .executableTarget(
            name: "EncryptionFigures",
            dependencies: [
                "BenchmarkModels",
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "CumulusCrypto", package: "CumulusCrypto"),
            ]
        ),
        .executableTarget(
            name: "ServerFigures",
            dependencies: [
                "BenchmarkModels",
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "CumulusTesting", package: "Cumulus"),
                .product(name: "CumulusServer", package: "CumulusServer"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // Harness benchmarks (package-benchmark wants them in Benchmarks/<Name>/).
        .executableTarget(
            name: "Serialisation",
            dependencies: [
                "BenchmarkModels",
                .product(name: "CloudCodable", package: "Cumulus"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Serialisation",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Engine workloads: upload until durable, fetch and apply a large zone
        // from InMemoryCloudDatabase, re-open a large replica, edit one field
        // through RemoteCloudDatabase (the core's wire decoder answers in process).
        .executableTarget(
            name: "Engine",
            dependencies: [
                "BenchmarkModels",
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "CumulusServerCore", package: "Cumulus"),
                .product(name: "CumulusTesting", package: "Cumulus"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Engine",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
