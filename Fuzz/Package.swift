// swift-tools-version: 6.0
import PackageDescription

// Coverage-guided fuzzing, with libFuzzer and AddressSanitizer, of the
// wire reader and the record coders (FuzzCodec), of opening an engine's
// journal (FuzzJournal) and of the protocol's request and answer decoders
// (FuzzProtocol). Build and run with `Fuzz/run` (see
// Fuzz/README.md); CI replays the committed corpus.
let package = Package(
    name: "CumulusFuzz",
    dependencies: [.package(name: "Cumulus", path: "..")],
    targets: [
        .target(name: "FuzzDriver"),
        .target(
            name: "FuzzChecks",
            dependencies: [
                .product(name: "CloudCodable", package: "Cumulus"),
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "CumulusServerCore", package: "Cumulus"),
                .product(name: "CumulusTesting", package: "Cumulus"),
            ]
        ),
        .executableTarget(name: "FuzzCodec", dependencies: ["FuzzDriver", "FuzzChecks"]),
        .executableTarget(name: "FuzzJournal", dependencies: ["FuzzDriver", "FuzzChecks"]),
        .executableTarget(name: "FuzzProtocol", dependencies: ["FuzzDriver", "FuzzChecks"]),
    ],
    swiftLanguageModes: [.v6]
)
