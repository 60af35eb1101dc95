// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "CumulusServer",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CumulusServer", targets: ["CumulusServer"]),
        .library(name: "CumulusSigning", targets: ["CumulusSigning"]),
        .executable(name: "cumulus", targets: ["cumulus"]),
    ],
    dependencies: [
        .package(name: "Cumulus", path: ".."),
        // Encrypted fields' cipher, for the tests that search the store for plaintext.
        .package(name: "CumulusCrypto", path: "../Crypto"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        .target(
            name: "CumulusServer",
            dependencies: [
                .product(name: "CloudCodable", package: "Cumulus"),
                .product(name: "CloudProtocol", package: "Cumulus"),
                .product(name: "CumulusServerCore", package: "Cumulus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                // TLS in front of the guarded HTTP/1 channel.
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The connection guard sits between NIO's HTTP/1 codec and Hummingbird.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // The thread pool that runs the blocking file calls of asset bytes.
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The server's metrics, and the Prometheus text of /metrics.
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // Identity tokens (JWT) and their issuers' key sets (JWKS).
                .product(name: "JWTKit", package: "jwt-kit"),
                // Fetching an issuer's key set with a size limit and a deadline.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // The console's pages, escaped by the template engine.
                .product(name: "Mustache", package: "swift-mustache"),
            ]),
        // The P-256 request signer for server-to-server keys: apart from the
        // server so that a client can sign without linking Hummingbird.
        .target(
            name: "CumulusSigning",
            dependencies: [
                .product(name: "CloudProtocol", package: "Cumulus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .executableTarget(
            name: "cumulus",
            dependencies: [
                "CumulusServer", "CumulusSigning",
                // The demo's devices are sync engines.
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // `serve` names the system's reason when it cannot listen.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]),
        .testTarget(
            name: "CumulusServerTests",
            dependencies: [
                "CumulusServer", "CumulusSigning", "cumulus",
                .product(name: "Cumulus", package: "Cumulus"),
                .product(name: "CumulusTesting", package: "Cumulus"),
                .product(name: "CumulusConformance", package: "Cumulus"),
                .product(name: "CumulusCrypto", package: "CumulusCrypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Raw TCP clients for malformed and slow requests.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // A TLS client on loopback.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // Identity tokens signed by the tests, with RSA keys they make,
                // and their key sets served on loopback.
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                // The console tests' client: no cookie jar and no redirects of its own.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
