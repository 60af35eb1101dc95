import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP malformed requests")
struct HTTPMalformedRequestTests {
    /// The head of a request whose body the route reads: the user's, or
    /// one signed with an unknown key, which is answered before its body.
    static func head(_ server: HTTPTestServer, signed: Bool, encoding: String) -> String {
        let target: String
        let credentials: String
        if signed {
            target = server.path("records/query", scope: "public")
            credentials = "X-Apple-CloudKit-Request-KeyID: anything\r\n"
        } else {
            target =
                server.path("records/modify") + "?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.webAuthToken)"
            credentials = ""
        }
        return "POST \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(credentials)Transfer-Encoding: \(encoding)\r\n\r\n"
    }

    static let malformedBodies: [(label: String, encoding: String, body: String)] = [
        ("a chunk size that is not hexadecimal", "chunked", "zz\r\nabc\r\n0\r\n\r\n"),
        ("a chunk size too large for 64 bits", "chunked", "ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n"),
        ("junk after the chunk size", "chunked", "3 junk\r\nabc\r\n0\r\n\r\n"),
        ("bare LF line endings", "chunked", "3\nabc\n0\n\n"),
        ("an unknown transfer coding", "xchunked", "3\r\nabc\r\n0\r\n\r\n"),
    ]

    @Test("a malformed chunked body is a 400 BAD_REQUEST dictionary, closes the connection and logs no error")
    func malformedBodies() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        try await HTTPTestServer.with(configuration: configuration) { server in
            for (label, encoding, body) in Self.malformedBodies {
                let connection = try await RawHTTPConnection.connect(port: server.port)
                try await connection.send(Self.head(server, signed: false, encoding: encoding) + body)
                let answer = try await connection.response(within: .seconds(5))
                #expect(answer?.isError(.badRequest, status: 400) == true, "\(label): \(String(describing: answer))")
                #expect(answer?.headers["connection"] == "close", "\(label)")
                #expect(try await connection.waitForClose(within: .seconds(5)), "\(label): the connection stays open")
                #expect(connection.unread.isEmpty, "\(label): more after the answer: \(connection.unread)")
                await connection.close()
            }
            let fine = try await server.sendAsUser("zones/list", method: "GET")
            #expect(fine.status == 200)
        }
        #expect(!lines.all.contains { $0.hasPrefix("error") || $0.hasPrefix("critical") }, "\(lines.all)")
        #expect(lines.all.filter { $0.contains("/records/modify 400 ") }.count == Self.malformedBodies.count)
    }

    @Test("a stranger's signed request with a malformed body is refused before its body, with no error logged")
    func strangersMalformedBodies() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        try await HTTPTestServer.with(configuration: configuration) { server in
            for (label, encoding, body) in Self.malformedBodies {
                let connection = try await RawHTTPConnection.connect(port: server.port)
                try await connection.send(Self.head(server, signed: true, encoding: encoding) + body)
                let answer = try await connection.response(within: .seconds(5))
                #expect(
                    answer?.isError(.authenticationFailed, status: 401) == true,
                    "\(label): \(String(describing: answer))")
                #expect(try await connection.waitForClose(within: .seconds(5)), "\(label): the connection stays open")
                #expect(connection.unread.isEmpty, "\(label): more after the answer: \(connection.unread)")
                await connection.close()
            }
        }
        #expect(!lines.all.contains { $0.hasPrefix("error") || $0.hasPrefix("critical") }, "\(lines.all)")
    }

    @Test("a malformed head is answered 400 with a BAD_REQUEST dictionary and the connection closed")
    func malformedHead() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        try await HTTPTestServer.with(configuration: configuration) { server in
            let heads = [
                "GET / HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
                "GET / HTTP/9.9.9\r\nHost: x\r\n\r\n",
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            ]
            for head in heads {
                let connection = try await RawHTTPConnection.connect(port: server.port)
                try await connection.send(head)
                let answer = try await connection.response(within: .seconds(5))
                #expect(answer?.isError(.badRequest, status: 400) == true, "\(head): \(String(describing: answer))")
                #expect(try await connection.waitForClose(within: .seconds(5)), "\(head)")
                await connection.close()
            }
        }
        #expect(!lines.all.contains { $0.hasPrefix("error") || $0.hasPrefix("critical") }, "\(lines.all)")
    }
}
