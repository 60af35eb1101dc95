import BenchmarkModels
import Cumulus
import CumulusServer
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How long the operator's console takes to answer its pages about a zone
/// of many records, over HTTP on loopback, beside the floor of a console
/// answer that reads nothing (its stylesheet).
enum ConsoleFigures {
    /// The figures of one page: its median and slowest answer.
    struct Timing {
        var page: String
        var median: Duration
        var slowest: Duration
    }

    /// A query the console runs, and the same query as an app sends it.
    private struct Query {
        var title: String
        var parameters: [(String, String)]
        var request: RecordQuery
    }

    /// Writes `records` landmarks into one user's zone through the
    /// protocol, signs in to the console and times each page `samples`
    /// times after a warm-up.
    static func pages(of deployment: Deployment, records: Int, samples: Int) async throws -> [Timing] {
        let alice = try await deployment.addUser("console-alice")
        _ = try await Throughput.writeRate(into: deployment.database(alice), count: records)
        guard let sessions = deployment.servers[0].consoleSessions else {
            throw CloudError(.internalError, reason: "the deployment does not serve the console")
        }
        let token = try await deployment.services[0].addConsoleToken(label: "figures").token
        guard let session = try await sessions.signIn(token: token) else {
            throw CloudError(.internalError, reason: "the console refused its own token")
        }
        // The names in the zone's byte order, as the console pages them.
        let names = try Throughput.batches(count: records).joined().map(\.recordName).sorted {
            Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8))
        }
        let middle = names[names.count / 2]
        let database: [(String, String)] = [
            ("container", deployment.container), ("environment", "development"), ("scope", "private"),
            ("user", alice.recordName),
        ]
        let zone = database + [("zone", Throughput.zone.zoneName), ("owner", "")]
        let pages: [(String, String, [(String, String)])] = [
            ("stylesheet (floor)", "/console/style.css", []),
            ("users of the container", "/console/users", [("container", deployment.container)]),
            ("zones of the user", "/console/zones", database),
            ("records, first page", "/console/records", zone),
            ("records, page in the middle", "/console/records", zone + [("after", middle)]),
            ("records, last page", "/console/records", zone + [("after", names[names.count - 2])]),
            ("one record", "/console/record", zone + [("record", middle)]),
        ]
        let prefix = String(middle.prefix(2))
        let queries = [
            Query(
                title: "query by type", parameters: [("recordType", "Landmark")],
                request: RecordQuery(recordType: "Landmark")),
            Query(
                title: "query by name prefix", parameters: [("recordType", "Landmark"), ("prefix", prefix)],
                request: RecordQuery(
                    recordType: "Landmark", filters: [QueryFilter("___recordID", .beginsWith, .string(prefix))])),
            Query(
                title: "query, visits < 100, by visits",
                parameters: [
                    ("recordType", "Landmark"), ("field1", "visits"), ("comparator1", "LESS_THAN"),
                    ("value1", "100"), ("valueType1", "INT64"), ("sort", "visits"),
                ],
                request: RecordQuery(
                    recordType: "Landmark", filters: [QueryFilter("visits", .lessThan, .int64(100))],
                    sort: [QuerySort("visits")])),
        ]
        let client = ConsoleClient(baseURL: deployment.servers[0].baseURL, session: session.id)
        var timings: [Timing] = []
        for (title, path, parameters) in pages {
            let url = path + query(parameters)
            timings.append(try await time(title, samples: samples) { try await client.get(url) })
        }
        let remote = deployment.database(alice)
        for item in queries {
            let url = "/console/query" + query(zone + item.parameters)
            timings.append(try await time(item.title, samples: samples) { try await client.get(url) })
            // The floor: the same query as the user's own records/query over HTTP, a page of as many records.
            timings.append(
                try await time("  floor: its records/query", samples: samples) {
                    let clock = ContinuousClock()
                    let start = clock.now
                    _ = try await remote.queryRecords(
                        item.request, zoneID: Throughput.zone, resultsLimit: 50, continuationMarker: nil,
                        desiredKeys: nil)
                    return clock.now - start
                })
        }
        return timings
    }

    /// `samples` timings of `body` after a warm-up of three.
    private static func time(_ title: String, samples: Int, _ body: () async throws -> Duration) async throws
        -> Timing
    {
        for _ in 0..<3 { _ = try await body() }
        var durations: [Duration] = []
        for _ in 0..<samples { durations.append(try await body()) }
        durations.sort()
        return Timing(page: title, median: durations[durations.count / 2], slowest: durations.last!)
    }

    private static func query(_ parameters: [(String, String)]) -> String {
        guard !parameters.isEmpty else { return "" }
        var components = URLComponents()
        components.queryItems = parameters.map { URLQueryItem(name: $0.0, value: $0.1) }
        return "?" + (components.percentEncodedQuery ?? "")
    }
}

/// GETs console pages with a session's cookie and times each answer,
/// body included; an answer other than 200 is a failure.
private struct ConsoleClient {
    let baseURL: URL
    let session: String
    let urlSession: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        return URLSession(configuration: configuration)
    }()

    func get(_ path: String) async throws -> Duration {
        var request = URLRequest(url: URL(string: baseURL.absoluteString + path)!)
        request.setValue("cumulus_console=\(session)", forHTTPHeaderField: "Cookie")
        let clock = ContinuousClock()
        let start = clock.now
        let (body, response) = try await urlSession.data(for: request)
        let elapsed = clock.now - start
        guard let http = response as? HTTPURLResponse, http.statusCode == 200, !body.isEmpty else {
            throw CloudError(
                .internalError,
                reason: "the console answered \(path) with \((response as? HTTPURLResponse)?.statusCode ?? 0)")
        }
        return elapsed
    }
}
