import Cumulus
import Foundation
import Prometheus
import Testing

@testable import CumulusServer

/// `/healthz`, `/readyz` and `/metrics`: who may ask, what they answer, and
/// that the metrics move with real requests.
@Suite("HTTP health, readiness and metrics")
struct HTTPObservabilityTests {
    static let token = "metrics-token-0123456789abcdef"

    static func create(_ name: String) -> String {
        #"{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Note","fields":{"title":{"value":"\#(name)"}}}}"#
    }

    @Test("/healthz and /readyz answer 200 to anyone; other spellings and methods 404", arguments: TestStore.single)
    func probes(store: TestStore) async throws {
        try await HTTPTestServer.with(store: store) { server in
            let health = try await server.send("GET", "/healthz")
            #expect(health.status == 200 && health.json["status"] as? String == "ok")
            let ready = try await server.send("GET", "/readyz")
            #expect(ready.status == 200 && ready.json["status"] as? String == "ready", "\(ready.json)")
            #expect(ready.contentType == "application/json")
            for path in ["/healthz/", "//readyz", "/healthz/x"] {
                #expect(try await server.send("GET", path).status == 404, "\(path)")
            }
            #expect(try await server.send("POST", "/readyz").status == 404)
        }
    }

    @Test("/metrics is off by default: 404, whatever the request carries")
    func offByDefault() async throws {
        try await HTTPTestServer.with { server in
            #expect(try await server.send("GET", "/metrics").isError(.notFound, status: 404))
            let withToken = try await server.send(
                "GET", "/metrics", headers: ["Authorization": "Bearer \(Self.token)"])
            #expect(withToken.isError(.notFound, status: 404))
        }
    }

    @Test("/metrics on the server's listener answers only its bearer token, and tells nothing otherwise")
    func bearerToken() async throws {
        let configuration = metricsConfiguration { .bearerToken(Self.token, registry: $0) }
        try await HTTPTestServer.with(configuration: configuration) { server in
            let refused: [[String: String]] = [
                [:], ["Authorization": "Bearer wrong-token-0123456789abcdef"], ["Authorization": "Bearer "],
                ["Authorization": "Bearer \(Self.token)x"], ["Authorization": Self.token],
                ["Authorization": "Basic \(Data("user:\(Self.token)".utf8).base64EncodedString())"],
            ]
            for headers in refused {
                let answer = try await server.send("GET", "/metrics", headers: headers)
                #expect(answer.status == 401, "\(headers)")
                let text = String(decoding: answer.body, as: UTF8.self)
                #expect(!text.contains("cumulus") && !text.contains(Self.token))
            }
            // The token goes in the header, never in the query.
            #expect(try await server.send("GET", "/metrics", query: ["token": Self.token]).status == 401)
            for scheme in ["Bearer", "bearer", "BEARER"] {
                let answer = try await server.send(
                    "GET", "/metrics", headers: ["Authorization": "\(scheme) \(Self.token)"])
                #expect(answer.status == 200, "\(scheme)")
                #expect(answer.contentType?.hasPrefix("text/plain") == true)
            }
            let scrape = try await server.scrape(token: Self.token)
            #expect(scrape.value("cumulus_http_requests_total", ["operation": "/metrics", "status": "401"]) == 7)
        }
        let endpoint = try #require(configuration.metrics.endpoint)
        #expect(!String(describing: endpoint).contains(Self.token))
        #expect(!String(reflecting: configuration).contains(Self.token))
    }

    @Test("/metrics on a listener of its own: the main listener answers it 404; a token there is asked too")
    func ownListener() async throws {
        for token in [nil, Self.token] {
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let listener = MetricsEndpoint.Listener(host: "127.0.0.1", port: 0) { continuation.yield($0) }
            let configuration = metricsConfiguration { .ownListener(listener, token: token, registry: $0) }
            try await HTTPTestServer.with(configuration: configuration) { server in
                var iterator = ports.makeAsyncIterator()
                let port = try #require(await iterator.next())
                let metricsServer = HTTPTestServer(
                    baseURL: URL(string: "http://127.0.0.1:\(port)")!, service: server.service, container: "",
                    apiToken: "", webAuthToken: "", userRecordName: "")
                let authorization = ["Authorization": "Bearer \(Self.token)"]
                #expect(try await server.send("GET", "/metrics", headers: authorization).status == 404)
                #expect(try await server.sendAsUser("zones/list", method: "GET").status == 200)
                let scraped = try await metricsServer.send(
                    "GET", "/metrics", headers: token == nil ? [:] : authorization)
                #expect(scraped.status == 200)
                let scrape = Scrape(text: String(decoding: scraped.body, as: UTF8.self))
                #expect(scrape.value("cumulus_http_requests_total", ["operation": "zones/list", "status": "200"]) == 1)
                if token != nil {
                    #expect(try await metricsServer.send("GET", "/metrics").status == 401)
                }
                #expect(try await metricsServer.send("GET", "/healthz").status == 200)
                #expect(try await metricsServer.send("GET", "/readyz").status == 200)
                // The protocol's paths are not served there.
                let database = try await metricsServer.send("GET", server.path("zones/list"), query: server.userQuery)
                #expect(database.status == 404)
            }
        }
    }

