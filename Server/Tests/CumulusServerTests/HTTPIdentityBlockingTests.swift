import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

/// `CloudService.blockIdentity` (`cumulus user block`): an issuer's
/// subject kept out at once, its data kept, and let in again.
@Suite("HTTP blocked identities", .serialized)
struct HTTPIdentityBlockingTests {
    static let key = HTTPIdentityTokenTests.ec

    static func create(_ name: String) -> String {
        #"{"operations":[{"operationType":"create","record":{"recordName":"\#(name)","recordType":"Note"}}]}"#
    }

    @Test(
        "a blocked subject's tokens, cached or fresh, and its user's web auth tokens answer 403; unblocked, it is back",
        arguments: TestStore.single)
    func blocking(_ store: TestStore) async throws {
        try await HTTPIdentityTokenTests.withIssuer(store: store) { server, service in
            let token = try await Self.key.sign(TestClaims(sub: "mallory"))
            let mallory = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(token)))
            // Twice: the second is answered from the authentication cache.
            #expect(try await server.sendBearer(token).status == 200)
            #expect(
                try await server.sendBearer(token, "records/modify", method: "POST", body: Self.create("kept")).status
                    == 200)
            let device = try await service.addWebAuthToken(forUser: mallory, container: server.container, lifetime: nil)
            let webQuery = ["ckAPIToken": server.apiToken, "ckWebAuthToken": device.webAuthToken]
            #expect(try await server.send("GET", server.path("users/current"), query: webQuery).status == 200)

            let blocked = try await service.blockIdentity(
                issuer: TestIssuer.defaultIssuer, subject: "mallory", container: server.container)
            #expect(blocked.userRecordName == mallory && !blocked.wasBlocked)
            let fresh = try await Self.key.sign(TestClaims(sub: "mallory", exp: Date().addingTimeInterval(900)))
            for answer in [try await server.sendBearer(token), try await server.sendBearer(fresh)] {
                #expect(answer.isError(.accessDenied, status: 403), "\(answer.status)")
                #expect(answer.reason?.contains("blocked") == true, "\(answer.reason ?? "")")
            }
            let web = try await server.send("GET", server.path("users/current"), query: webQuery)
            #expect(web.isError(.accessDenied, status: 403), "\(web.status)")
            #expect(
                try await service.isIdentityBlocked(
                    issuer: TestIssuer.defaultIssuer, subject: "mallory", container: server.container))
            #expect(try await service.rules.isUserBlocked(mallory, container: server.container))
            #expect(try await !service.rules.isUserBlocked(server.userRecordName, container: server.container))

            // A stranger learns nothing: a token the issuer did not sign is refused as any bad token.
            let forged = try await TestSigningKey.sharedRSA[1].renamed(HTTPIdentityTokenTests.rsa.keyID).sign(
                TestClaims(sub: "mallory"))
            let refused = try await server.sendBearer(forged)
            #expect(refused.isError(.authenticationFailed, status: 401))
            #expect(refused.reason?.contains("blocked") == false, "\(refused.reason ?? "")")

            // A subject blocked before it ever signed in gets no user.
            try await service.blockIdentity(
                issuer: TestIssuer.defaultIssuer, subject: "eve", container: server.container)
            let before = try await service.users(container: server.container).count
            let eve = try await server.sendBearer(try await Self.key.sign(TestClaims(sub: "eve")))
            #expect(eve.isError(.accessDenied, status: 403))
            #expect(try await service.users(container: server.container).count == before)

            // Unblocked: the same user, with the data it had.
            #expect(
                try await service.unblockIdentity(
                    issuer: TestIssuer.defaultIssuer, subject: "mallory", container: server.container))
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(fresh)) == mallory)
            let lookup = try await server.sendBearer(
                fresh, "records/lookup", method: "POST", body: #"{"records":[{"recordName":"kept"}]}"#)
            let records = lookup.json["records"] as? [[String: Any]]
            #expect(records?.first?["recordType"] as? String == "Note", "\(lookup.json)")
            #expect(try await server.send("GET", server.path("users/current"), query: webQuery).status == 200)
        }
    }

    @Test(
        "PostgreSQL: a block through a third storage handle reaches both servers' caches at once",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func postgresTwoServers() async throws {
        let database = try await PostgresTestDatabase.create()
        defer { Task { try? await PostgresTestDatabase.drop(database) } }
        let admin = CloudService(storage: try await PostgresStorage(url: database, logger: quietLogger))
        let container = "block"
        let apiToken = try await admin.addContainer(named: container)
        try await admin.addIdentityIssuer(
            StoredIdentityIssuer(
                issuer: TestIssuer.defaultIssuer, audiences: [TestIssuer.defaultAudience], keySetURL: nil,
                keySet: TestSigningKey.keySet([Self.key])),
            container: container)
        var services: [CloudService] = []
        for _ in 0..<2 {
            let storage = try await PostgresStorage(url: database, maximumConnections: 2, logger: quietLogger)
            let broadcaster = try await PostgresChangeBroadcaster(url: database, logger: quietLogger)
            services.append(CloudService(storage: storage, broadcaster: broadcaster))
        }
        // Caches that would trust a token for an hour: only the block can end it sooner.
        let configuration = ServerConfiguration(
            port: 0, authenticationCacheLifetime: .seconds(3600), logger: quietLogger)
        let servers = services.map { CumulusHTTPServer(service: $0, configuration: configuration) }
        let mallory = try await Self.key.sign(TestClaims(sub: "mallory"))
        let trent = try await Self.key.sign(TestClaims(sub: "trent"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            for server in servers {
                group.addTask { try await server.run { port in continuation.yield(port) } }
            }
            var clients: [HTTPTestServer] = []
            for await port in ports {
                clients.append(
                    HTTPTestServer(
                        baseURL: URL(string: "http://127.0.0.1:\(port)")!, service: admin, container: container,
                        apiToken: apiToken, webAuthToken: "", userRecordName: ""))
                if clients.count == 2 { break }
            }
            for client in clients {
                #expect(try await client.sendBearer(mallory).status == 200)
                #expect(try await client.sendBearer(mallory).status == 200)
                #expect(try await client.sendBearer(trent).status == 200)
            }
            try await admin.blockIdentity(issuer: TestIssuer.defaultIssuer, subject: "mallory", container: container)
            for client in clients {
                // The notification is on its way when the block returns; give it a moment, never an hour.
                let deadline = ContinuousClock.now + .seconds(20)
                var last = try await client.sendBearer(mallory)
                while last.status == 200, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                    last = try await client.sendBearer(mallory)
                }
                #expect(last.isError(.accessDenied, status: 403), "\(client.baseURL): \(last.status)")
                #expect(try await client.sendBearer(trent).status == 200)
            }
            try await admin.unblockIdentity(issuer: TestIssuer.defaultIssuer, subject: "mallory", container: container)
            for client in clients { #expect(try await client.sendBearer(mallory).status == 200) }
            group.cancelAll()
        }
        for service in services { try? await service.close() }
        try? await admin.close()
    }
}
