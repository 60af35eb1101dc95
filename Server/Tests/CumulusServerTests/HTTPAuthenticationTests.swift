import Crypto
import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP authentication")
struct HTTPAuthenticationTests {
    @Test(
        "tokens: missing, malformed, wrong, another container's, no user, unknown user, good",
        arguments: TestStore.single)
    func tokenMatrix(_ store: TestStore) async throws {
        try await HTTPTestServer.with(store: store) { server in
            let other = try await server.service.addContainer(named: "iCloud.com.example.other")
            let path = server.path("users/current")
            let cases: [(query: [String: String], code: CloudError.Code, status: Int)] = [
                ([:], .authenticationFailed, 401),
                (["ckWebAuthToken": server.webAuthToken], .authenticationFailed, 401),
                (["ckAPIToken": "abc", "ckWebAuthToken": server.webAuthToken], .authenticationFailed, 401),
                (
                    ["ckAPIToken": String(repeating: "g", count: 64), "ckWebAuthToken": server.webAuthToken],
                    .authenticationFailed, 401
                ),
                (
                    ["ckAPIToken": String(repeating: "0", count: 64), "ckWebAuthToken": server.webAuthToken],
                    .authenticationFailed, 401
                ),
                (["ckAPIToken": other, "ckWebAuthToken": server.webAuthToken], .authenticationFailed, 401),
                (["ckAPIToken": server.apiToken], .authenticationRequired, 421),
                (["ckAPIToken": server.apiToken, "ckWebAuthToken": ""], .authenticationRequired, 421),
                (["ckAPIToken": server.apiToken, "ckWebAuthToken": "not-a-user"], .authenticationFailed, 401),
            ]
            for (query, code, status) in cases {
                let answer = try await server.send("GET", path, query: query)
                #expect(answer.isError(code, status: status), "\(query.keys.sorted()): \(answer.status)")
            }
            let good = try await server.send("GET", path, query: server.userQuery)
            #expect(good.status == 200)
            #expect(good.json["userRecordName"] as? String == server.userRecordName)
            let alias = try await server.send("GET", server.path("users/caller"), query: server.userQuery)
            #expect(alias.status == 200)
            #expect(alias.json["userRecordName"] as? String == server.userRecordName)
        }
    }

    @Test("a web auth token of another container is refused", arguments: TestStore.single)
    func webAuthTokenOfAnotherContainer(_ store: TestStore) async throws {
        try await HTTPTestServer.with(store: store) { server in
            let otherName = "iCloud.com.example.other"
            let otherToken = try await server.service.addContainer(named: otherName)
            let answer = try await server.send(
                "GET", server.path("users/current", container: otherName),
                query: ["ckAPIToken": otherToken, "ckWebAuthToken": server.webAuthToken])
            #expect(answer.isError(.authenticationFailed, status: 401))
        }
    }

