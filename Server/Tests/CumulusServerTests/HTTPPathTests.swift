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

@Suite("HTTP credential paths in the log")
struct HTTPCredentialPathLogTests {
    @Test("odd spellings of share, download and upload paths never log their secret; a file name may hold slashes")
    func oddSpellings() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        let guid = "s3cretShortGUID"
        let secrets = try await HTTPTestServer.with(configuration: configuration) { server in
            let alice = RemoteCloudDatabase(
                configuration: RemoteCloudDatabase.Configuration(
                    baseURL: server.baseURL, container: server.container, scope: .private),
                credentials: .user(apiToken: server.apiToken, webAuthToken: server.webAuthToken))
            let bytes: [UInt8] = [7, 8, 9]
            let saved = try await AssetHTTP.savePhoto("photo", bytes: bytes, in: alice, on: server.baseURL)
            let url = try #require(AssetHTTP.downloadURL(of: saved))
            let token = try #require(url.components(separatedBy: "/download/").last?.components(separatedBy: "/").first)
            let signature = try #require(token.split(separator: ".").last.map(String.init))

            // A `${f}` file name that holds a slash is served, as any name is.
            let slashed = try await AssetHTTP.download(url, on: server.baseURL, fileName: "photos/beach.jpg")
            #expect(slashed.status == 200 && slashed.body == bytes, "\(slashed.status)")

            let odd = [
                "/share/\(guid)/", "/share/./\(guid)", "/share/%2E/\(guid)", "/share%2F\(guid)", "/SHARE/\(guid)/x",
                "/x/share/\(guid)", "/share//\(guid)", "/share%ZZ/\(guid)", "/%73hare/\(guid)",
                "/assets/1/download/\(token)/../x", "/assets/1/download/./\(token)/x",
                "/assets/1/download%2F\(token)/x",
                "/assets/1/download/\(token)", "/assets/1/download/\(token)/", "/assets/1/upload/\(guid)/more",
                "/assets/1/download/%2E%2E/download/\(token)/x",
            ]
            let connection = try await RawHTTPConnection.connect(port: server.port)
            for path in odd {
                try await connection.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
                let answer = try await connection.response(within: .seconds(5))
                #expect(answer != nil, "\(path)")
            }
            await connection.close()
            return [guid, token, signature]
        }
        let all = lines.all
        for secret in secrets {
            #expect(!all.contains { $0.contains(secret) }, "\(all.filter { $0.contains(secret) })")
        }
        #expect(all.contains { $0.contains("GET /assets/1/download/…/photos/beach.jpg 200 ") }, "\(all)")
        #expect(all.contains { $0.contains("GET /share/…/ 404 ") }, "\(all)")
    }
}
