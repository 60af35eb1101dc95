import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP log lines of failed requests")
struct HTTPRequestLogTests {
    /// The log lines holding `uuid`.
    static func lines(_ lines: LogLines, holding uuid: String) -> [String] {
        lines.all.filter { $0.contains("uuid=\(uuid)") }
    }

    @Test("a refused request's line carries the serverErrorCode and the uuid its answer gives the client")
    func refusedRequests() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        let answers = try await HTTPTestServer.with(configuration: configuration) { server in
            [
                try await server.send("POST", "/nothing", body: Array("{".utf8)),
                try await server.send("GET", server.path("zones/list"), query: ["ckAPIToken": "wrong"]),
                try await server.sendAsUser("records/modify", body: "{not json"),
                try await server.sendAsUser("zones/list", method: "GET"),
            ]
        }
        #expect(answers[3].status == 200)
        for answer in answers.prefix(3) {
            let uuid = try #require(answer.json["uuid"] as? String, "\(answer.status) has no uuid")
            let code = try #require(answer.serverErrorCode)
            let logged = Self.lines(lines, holding: uuid)
            #expect(logged.count == 1, "\(lines.all)")
            #expect(logged.first?.contains("serverErrorCode=\(code)") == true, "\(logged)")
            #expect(logged.first?.contains(" \(answer.status) ") == true, "\(logged)")
        }
        // A request that succeeds carries neither.
        let fine = lines.all.filter { $0.contains("/zones/list 200 ") }
        #expect(fine.count == 1 && !fine[0].contains("uuid=") && !fine[0].contains("serverErrorCode="), "\(fine)")
    }

    @Test("a malformed head, answered below the routes, is logged with its code and uuid")
    func malformedHead() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        let answer = try await HTTPTestServer.with(configuration: configuration) { server in
            let connection = try await RawHTTPConnection.connect(port: server.port)
            try await connection.send("GET / HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n")
            let answer = try await connection.response(within: .seconds(5))
            await connection.close()
            return answer
        }
        let uuid = try #require(answer?.json["uuid"] as? String, "\(String(describing: answer))")
        let logged = Self.lines(lines, holding: uuid)
        #expect(logged.count == 1 && logged[0].contains("serverErrorCode=BAD_REQUEST"), "\(lines.all)")
    }
}
