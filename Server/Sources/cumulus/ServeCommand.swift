import ArgumentParser
import CumulusServer
import Foundation
import Logging

/// `cumulus serve`: runs the record server until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the record server until interrupted.")

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The port to listen on (0: any free port).")
    var port: Int = 8080

    @Option(help: "Seconds from a request's first byte to the end of its headers before it is answered 408.")
    var headerTimeout: Double = Self.seconds(Self.defaults.requestHeadTimeout)

    @Option(help: "Seconds from the end of a request's headers to the end of its body before it is answered 408.")
    var bodyTimeout: Double = Self.seconds(Self.defaults.requestBodyTimeout)

    @Option(help: "Seconds a connection may stay open with no request before it is closed.")
    var idleTimeout: Double = Self.seconds(Self.defaults.idleConnectionTimeout)

    @Option(help: "Seconds a PostgreSQL transaction waits for a connection before its request answers 503.")
    var postgresConnectionWait: Double = Self.seconds(PostgresStorage.Limits().connectionWait)

    @Option(help: "Seconds PostgreSQL lets a statement run, or a transaction stay idle, before ending it.")
    var postgresStatementTimeout: Double = Self.seconds(PostgresStorage.Limits().statementTimeout)

    @Option(help: "Seconds from a PostgreSQL transaction's start before its request answers 503.")
    var postgresTransactionTimeout: Double = Self.seconds(PostgresStorage.Limits().transactionTimeout)

    @Option(
        help: ArgumentHelp(
            "The server's public address, e.g. https://cumulus.example.com: share URLs are PUBLIC-URL/share/<id>.",
            discussion: "Without it, shares have no URL and asset URLs are paths on the server asked."))
    var publicURL: String?

    @Option(help: "The largest asset accepted, in bytes; a larger upload is answered 413.")
    var maxAssetSize: Int64 = AssetSettings().sizeLimit

    @Option(
        help: ArgumentHelp(
            "Seconds an asset no record holds is kept, and an upload's receipt works.",
            discussion: "Unsaved uploads and released assets are deleted after it."))
    var assetGrace: Double = Self.seconds(AssetSettings().gracePeriod)

    @Option(help: "Seconds an asset's upload URL and download URL work.")
    var assetURLLifetime: Double = Self.seconds(AssetSettings().downloadLifetime)

    @Option(help: "Seconds between two runs of the collector that deletes unused assets.")
    var assetCollectionInterval: Double = Self.seconds(Self.defaults.assetCollectionInterval ?? .seconds(3600))

    @Flag(
        help: ArgumentHelp(
            "Serve the operator's console at /console/ (off by default).",
            discussion: "Sign in with a token from cumulus console add; see the server documentation's The console."))
    var console = false

    @OptionGroup var data: DataOptions

    @OptionGroup var log: LogOptions

    @OptionGroup(title: "TLS and request limits") var network: NetworkOptions

    @OptionGroup(title: "Metrics") var metrics: MetricsOptions

    /// The configuration whose settings the options default to.
    private static let defaults = ServerConfiguration(logger: Logger(label: "cumulus"))

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0 to 65535, not \(port).") }
        let durations = [
            ("header-timeout", headerTimeout), ("body-timeout", bodyTimeout), ("idle-timeout", idleTimeout),
            ("postgres-connection-wait", postgresConnectionWait),
            ("postgres-statement-timeout", postgresStatementTimeout),
            ("postgres-transaction-timeout", postgresTransactionTimeout), ("asset-url-lifetime", assetURLLifetime),
            ("asset-collection-interval", assetCollectionInterval),
        ]
        for (name, value) in durations {
            guard value > 0, value <= 86_400 else {
                throw ValidationError("--\(name) must be more than 0 and at most 86400 seconds.")
            }
        }
        if let publicURL { try Self.validatePublicURL(publicURL) }
        guard assetGrace > 0, assetGrace <= 90 * 86_400 else {
            throw ValidationError("--asset-grace must be more than 0 and at most 7776000 seconds (90 days).")
        }
        guard maxAssetSize > 0 else { throw ValidationError("--max-asset-size must be more than 0 bytes.") }
    }

    /// Refuses a public URL that is not an absolute http(s) URL with a host
    /// and nothing after its path: share URLs are built by appending to it.
    static func validatePublicURL(_ text: String) throws {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty, components.query == nil, components.fragment == nil,
            components.user == nil, components.password == nil
        else {
            throw ValidationError(
                "--public-url must be an http or https URL with a host and no query, e.g. https://cumulus.example.com.")
        }
    }

    /// The server's configuration from the options.
    func serverConfiguration(logger: Logger) -> ServerConfiguration {
        var configuration = ServerConfiguration(host: host, port: port, logger: logger)
        configuration.requestHeadTimeout = Self.duration(headerTimeout)
        configuration.requestBodyTimeout = Self.duration(bodyTimeout)
        configuration.idleConnectionTimeout = Self.duration(idleTimeout)
        configuration.assetCollectionInterval = Self.duration(assetCollectionInterval)
        configuration.rateLimits = network.rateLimits()
        if console { configuration.console = ConsoleConfiguration() }
        return configuration
    }

    /// The size limit and lifetimes of assets from the options.
    func assetSettings() -> AssetSettings {
        AssetSettings(
            sizeLimit: maxAssetSize, uploadLifetime: Self.duration(assetURLLifetime),
            downloadLifetime: Self.duration(assetURLLifetime), gracePeriod: Self.duration(assetGrace))
    }

    /// The bounds on every PostgreSQL transaction from the options.
    func postgresLimits() -> PostgresStorage.Limits {
        var limits = PostgresStorage.Limits()
        limits.connectionWait = Self.duration(postgresConnectionWait)
        limits.statementTimeout = Self.duration(postgresStatementTimeout)
        limits.transactionTimeout = Self.duration(postgresTransactionTimeout)
        return limits
    }

    /// Opens the service the data options select, on PostgreSQL with ``postgresLimits()``.
    func openService(logger: Logger) async throws -> CloudService {
        try await data.openService(
            logger: logger, postgresLimits: postgresLimits(), publicURL: publicURL, assetSettings: assetSettings(),
            creating: true)
    }

    func run() async throws {
        let logger = try log.logger()
        guard try data.postgresURL() == nil else { return try await serve(logger: logger) }
        // One server per SQLite file: a server on SQLite wakes only its own long polls on a change.
        _ = try data.storePath(creating: true)
        try await DataDirectoryLock.withLock(directory: data.directory) {
            try tightenDataDirectory(logger: logger)
            try await serve(logger: logger)
        }
    }

    private func serve(logger: Logger) async throws {
        let location = try data.location()
        var configuration = serverConfiguration(logger: logger)
        configuration.tls = try network.tls()
        configuration.metrics = try metrics.configuration(logger: logger)
        let service = try await openService(logger: logger)
        do {
            try await reportContainers(of: service, logger: logger)
            try await listen(service: service, configuration: configuration, location: location)
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        logger.info("Cumulus stopped")
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// A validated option's seconds in whole milliseconds, at least one, so
    /// that a positive option never becomes a zero limit.
    private static func duration(_ seconds: Double) -> Duration {
        max(ServerTime.duration(seconds: seconds, rounding: .toNearestOrAwayFromZero), .milliseconds(1))
    }
}
