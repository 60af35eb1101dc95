import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP versions and keep-alive")
struct HTTPVersionTests {
    static func zonesList(_ server: HTTPTestServer, version: String, headers: String = "") -> String {
        let query = "ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.webAuthToken)"
        return "GET \(server.path("zones/list"))?\(query) HTTP/\(version)\r\nHost: x\r\n\(headers)\r\n"
    }

    @Test("an HTTP/1.0 request without keep-alive is answered in HTTP/1.0 and the connection closed")
    func http10Closes() async throws {
        try await HTTPTestServer.with { server in
            let connection = try await RawHTTPConnection.connect(port: server.port)
            try await connection.send(Self.zonesList(server, version: "1.0"))
            let answer = try await connection.response(within: .seconds(5))
            #expect(answer?.status == 200)
            #expect(answer?.version == "HTTP/1.0")
            #expect(answer?.headers["connection"] == "close")
            #expect(answer?.json["zones"] is [Any])
            #expect(try await connection.waitForClose(within: .seconds(2)))
            await connection.close()
        }
    }

    @Test("an HTTP/1.0 request with keep-alive is answered in HTTP/1.0 and the connection kept")
    func http10KeepAlive() async throws {
        try await HTTPTestServer.with { server in
            let connection = try await RawHTTPConnection.connect(port: server.port)
            for _ in 0..<2 {
                try await connection.send(Self.zonesList(server, version: "1.0", headers: "Connection: keep-alive\r\n"))
                let answer = try await connection.response(within: .seconds(5))
                #expect(answer?.status == 200)
                #expect(answer?.version == "HTTP/1.0")
                #expect(answer?.headers["connection"]?.lowercased() == "keep-alive")
            }
            #expect(!connection.isClosed)
            await connection.close()
        }
    }

    @Test("an HTTP/1.1 request with Connection: close is answered, then the connection closed")
    func http11Close() async throws {
        try await HTTPTestServer.with { server in
            let connection = try await RawHTTPConnection.connect(port: server.port)
            try await connection.send(Self.zonesList(server, version: "1.1", headers: "Connection: close\r\n"))
            let answer = try await connection.response(within: .seconds(5))
            #expect(answer?.status == 200)
            #expect(answer?.version == "HTTP/1.1")
            #expect(answer?.headers["connection"] == "close")
            #expect(try await connection.waitForClose(within: .seconds(2)))
            await connection.close()
        }
    }
}
