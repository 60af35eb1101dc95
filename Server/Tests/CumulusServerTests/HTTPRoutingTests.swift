import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

@Suite("HTTP routes, faults, notifications and logs")
struct HTTPRoutingTests {
    @Test("unknown paths, environments, databases and methods get error dictionaries")
    func unknownPaths() async throws {
        try await HTTPTestServer.with { server in
            let notFound = [
                server.path("records/frobnicate"),
                "/nothing",
                "/database/1/\(server.container)/development/private/records",
                "/database/2/\(server.container)/development/private/records/modify",
            ]
            for path in notFound {
                let answer = try await server.send("POST", path, query: server.userQuery, body: Array("{}".utf8))
                #expect(answer.isError(.notFound, status: 404), "\(path): \(answer.status)")
            }
            let getOfPost = try await server.send("GET", server.path("records/modify"), query: server.userQuery)
            #expect(getOfPost.isError(.notFound, status: 404))
            for path in [server.path("zones/list", environment: "staging"), server.path("zones/list", scope: "mine")] {
                let answer = try await server.send("GET", path, query: server.userQuery)
                #expect(answer.isError(.badRequest, status: 400), "\(path): \(answer.status)")
            }
            let listed = try await server.send("GET", server.path("zones/list"), query: server.userQuery)
            #expect(listed.status == 200)
            let posted = try await server.sendAsUser("zones/list", body: "{}")
            #expect(posted.status == 200)
        }
    }

    @Test("an injected fault answers the next request with its status and dictionary")
    func injectedFaults() async throws {
        let faults = ServerFaults()
        try await HTTPTestServer.with(faults: faults) { server in
            faults.inject(CloudError(.throttled, reason: "Slow down.", retryAfter: .seconds(3)))
            faults.inject(CloudError(.tryAgainLater, reason: "Busy."), count: 2)
            let throttled = try await server.sendAsUser("zones/list", method: "GET")
            #expect(throttled.isError(.throttled, status: 429))
            #expect(throttled.retryAfter == "3")
            #expect((throttled.json["retryAfter"] as? NSNumber)?.intValue == 3)
            for _ in 0..<2 {
                let busy = try await server.sendAsUser("zones/list", method: "GET")
                #expect(busy.isError(.tryAgainLater, status: 503))
            }
            #expect(faults.pendingCount == 0)
            let fine = try await server.sendAsUser("zones/list", method: "GET")
            #expect(fine.status == 200)
        }
    }

    @Test("tokens/create answers a poll address; the poll answers a batch; an unknown token is 404")
    func notifications() async throws {
        try await HTTPTestServer.with { server in
            let created = try await server.sendAsUser("tokens/create", body: #"{"apnsEnvironment":"development"}"#)
            #expect(created.status == 200)
            let token = try #require(created.json["apnsToken"] as? String)
            let address = try #require(created.json["webcourierURL"] as? String)
            #expect(address == "\(server.baseURL.absoluteString)/notifications/1/\(token)")
            #expect(created.json["apnsEnvironment"] as? String == "development")

            let poll = try await server.send("GET", "/notifications/1/\(token)", query: ["timeout": "0"])
            #expect(poll.status == 200)
            #expect(poll.json["cursor"] is String)
            #expect(poll.json["notifications"] is [Any])

            let unknown = try await server.send("GET", "/notifications/1/nope", query: ["timeout": "0"])
            #expect(unknown.isError(.notFound, status: 404))
            let badTimeout = try await server.send("GET", "/notifications/1/\(token)", query: ["timeout": "soon"])
            #expect(badTimeout.isError(.badRequest, status: 400))
        }
    }

    @Test("one log line per request with method, path, status and duration, and never a token")
    func logging() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        let secrets = try await HTTPTestServer.with(configuration: configuration) { server in
            _ = try await server.send("GET", server.path("zones/list"), query: server.userQuery)
            _ = try await server.send("GET", server.path("zones/list"), query: ["ckAPIToken": server.apiToken])
            let created = try await server.sendAsUser("tokens/create", body: "{}")
            let token = created.json["apnsToken"] as? String ?? "missing"
            _ = try await server.send("GET", "/notifications/1/\(token)", query: ["timeout": "0"])
            _ = try await server.send("POST", "/nothing", body: Array("{".utf8))
            return [server.apiToken, server.webAuthToken, token]
        }
        let all = lines.all
        let requestLines = all.filter { $0.contains("ms") && ($0.contains(" GET ") || $0.contains(" POST ")) }
        #expect(requestLines.count == 5, "\(all)")
        #expect(
            requestLines.contains {
                $0.contains("GET /database/1/iCloud.com.example.notes/development/private/zones/list 200 ")
            })
        #expect(
            requestLines.contains {
                $0.contains("GET /database/1/iCloud.com.example.notes/development/private/zones/list 421 ")
            })
        #expect(requestLines.contains { $0.contains("POST /nothing 404 ") })
        #expect(requestLines.contains { $0.contains("GET /notifications/1/… 200 ") })
        for secret in secrets {
            #expect(!all.contains { $0.contains(secret) })
        }
        #expect(!all.contains { $0.contains("ckAPIToken") || $0.contains("ckWebAuthToken") })
    }
}