    @Test("requests, records read and written, and open channels move the metrics", arguments: TestStore.single)
    func counts(store: TestStore) async throws {
        let configuration = metricsConfiguration { .bearerToken(Self.token, registry: $0) }
        try await HTTPTestServer.with(store: store, configuration: configuration) { server in
            let zone = #"{"zoneName":"Notes"}"#
            _ = try await server.sendAsUser(
                "zones/modify", body: #"{"operations":[{"operationType":"create","zone":{"zoneID":\#(zone)}}]}"#)
            let saved = try await server.sendAsUser(
                "records/modify", body: #"{"zoneID":\#(zone),"operations":[\#(Self.create("a")),\#(Self.create("b"))]}"#
            )
            #expect(saved.status == 200)
            // A record that exists already: a failed result, not a write.
            let again = try await server.sendAsUser(
                "records/modify", body: #"{"zoneID":\#(zone),"operations":[\#(Self.create("a"))]}"#)
            #expect(again.status == 200)
            let lookup = try await server.sendAsUser(
                "records/lookup",
                body: #"{"zoneID":\#(zone),"records":[{"recordName":"a"},{"recordName":"b"},{"recordName":"none"}]}"#)
            #expect(lookup.status == 200)
            let query = try await server.sendAsUser(
                "records/query", body: #"{"zoneID":\#(zone),"query":{"recordType":"Note"}}"#)
            #expect(query.status == 200)
            let changes = try await server.sendAsUser("records/changes", body: #"{"zoneID":\#(zone)}"#)
            #expect(changes.status == 200)
            let zoneChanges = try await server.sendAsUser("changes/zone", body: #"{"zones":[{"zoneID":\#(zone)}]}"#)
            #expect(zoneChanges.status == 200)
            let created = try await server.sendAsUser("tokens/create", body: #"{"apnsEnvironment":"development"}"#)
            let channel = try #require(created.json["apnsToken"] as? String)
            #expect(try await server.send("GET", "/nothing/\(channel)").status == 404)
            #expect(try await server.send("GET", "/notifications/1/\(channel)", query: ["timeout": "0"]).status == 200)
            let unauthenticated = try await server.send("POST", server.path("records/lookup"), body: Array("{}".utf8))
            #expect(unauthenticated.status >= 400)

            let scrape = try await server.scrape(token: Self.token)
            #expect(scrape.value("cumulus_records_written_total") == 2)
            // Two looked up, two by the query, two in each page of changes.
            #expect(scrape.value("cumulus_records_read_total") == 8)
            #expect(scrape.value("cumulus_http_requests_total", ["operation": "records/modify", "status": "200"]) == 2)
            #expect(scrape.value("cumulus_http_requests_total", ["operation": "unmatched", "status": "404"]) == 1)
            #expect(
                scrape.value(
                    "cumulus_http_requests_total", ["operation": "/notifications/1/{token}", "status": "200"]) == 1)
            let refused = String(unauthenticated.status)
            #expect(
                scrape.value("cumulus_http_requests_total", ["operation": "records/lookup", "status": refused]) == 1)
            #expect(scrape.value("cumulus_http_request_duration_seconds_count", ["operation": "records/modify"]) == 2)
            #expect(scrape.value("cumulus_notification_channels_open") == 1)
            #expect(scrape.value("cumulus_notification_polls_waiting") == 0)
            #expect(scrape.value("cumulus_storage_errors_total", ["kind": "other"]) == 0)
            // Labels never carry a path as sent, a name or a token.
            for secret in [server.container, server.apiToken, server.webAuthToken, channel, "Notes", "nothing"] {
                #expect(!scrape.text.contains(secret), "\(secret)")
            }
        }
    }

    @Test("the gauge of polls waiting counts a notification poll while it waits")
    func pollsWaiting() async throws {
        let configuration = metricsConfiguration { .bearerToken(Self.token, registry: $0) }
        try await HTTPTestServer.with(configuration: configuration) { server in
            let created = try await server.sendAsUser("tokens/create", body: #"{"apnsEnvironment":"development"}"#)
            let channel = try #require(created.json["apnsToken"] as? String)
            let poll = Task { try await server.send("GET", "/notifications/1/\(channel)", query: ["timeout": "20"]) }
            let waiting = try await server.scrape(token: Self.token) {
                $0.value("cumulus_notification_polls_waiting") == 1
            }
            #expect(waiting.value("cumulus_notification_polls_waiting") == 1)
            // A write to the channel's database wakes the poll.
            let zone = #"{"zoneName":"Notes"}"#
            _ = try await server.sendAsUser(
                "zones/modify", body: #"{"operations":[{"operationType":"create","zone":{"zoneID":\#(zone)}}]}"#)
            #expect(try await poll.value.status == 200)
            let done = try await server.scrape(token: Self.token) {
                $0.value("cumulus_notification_polls_waiting") == 0
            }
            #expect(done.value("cumulus_notification_polls_waiting") == 0)
        }
    }

    @Test(
        "/readyz answers 503 when the storage's schema is newer or older than the server's", arguments: TestStore.single
    )
    func schemaMismatch(store: TestStore) async throws {
        try await HTTPTestServer.with(store: store) { server in
            let storage = try #require((server.service as? CloudService)?.storage)
            #expect(try await server.send("GET", "/readyz").status == 200)
            try await Self.setStoredSchemaVersion(of: storage, offset: 1)
            let newer = try await server.readyz(until: 503)
            #expect(newer.status == 503 && newer.json["status"] as? String == "not ready")
            #expect((newer.json["reason"] as? String)?.contains("newer") == true, "\(newer.json)")
            try await Self.setStoredSchemaVersion(of: storage, offset: -1)
            let older = try await server.readyz { ($0.json["reason"] as? String)?.contains("older") == true }
            #expect(older.status == 503)
            #expect((older.json["reason"] as? String)?.contains("older") == true, "\(older.json)")
            try await Self.setStoredSchemaVersion(of: storage, offset: 0)
            #expect(try await server.readyz(until: 200).status == 200)
            // /healthz never looked at storage.
            #expect(try await server.send("GET", "/healthz").status == 200)
        }
    }

    /// Makes the store hold the server's schema version plus `offset`, as
    /// a newer server (or an older copy of the database) would.
    static func setStoredSchemaVersion(of storage: any ServerStorage, offset: Int) async throws {
        if let storage = storage as? SQLiteStorage {
            try await storage.write { transaction in
                let statements = try #require(transaction as? SQLiteTransaction)
                try await statements.query("PRAGMA user_version = \(SQLiteSchema.version + offset)")
            }
        } else {
            try await storage.write { transaction in
                let statements = try #require(transaction as? PostgresTransaction)
                let version = PostgresSchema.version
                try await statements.query("DELETE FROM cumulus_schema WHERE version >= \(version)")
                guard offset >= 0 else { return }
                for step in version...(version + offset) {
                    try await statements.query("INSERT INTO cumulus_schema (version) VALUES (\(step))")
                }
            }
        }
    }

    @Test("/readyz answers 503 once the storage is closed, and /healthz still 200; the failures are counted")
    func closedStorage() async throws {
        let configuration = metricsConfiguration { .bearerToken(Self.token, registry: $0) }
        try await HTTPTestServer.with(configuration: configuration) { server in
            #expect(try await server.send("GET", "/readyz").status == 200)
            let storage = try #require((server.service as? CloudService)?.storage)
            try await storage.close()
            let answer = try await server.readyz(until: 503)
            #expect(answer.status == 503)
            #expect(answer.json["reason"] as? String == "the storage cannot be read")
            #expect(try await server.send("GET", "/healthz").status == 200)
            let scrape = try await server.scrape(token: Self.token)
            #expect((scrape.value("cumulus_storage_errors_total", ["kind": "other"]) ?? 0) >= 1)
            #expect(scrape.value("cumulus_storage_errors_total", ["kind": "unavailable"]) == 0)
        }
    }
}
