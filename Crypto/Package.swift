// swift-tools-version: 6.0
import PackageDescription

// The cipher of Cumulus's encrypted fields, apart from the root package so
// that an app without encrypted fields pulls in no cryptography library.
let package = Package(
    name: "CumulusCrypto",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "CumulusCrypto", targets: ["CumulusCrypto"])
    ],
    dependencies: [
        .package(name: "Cumulus", path: ".."),
        // CryptoKit on Apple's platforms, BoringSSL elsewhere.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(
            name: "CumulusCrypto",
            dependencies: [
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "CumulusCryptoTests",
            dependencies: [
                "CumulusCrypto",
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "CumulusTesting", package: "Cumulus"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
