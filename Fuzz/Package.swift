// swift-tools-version: 6.0
import PackageDescription

// Coverage-guided fuzzing of the wire reader and the record coders with
// libFuzzer and AddressSanitizer. Build and run with `Fuzz/run` (see
// Fuzz/README.md); CI replays the committed corpus.
let package = Package(
    name: "CumulusFuzz",
    dependencies: [.package(name: "Cumulus", path: "..")],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "FuzzCodec",
            dependencies: ["FuzzDriver", .product(name: "CloudCodable", package: "Cumulus")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
