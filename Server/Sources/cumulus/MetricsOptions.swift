import ArgumentParser
import CumulusServer
import Foundation
import Logging
import Prometheus

/// The options of `/metrics`, which is off unless one of them is given:
/// `--metrics-address` serves it on a listener of its own, a token (in
/// `--metrics-token-file` or `CUMULUS_METRICS_TOKEN`) makes it ask for
/// `Authorization: Bearer`, on the main listener when there is no address.
struct MetricsOptions: ParsableArguments {
    /// The environment variable that holds the token when no file is given.
    static let tokenVariable = "CUMULUS_METRICS_TOKEN"

    @Option(
        help: ArgumentHelp(
            "Serve /metrics (with /healthz and /readyz) on a listener of its own, e.g. 127.0.0.1:9464.",
            discussion: "The main listener then answers /metrics 404.", valueName: "host:port"))
    var metricsAddress: String?

    @Option(
        help: ArgumentHelp(
            "A file holding the token /metrics asks for as 'Authorization: Bearer <token>'.",
            discussion:
                "CUMULUS_METRICS_TOKEN may hold it instead. Without --metrics-address, the token serves /metrics on the main listener.",
            valueName: "path"))
    var metricsTokenFile: String?

    func validate() throws {
        _ = try listenerAddress()
        _ = try token()
    }

    /// The host and port of `--metrics-address`, if given.
    func listenerAddress() throws -> (host: String, port: Int)? {
        guard let text = metricsAddress else { return nil }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65_535).contains(port)
        else {
            throw ValidationError("--metrics-address must be host:port, e.g. 127.0.0.1:9464.")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains(" ") else {
            throw ValidationError("--metrics-address must name a host, e.g. 127.0.0.1:9464.")
        }
        return (host, port)
    }

    /// The token of `--metrics-token-file` or of `CUMULUS_METRICS_TOKEN`
    /// in `environment`, if either is given. Never shown in an error.
    func token(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        let variable = environment[Self.tokenVariable].flatMap { $0.isEmpty ? nil : $0 }
        let source: String
        let text: String
        if let metricsTokenFile {
            guard variable == nil else {
                throw ValidationError(
                    "Give the metrics token in --metrics-token-file or \(Self.tokenVariable), not both.")
            }
            do {
                text = try String(contentsOfFile: metricsTokenFile, encoding: .utf8)
            } catch {
                throw ValidationError("Cannot read --metrics-token-file \(metricsTokenFile).")
            }
            source = "--metrics-token-file"
        } else if let variable {
            text = variable
            source = Self.tokenVariable
        } else {
            return nil
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        // A header value: visible ASCII without spaces, long enough not to be guessed.
        guard (16...4096).contains(token.utf8.count), token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw ValidationError(
                "The metrics token of \(source) must be 16 to 4096 visible ASCII characters without spaces.")
        }
        return token
    }

    /// The server's metrics: kept in a Prometheus registry and served at
    /// `/metrics` when an option asks for it, else neither.
    func configuration(logger: Logger) throws -> MetricsConfiguration {
        let address = try listenerAddress()
        let token = try token()
        guard address != nil || token != nil else { return MetricsConfiguration() }
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // A notification poll waits up to its timeout: the buckets reach past it.
        factory.durationHistogramBuckets["cumulus_http_request_duration_seconds"] =
            factory.defaultDurationHistogramBuckets + [.seconds(30), .seconds(60)]
        let endpoint: MetricsEndpoint
        if let address {
            let listener = MetricsEndpoint.Listener(host: address.host, port: address.port) { port in
                logger.info("Cumulus metrics on http://\(address.host):\(port)/metrics")
            }
            endpoint = .ownListener(listener, token: token, registry: registry)
        } else if let token {
            endpoint = .bearerToken(token, registry: registry)
        } else {
            return MetricsConfiguration()
        }
        return MetricsConfiguration(factory: factory, endpoint: endpoint)
    }
}
