import Cumulus
import CumulusServer
import Foundation
import Prometheus
import Testing

/// The samples of one answer of `/metrics`, in Prometheus's text format.
struct Scrape: Sendable {
    let text: String

    /// The value of the sample `name` with exactly `labels`, or `nil` when
    /// there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            let (sampleName, sampleLabels) = Self.parse(line[..<space])
            if sampleName == name && sampleLabels == labels { return value }
        }
        return nil
    }

    /// `name{label="value",…}` as its name and labels; quoted values may
    /// hold braces and commas.
    static func parse(_ key: Substring) -> (String, [String: String]) {
        guard let brace = key.firstIndex(of: "{") else { return (String(key), [:]) }
        var labels: [String: String] = [:]
        var rest = key[key.index(after: brace)...]
        while let equals = rest.firstIndex(of: "="), rest[rest.index(after: equals)] == "\"" {
            let label = rest[..<equals].trimmingCharacters(in: CharacterSet(charactersIn: ","))
            var value = ""
            var index = rest.index(equals, offsetBy: 2)
            while index < rest.endIndex, rest[index] != "\"" {
                if rest[index] == "\\" { index = rest.index(after: index) }
                value.append(rest[index])
                index = rest.index(after: index)
            }
            labels[label] = value
            rest = rest[rest.index(after: index)...]
        }
        return (String(key[..<brace]), labels)
    }
}

/// A configuration whose metrics go to a fresh registry, served as `endpoint` says.
func metricsConfiguration(_ endpoint: (PrometheusCollectorRegistry) -> MetricsEndpoint?) -> ServerConfiguration {
    let registry = PrometheusCollectorRegistry()
    var configuration = ServerConfiguration(port: 0, logger: quietLogger)
    configuration.metrics = MetricsConfiguration(
        factory: PrometheusMetricsFactory(registry: registry), endpoint: endpoint(registry))
    return configuration
}

extension HTTPTestServer {
    /// `/metrics` with the bearer token, as a scrape.
    func scrape(token: String) async throws -> Scrape {
        let answer = try await send("GET", "/metrics", headers: ["Authorization": "Bearer \(token)"])
        #expect(answer.status == 200)
        return Scrape(text: String(decoding: answer.body, as: UTF8.self))
    }

    /// Scrapes until `condition` holds of a scrape (at most about ten
    /// seconds), and returns the last scrape.
    func scrape(token: String, until condition: (Scrape) -> Bool) async throws -> Scrape {
        var scrape = try await self.scrape(token: token)
        for _ in 0..<100 where !condition(scrape) {
            try await Task.sleep(for: .milliseconds(100))
            scrape = try await self.scrape(token: token)
        }
        return scrape
    }

    /// Asks `/readyz` until its status is `status` (at most about ten
    /// seconds: an outcome answers for a second), and returns the last answer.
    func readyz(until status: Int) async throws -> HTTPAnswer {
        try await readyz { $0.status == status }
    }

    /// Asks `/readyz` until `condition` holds of its answer (at most about
    /// ten seconds), and returns the last answer.
    func readyz(until condition: (HTTPAnswer) -> Bool) async throws -> HTTPAnswer {
        var answer = try await send("GET", "/readyz")
        for _ in 0..<100 where !condition(answer) {
            try await Task.sleep(for: .milliseconds(100))
            answer = try await send("GET", "/readyz")
        }
        return answer
    }
}

/// Runs a server over `service` (which the caller closes) and gives `body`
/// a client of it; the server stops when `body` returns.
func serving<T: Sendable>(
    _ service: CloudService, configuration: ServerConfiguration, _ body: @Sendable (HTTPTestServer) async throws -> T
) async throws -> T {
    var configuration = configuration
    configuration.port = 0
    let server = CumulusHTTPServer(service: service, configuration: configuration)
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            try await server.run { port in continuation.yield(port) }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CloudError(.internalError, reason: "no port") }
        let running = HTTPTestServer(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, service: service, container: "", apiToken: "",
            webAuthToken: "", userRecordName: "", httpServer: server)
        do {
            let result = try await body(running)
            group.cancelAll()
            try await group.waitForAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}
