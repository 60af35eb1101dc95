// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Cumulus",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CloudCodable", targets: ["CloudCodable"]),
        .library(name: "Cumulus", targets: ["Cumulus"]),
        .library(name: "CumulusTesting", targets: ["CumulusTesting"]),
    ],
    targets: [
        .target(name: "CloudCodable"),
        .target(name: "Cumulus", dependencies: ["CloudCodable"]),
        .target(name: "CumulusTesting", dependencies: ["Cumulus"]),
        .testTarget(name: "CloudCodableTests", dependencies: ["CloudCodable"]),
        .testTarget(name: "CumulusTestingTests", dependencies: ["CumulusTesting"]),
        .testTarget(name: "CumulusTests", dependencies: ["Cumulus", "CumulusTesting", "CumulusCrashChild"]),
        // A process for the crash tests to kill with SIGKILL mid-burst; not a product.
        .executableTarget(name: "CumulusCrashChild", dependencies: ["Cumulus"], path: "Tests/CumulusCrashChild"),
    ],
    swiftLanguageModes: [.v6]
)
