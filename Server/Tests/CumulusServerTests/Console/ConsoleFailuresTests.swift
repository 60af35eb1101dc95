import AsyncHTTPClient
import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("Console failures, assets and TLS")
struct ConsoleFailuresTests {
    @Test("a failed protocol request is listed with its uuid, operation, user and error, and found by uuid")
    func failuresListed() async throws {
        try await ConsoleTestServer.with { server in
            let alice = try await server.server.user("alice")
            let path = "/database/1/\(server.container)/development/private/records/changes"
            let query = "?ckAPIToken=\(server.server.apiToken)&ckWebAuthToken=\(ConsoleTestServer.encoded(alice.token))"
            var request = HTTPClientRequest(url: server.baseURL + path + query)
            request.method = .POST
            request.body = .bytes(
                .init(string: #"{"zoneID":{"zoneName":"<i>nope</i>"}}"#))
            let failed = try await server.client.execute(request, timeout: .seconds(30))
            let body = try await failed.body.collect(upTo: 1 << 20)
            let answer = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
            let uuid = try #require(answer?["uuid"] as? String)

            let session = try await server.signIn()
            let list = try await server.get("/console/failures", session: session)
            #expect(list.body.contains(uuid))
            #expect(list.body.contains("records/changes") && list.body.contains(alice.recordName))
            #expect(!list.body.contains(alice.token), "the logged path leaves the token out")
            let found = try await server.get("/console/failures?uuid=\(uuid.lowercased())", session: session)
            #expect(found.body.contains(uuid) && found.body.contains("ZONE_NOT_FOUND"))
            #expect(!found.body.contains("<i>nope"))
            let none = try await server.get("/console/failures?uuid=00000000-0000", session: session)
            #expect(!none.body.contains(uuid))
        }
    }

    @Test("the ring keeps the newest failures up to its capacity, newest first")
    func ringBound() {
        let ring = RecentFailures(capacity: 3)
        for index in 0..<5 {
            ring.record(
                RecordedFailure(
                    uuid: "u\(index)", date: Date(), request: "POST /x", operation: nil, user: nil, status: 400,
                    code: "BAD_REQUEST", reason: "r"))
        }
        #expect(ring.all.map(\.uuid) == ["u4", "u3", "u2"])
        #expect(ring.failure(uuid: "U3")?.uuid == "u3" && ring.failure(uuid: "u1") == nil)
    }

    @Test("an asset downloads through the console, as the user looked as")
    func assetDownload() async throws {
        try await ConsoleTestServer.with { server in
            // Printable bytes, so that the answer read as text is the bytes themselves.
            let bytes = (0..<5000).map { UInt8(32 + $0 % 90) }
            let database = try await server.server.database(signedInAs: "alice")
            let files = ZoneID(zoneName: "Files")
            _ = try await database.modifyZones([.create(files)])
            let target = try #require(
                try await database.requestAssetUploads(
                    [AssetUploadRequest(recordName: "f1", recordType: "File", fieldName: "data")], zoneID: files
                ).first)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                "console-asset-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(bytes).write(to: file)
            let asset = try await database.uploadAsset(contentsOf: file, to: target)
            let record = Record(recordType: "File", recordName: "f1", zoneID: files, fields: ["data": .asset(asset)])
            let saved = try await database.modifyRecords(
                [RecordOperation(.create, record)], zoneID: files, atomic: true)
            #expect(saved.first?.error == nil)

            let session = try await server.signIn()
            let zone = try await server.zoneParameters(user: "alice", zone: "Files") + [("record", "f1")]
            let page = try await server.get(ConsoleTestServer.link("/console/record", zone), session: session)
            #expect(page.body.contains("5000 bytes") && page.body.contains(">Download<"))
            let download = try await server.get(
                ConsoleTestServer.link("/console/asset", zone + [("field", "data")]), session: session)
            #expect(download.status == 200 && download.body == String(decoding: bytes, as: UTF8.self))
            #expect(download.headers["Content-Security-Policy"].first?.hasPrefix("default-src 'none'") == true)
            // Bob's requests do not reach Alice's zone: neither does the console acting as Bob.
            let bob = try await server.server.user("bob").recordName
            let asBob = zone.map { $0.0 == "user" ? ("user", bob) : $0 } + [("field", "data")]
            let refused = try await server.get(ConsoleTestServer.link("/console/asset", asBob), session: session)
            #expect(refused.status == 404)
            #expect(
                try await server.get(ConsoleTestServer.link("/console/asset", zone + [("field", "data")])).status == 303
            )
        }
    }

    @Test("under TLS the session cookie is Secure")
    func secureCookieUnderTLS() async throws {
        var configuration = try HTTPTLSTests.tlsConfiguration()
        configuration.console = ConsoleConfiguration()
        try await HTTPTestServer.with(configuration: configuration) { server in
            let service = try #require(server.service as? CloudService)
            let token = try await service.addConsoleToken(label: "tls").token
            let form = "token=\(token)"
            let answer = try #require(
                try await TLSClient.send(
                    "POST /console/sign-in HTTP/1.1\r\nHost: localhost:\(server.port)\r\n"
                        + "Content-Type: application/x-www-form-urlencoded\r\n"
                        + "Content-Length: \(form.utf8.count)\r\n\r\n\(form)", port: server.port))
            #expect(answer.status == 303)
            let cookie = try #require(answer.headers["set-cookie"])
            let attributes = Set(cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(attributes.isSuperset(of: ["Secure", "HttpOnly", "SameSite=Strict", "Path=/console"]))
        }
    }
}
