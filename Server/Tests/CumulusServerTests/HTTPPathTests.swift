import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP path shapes and the log")
struct HTTPPathTests {
    @Test("paths with an empty segment are 404 on every route, and no token reaches the log")
    func emptySegments() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        let secrets = try await HTTPTestServer.with(configuration: configuration) { server in
            let created = try await server.sendAsUser("tokens/create", body: "{}")
            let token = try #require(created.json["apnsToken"] as? String)
            let query = "?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.webAuthToken)&timeout=0"
            let list = server.path("zones/list")
            let odd = [
                "//notifications/1/\(token)", "/notifications//1/\(token)", "///notifications/1/\(token)",
                "/notifications/1//\(token)", "/notifications/1/\(token)/", "/\(list)", list + "/",
                list.replacingOccurrences(of: "/development/", with: "//development/"),
            ]
            let unrouted = [
                "/notifications/1/\(token)/more", "/notifications/2/\(token)", "/NOTIFICATIONS/1/\(token)",
                "/%6Eotifications/1/\(token)", "/anything/\(token)",
            ]
            let connection = try await RawHTTPConnection.connect(port: server.port)
            for path in odd + unrouted {
                try await connection.send("GET \(path)\(query) HTTP/1.1\r\nHost: x\r\n\r\n")
                let answer = try await connection.response(within: .seconds(5))
                #expect(answer?.isError(.notFound, status: 404) == true, "\(path): \(String(describing: answer))")
            }
            for path in ["/notifications/1/\(token)", list] {
                try await connection.send("GET \(path)\(query) HTTP/1.1\r\nHost: x\r\n\r\n")
                let answer = try await connection.response(within: .seconds(5))
                #expect(answer?.status == 200, "\(path)")
            }
            await connection.close()
            return [token, server.apiToken, server.webAuthToken]
        }
        let all = lines.all
        for secret in secrets {
            #expect(!all.contains { $0.contains(secret) }, "\(all.filter { $0.contains(secret) })")
        }
        #expect(all.contains { $0.contains("GET //notifications/…/… 404 ") }, "\(all)")
        #expect(all.contains { $0.contains("GET /notifications/1/… 200 ") }, "\(all)")
        #expect(all.contains { $0.contains("GET /anything/… 404 ") }, "\(all)")
    }
}