    @Test("a good signature reaches the public database with no user", arguments: TestStore.single)
    func goodSignature(_ store: TestStore) async throws {
        try await HTTPTestServer.with(store: store) { server in
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let path = server.path("records/query", scope: "public")
            let body = Array(#"{"query":{"recordType":"Note"}}"#.utf8)
            let answer = try await server.send(
                "POST", path, body: body, headers: try Self.signature(key: key, keyID: keyID, body: body, path: path))
            #expect(answer.status == 200)
            #expect(answer.json["records"] is [Any])

            let list = server.path("zones/list", scope: "public")
            let get = try await server.send(
                "GET", list, headers: try Self.signature(key: key, keyID: keyID, body: [], path: list))
            #expect(get.status == 200)
        }
    }

    @Test(
        "bad, stale and unknown signatures are refused; keys are for the public database only",
        arguments: TestStore.single)
    func badSignatures(_ store: TestStore) async throws {
        try await HTTPTestServer.with(store: store) { server in
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let path = server.path("records/query", scope: "public")
            let body = Array(#"{"query":{"recordType":"Note"}}"#.utf8)

            let otherKey = P256.Signing.PrivateKey()
            let wrongKey = try await server.send(
                "POST", path, body: body,
                headers: try Self.signature(key: otherKey, keyID: keyID, body: body, path: path))
            #expect(wrongKey.isError(.authenticationFailed, status: 401))

            let otherBody = Array(#"{"query":{"recordType":"Other"}}"#.utf8)
            let wrongBody = try await server.send(
                "POST", path, body: otherBody,
                headers: try Self.signature(key: key, keyID: keyID, body: body, path: path))
            #expect(wrongBody.isError(.authenticationFailed, status: 401))

            let stale = try await server.send(
                "POST", path, body: body,
                headers: try Self.signature(
                    key: key, keyID: keyID, body: body, path: path, date: Date().addingTimeInterval(-600)))
            #expect(stale.isError(.authenticationFailed, status: 401))

            let future = try await server.send(
                "POST", path, body: body,
                headers: try Self.signature(
                    key: key, keyID: keyID, body: body, path: path, date: Date().addingTimeInterval(600)))
            #expect(future.isError(.authenticationFailed, status: 401))

            var garbage = try Self.signature(key: key, keyID: keyID, body: body, path: path)
            garbage["X-Apple-CloudKit-Request-SignatureV1"] = "not base64!"
            let malformed = try await server.send("POST", path, body: body, headers: garbage)
            #expect(malformed.isError(.authenticationFailed, status: 401))

            let unknown = try await server.send(
                "POST", path, body: body,
                headers: try Self.signature(key: key, keyID: "no-such-key", body: body, path: path))
            #expect(unknown.isError(.authenticationFailed, status: 401))

            let privatePath = server.path("records/query")
            let privateAnswer = try await server.send(
                "POST", privatePath, body: body,
                headers: try Self.signature(key: key, keyID: keyID, body: body, path: privatePath))
            #expect(privateAnswer.isError(.accessDenied, status: 403))

            let good = try await server.send(
                "POST", path, body: body, headers: try Self.signature(key: key, keyID: keyID, body: body, path: path))
            #expect(good.status == 200)
        }
    }

    @Test("a signed request's date is checked against the configuration's clock, not the system's")
    func signatureDateUsesTheConfiguredClock() async throws {
        // Years from the real time: a date near it passes only if this clock is read.
        let serverTime = Date(timeIntervalSince1970: 1_000_000_000)
        let configuration = ServerConfiguration(
            port: 0, signatureDateTolerance: .seconds(300), now: { serverTime }, logger: quietLogger)
        try await HTTPTestServer.with(configuration: configuration) { server in
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let path = server.path("records/query", scope: "public")
            let body = Array(#"{"query":{"recordType":"Note"}}"#.utf8)
            let cases: [(label: String, date: Date, status: Int)] = [
                ("within tolerance, behind", serverTime.addingTimeInterval(-290), 200),
                ("within tolerance, ahead", serverTime.addingTimeInterval(290), 200),
                ("outside tolerance, behind", serverTime.addingTimeInterval(-310), 401),
                ("outside tolerance, ahead", serverTime.addingTimeInterval(310), 401),
                ("the system's time", Date(), 401),
            ]
            for (label, date, status) in cases {
                let answer = try await server.send(
                    "POST", path, body: body,
                    headers: try Self.signature(key: key, keyID: keyID, body: body, path: path, date: date))
                #expect(answer.status == status, "\(label): \(answer.status)")
                if status == 401 { #expect(answer.isError(.authenticationFailed, status: 401), "\(label)") }
            }
        }
    }

    /// The three headers of a request signed with `key`, written here apart
    /// from the client's signer so that each checks the other.
    static func signature(key: P256.Signing.PrivateKey, keyID: String, body: [UInt8], path: String, date: Date = Date())
        throws -> [String: String]
    {
        let formatter = ISO8601DateFormatter()
        let dateText = formatter.string(from: date)
        let hash = Data(SHA256.hash(data: body)).base64EncodedString()
        let signature = try key.signature(for: Data("\(dateText):\(hash):\(path)".utf8))
        return [
            "X-Apple-CloudKit-Request-KeyID": keyID,
            "X-Apple-CloudKit-Request-ISO8601Date": dateText,
            "X-Apple-CloudKit-Request-SignatureV1": signature.derRepresentation.base64EncodedString(),
        ]
    }
}
