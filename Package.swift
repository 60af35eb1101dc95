// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Cumulus",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CloudCodable", targets: ["CloudCodable"]),
        .library(name: "Cumulus", targets: ["Cumulus"]),
    ],
    targets: [
        .target(name: "CloudCodable"),
        .target(name: "Cumulus", dependencies: ["CloudCodable"]),
        .testTarget(name: "CloudCodableTests", dependencies: ["CloudCodable"]),
        .testTarget(name: "CumulusTests", dependencies: ["Cumulus", "CumulusCrashChild"]),
        // A process for the crash tests to kill with SIGKILL mid-burst; not a product.
        .executableTarget(name: "CumulusCrashChild", dependencies: ["Cumulus"], path: "Tests/CumulusCrashChild"),
    ],
    swiftLanguageModes: [.v6]
)
