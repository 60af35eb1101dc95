import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP timeouts")
struct HTTPTimeoutTests {
    /// Short timeouts, so that a slow client is cut within a second.
    static func configuration(
        head: Duration = .seconds(10), body: Duration = .seconds(10), idle: Duration = .seconds(10),
        lines: LogLines? = nil
    ) -> ServerConfiguration {
        var configuration = ServerConfiguration(port: 0, logger: lines?.logger() ?? quietLogger)
        configuration.requestHeadTimeout = head
        configuration.requestBodyTimeout = body
        configuration.idleConnectionTimeout = idle
        return configuration
    }

    @Test("a head sent one byte every 100 ms is answered 408 and closed at the head timeout")
    func slowHead() async throws {
        let lines = LogLines()
        try await HTTPTestServer.with(configuration: Self.configuration(head: .milliseconds(500), lines: lines)) {
            server in
            let connection = try await RawHTTPConnection.connect(port: server.port)
            let head = "GET \(server.path("zones/list"))?ckAPIToken=\(server.apiToken) HTTP/1.1\r\nHost: x\r\n\r\n"
            let start = ContinuousClock.now
            let sent = try await connection.trickle(head, every: .milliseconds(100))
            #expect(sent < head.utf8.count, "the whole head went out")
            #expect(ContinuousClock.now - start < .seconds(3))
            let answer = try await connection.response(within: .seconds(1))
            #expect(answer?.isError(.badRequest, status: 408) == true, "\(String(describing: answer))")
            #expect(try await connection.waitForClose(within: .seconds(2)))
            await connection.close()
        }
        #expect(!lines.all.contains { $0.hasPrefix("error") }, "\(lines.all)")
    }

    @Test("a body sent one byte every 100 ms is answered 408 and closed at the body timeout, and changes nothing")
    func slowBody() async throws {
        try await HTTPTestServer.with(configuration: Self.configuration(body: .milliseconds(500))) { server in
            let body = HTTPRequestBodyTests.modify([HTTPRequestBodyTests.create("n1")])
            let connection = try await RawHTTPConnection.connect(port: server.port)
            let target =
                server.path("records/modify") + "?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.webAuthToken)"
            try await connection.send(
                "POST \(target) HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
            let start = ContinuousClock.now
            let sent = try await connection.trickle(body, every: .milliseconds(100))
            #expect(sent < body.utf8.count, "the whole body went out")
            #expect(ContinuousClock.now - start < .seconds(3))
            let answer = try await connection.response(within: .seconds(1))
            #expect(answer?.isError(.badRequest, status: 408) == true, "\(String(describing: answer))")
            #expect(try await connection.waitForClose(within: .seconds(2)))
            await connection.close()
            #expect(try await HTTPRequestBodyTests.storedNames(server).isEmpty)
        }
    }

    @Test("a connection with no request is closed at the idle timeout, with none and after one")
    func idle() async throws {
        // The idle limit leaves the requests below a second and more of slack, which a
        // full parallel run on two cores needs; a shorter one closed a connection in use.
        try await HTTPTestServer.with(configuration: Self.configuration(idle: .milliseconds(1500))) { server in
            let silent = try await RawHTTPConnection.connect(port: server.port)
            #expect(try await silent.waitForClose(within: .seconds(10)))
            await silent.close()

            let used = try await RawHTTPConnection.connect(port: server.port)
            for _ in 0..<3 {
                // Each request within the timeout of the last answer keeps the connection.
                try await Task.sleep(for: .milliseconds(250))
                try await used.send(
                    "GET \(server.path("zones/list"))?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.webAuthToken) HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                let answer = try await used.response(within: .seconds(2))
                #expect(answer?.status == 200)
            }
            let answered = ContinuousClock.now
            // Generous: on a loaded machine the event loop's timer fires late; what counts is that it fires.
            #expect(try await used.waitForClose(within: .seconds(10)))
            #expect(ContinuousClock.now - answered >= .milliseconds(1400))
            await used.close()
        }
    }

    @Test("a notification poll that waits longer than every timeout is answered, then the connection idles out")
    func longPoll() async throws {
        let configuration = Self.configuration(
            head: .milliseconds(300), body: .milliseconds(300), idle: .milliseconds(300))
        try await HTTPTestServer.with(configuration: configuration) { server in
            let created = try await server.sendAsUser("tokens/create", body: "{}")
            let token = try #require(created.json["apnsToken"] as? String)
            let connection = try await RawHTTPConnection.connect(port: server.port)
            let start = ContinuousClock.now
            try await connection.send("GET /notifications/1/\(token)?timeout=1.5 HTTP/1.1\r\nHost: x\r\n\r\n")
            let answer = try await connection.response(within: .seconds(5))
            #expect(answer?.status == 200, "\(String(describing: answer)) \(connection.unread)")
            #expect(ContinuousClock.now - start >= .milliseconds(1400))
            #expect(try await connection.waitForClose(within: .seconds(10)))
            await connection.close()
        }
    }
}
