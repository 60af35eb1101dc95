import Crypto
import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP signed request bodies")
struct HTTPSignedBodyTests {
    /// The head of a signed `records/query` of the public database.
    static func head(
        _ server: HTTPTestServer, scope: String = "public", headers: [String: String], contentLength: Int
    ) -> String {
        var text = "POST \(server.path("records/query", scope: scope)) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return text + "Content-Length: \(contentLength)\r\n\r\n"
    }

    static let query = Array(#"{"query":{"recordType":"Note"}}"#.utf8)

    @Test("an unknown key ID, a stale date or another database is answered before the body is sent")
    func refusedBeforeTheBody() async throws {
        try await HTTPTestServer.with { server in
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let path = server.path("records/query", scope: "public")
            let unknown = try HTTPAuthenticationTests.signature(
                key: key, keyID: "no-such-key", body: Self.query, path: path)
            let stale = try HTTPAuthenticationTests.signature(
                key: key, keyID: keyID, body: Self.query, path: path, date: Date().addingTimeInterval(-3600))
            let privatePath = server.path("records/query")
            let privateDatabase = try HTTPAuthenticationTests.signature(
                key: key, keyID: keyID, body: Self.query, path: privatePath)
            let cases: [(label: String, headers: [String: String], scope: String, code: CloudError.Code, status: Int)] =
                [
                    ("unknown key", unknown, "public", .authenticationFailed, 401),
                    ("stale date", stale, "public", .authenticationFailed, 401),
                    ("private database", privateDatabase, "private", .accessDenied, 403),
                ]
            for (label, headers, scope, code, status) in cases {
                let connection = try await RawHTTPConnection.connect(port: server.port)
                // Announces 15 MiB and sends none of it.
                try await connection.send(Self.head(server, scope: scope, headers: headers, contentLength: 15 << 20))
                let answer = try await connection.response(within: .seconds(5))
                #expect(answer?.isError(code, status: status) == true, "\(label): \(String(describing: answer))")
                await connection.close()
            }
        }
    }

    @Test("bodies read before their signature is checked stay within the budget; over it is 503 with Retry-After")
    func budget() async throws {
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.maximumUnauthenticatedBodies = 1
        configuration.maximumUnauthenticatedBodyBytes = 64 * 1024
        try await HTTPTestServer.with(configuration: configuration) { server in
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let path = server.path("records/query", scope: "public")
            let headers = try HTTPAuthenticationTests.signature(key: key, keyID: keyID, body: Self.query, path: path)

            // One request holds the only slot: its head is in, its body half sent.
            let holder = try await RawHTTPConnection.connect(port: server.port)
            try await holder.send(Self.head(server, headers: headers, contentLength: Self.query.count))
            try await holder.send(Array(Self.query.prefix(10)))
            try await Task.sleep(for: .milliseconds(200))

            let refused = try await server.send("POST", path, body: Self.query, headers: headers)
            #expect(refused.isError(.tryAgainLater, status: 503), "\(refused.status) \(refused.json)")
            #expect(refused.retryAfter == "1")
            #expect((refused.json["retryAfter"] as? NSNumber)?.intValue == 1)

            try await holder.send(Array(Self.query.dropFirst(10)))
            let held = try await holder.response(within: .seconds(5))
            #expect(held?.status == 200)
            await holder.close()

            let after = try await server.send("POST", path, body: Self.query, headers: headers)
            #expect(after.status == 200)

            // More than the whole budget can never be read before the signature is checked.
            let large = [UInt8](repeating: 0x20, count: 100 * 1024)
            let tooLarge = try await server.send(
                "POST", path, body: large,
                headers: try HTTPAuthenticationTests.signature(key: key, keyID: keyID, body: large, path: path))
            #expect(tooLarge.isError(.badRequest, status: 413), "\(tooLarge.status)")
        }
    }
}
