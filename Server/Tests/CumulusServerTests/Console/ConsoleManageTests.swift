import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

@Suite("Console: deleting zones, revoking tokens, removing users")
struct ConsoleManageTests {
    static func note(_ name: String, title: String) -> Record {
        Record(recordType: "Note", recordName: name, fields: ["title": .string(title)])
    }

    /// A device of a user over HTTP with the given web auth token.
    static func device(_ server: ConsoleTestServer, token: String) -> RemoteCloudDatabase {
        RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: server.server.baseURL, container: server.container, scope: .private),
            credentials: .user(apiToken: server.server.apiToken, webAuthToken: token))
    }

    /// The protocol's error a device gets, or `nil` when its request works.
    static func failure(of device: RemoteCloudDatabase) async -> CloudError.Code? {
        do {
            _ = try await device.listZones()
            return nil
        } catch let error as CloudError {
            return error.code
        } catch {
            return .internalError
        }
    }

    @Test(
        "deleting a zone is the owner's zones/modify: devices and share participants lose it; CSRF refused",
        arguments: TestStore.single)
    func deleteZone(_ store: TestStore) async throws {
        let log = LogLines()
        try await ConsoleTestServer.with(store: store, log: log) { server in
            let alice = try await server.server.user("alice").recordName
            let bob = try await server.server.user("bob").recordName
            try await server.seed(user: "alice", zone: "Shared", records: [Self.note("n1", title: "shared")])
            try await server.seed(user: "alice", zone: "Kept", records: [Self.note("k1", title: "kept")])
            try await server.shareZone("Shared", ofAlice: alice, withBob: bob)
            let bobShared = Caller(container: server.container, environment: .development, scope: .shared, user: bob)
            guard case .zones(let before) = try await server.service.perform(.listZones, as: bobShared) else {
                throw CloudError(.internalError, reason: "zones/list answered something else")
            }
            #expect(before.map(\.zoneID.zoneName) == ["Shared"])
            let phone = try await server.server.database(signedInAs: "alice")
            #expect(try await phone.listZones().contains { $0.zoneID.zoneName == "Shared" })

            let session = try await server.signIn()
            let database = [
                ("container", server.container), ("environment", "development"), ("scope", "private"), ("user", alice),
            ]
            let zones = try await server.get(ConsoleTestServer.link("/console/zones", database), session: session)
            let deleteLink = ConsoleTestServer.link(
                "/console/delete-zone", database + [("zone", "Shared"), ("owner", "")])
            #expect(zones.body.contains(deleteLink.replacingOccurrences(of: "&", with: "&amp;")))
            // The default zone is listed but offers no delete: zones/modify refuses it, and so does the POST.
            #expect(zones.body.contains(">_defaultZone<") && !zones.body.contains("Delete zone <code>_defaultZone"))
            let confirm = try await server.get(deleteLink, session: session)
            #expect(confirm.status == 200 && confirm.body.contains("participants of its shares lose it"))
            let csrf = try #require(confirm.hiddenValue("csrf"))
            let form = database + [("zone", "Shared")]
            #expect(try await server.send(.POST, "/console/delete-zone", session: session, form: form).status == 403)
            #expect(try await phone.listZones().contains { $0.zoneID.zoneName == "Shared" }, "refused, nothing deleted")
            // A shared database's zone is not the console's to delete: only the owner's private one.
            let shared = [("container", server.container), ("environment", "development"), ("scope", "shared")]
            let sharedZones = try await server.get(
                ConsoleTestServer.link("/console/zones", shared + [("user", bob)]), session: session)
            #expect(sharedZones.body.contains(">Shared<") && !sharedZones.body.contains("Delete zone"))
            let refused = try await server.send(
                .POST, "/console/delete-zone", session: session,
                form: shared + [("user", bob), ("zone", "Shared"), ("owner", alice), ("csrf", csrf)])
            #expect(refused.status == 400)

            let defaultZone = try await server.send(
                .POST, "/console/delete-zone", session: session,
                form: database + [("zone", "_defaultZone"), ("csrf", csrf)])
            #expect(defaultZone.status == 409 && defaultZone.body.contains("the default zone cannot be deleted"))
            let deleted = try await server.send(
                .POST, "/console/delete-zone", session: session, form: form + [("csrf", csrf)])
            #expect(deleted.status == 200)
            let left = try await phone.listZones().map(\.zoneID.zoneName)
            #expect(!left.contains("Shared") && left.contains("Kept"))
            guard case .zones(let after) = try await server.service.perform(.listZones, as: bobShared) else {
                throw CloudError(.internalError, reason: "zones/list answered something else")
            }
            #expect(after.isEmpty)
            let id = try #require(try await server.service.consoleTokens().first?.id)
            let lines = log.all.filter { $0.contains("console deleted a zone") }
            #expect(lines.count == 1 && lines[0].contains("consoleToken=\(id)") && lines[0].contains("zone=Shared"))
            // Deleting it again says so rather than pretending.
            #expect(try await server.get(deleteLink, session: session).status == 404)
        }
    }

    @Test(
        "revoking a token: its requests get AUTHENTICATION_FAILED, the user's other token still works",
        arguments: TestStore.single)
    func revokeToken(_ store: TestStore) async throws {
        let log = LogLines()
        try await ConsoleTestServer.with(store: store, log: log) { server in
            let first = try await server.server.user("alice").token
            _ = try await server.server.user("bob")
            let second = try await server.service.addWebAuthToken(
                forUser: "alice", container: server.container, lifetime: nil)
            let bobToken = try await server.service.addWebAuthToken(
                forUser: "bob", container: server.container, lifetime: nil)
            let laptop = Self.device(server, token: second.webAuthToken)
            let phone = Self.device(server, token: first)
            #expect(await Self.failure(of: laptop) == nil)
            #expect(await Self.failure(of: phone) == nil)

            let session = try await server.signIn()
            let user = [("container", server.container), ("name", "alice")]
            let page = try await server.get(ConsoleTestServer.link("/console/user", user), session: session)
            let revokeLink = ConsoleTestServer.link("/console/revoke-token", user + [("id", second.details.id)])
            #expect(page.body.contains(revokeLink.replacingOccurrences(of: "&", with: "&amp;")))
            #expect(page.body.contains("Remove this user"))
            let confirm = try await server.get(revokeLink, session: session)
            #expect(confirm.status == 200)
            let csrf = try #require(confirm.hiddenValue("csrf"))
            // Without the CSRF token, or naming another user's token, nothing is revoked.
            let form = user + [("id", second.details.id)]
            #expect(try await server.send(.POST, "/console/revoke-token", session: session, form: form).status == 403)
            let otherUsers = user + [("id", bobToken.details.id), ("csrf", csrf)]
            #expect(
                try await server.send(.POST, "/console/revoke-token", session: session, form: otherUsers).status == 404)
            #expect(await Self.failure(of: laptop) == nil)

            let revoked = try await server.send(
                .POST, "/console/revoke-token", session: session, form: form + [("csrf", csrf)])
            #expect(revoked.status == 200)
            #expect(await Self.failure(of: laptop) == .authenticationFailed)
            #expect(await Self.failure(of: phone) == nil)
            #expect(await Self.failure(of: Self.device(server, token: bobToken.webAuthToken)) == nil)
            let tokens = try await server.service.webAuthTokens(ofUser: "alice", container: server.container)
            #expect(!tokens.contains { $0.id == second.details.id } && tokens.count == 1)
            let lines = log.all.filter { $0.contains("console revoked a web auth token") }
            #expect(lines.count == 1 && lines[0].contains("tokenID=\(second.details.id)"))
            #expect(!log.all.contains { $0.contains(second.webAuthToken) })
        }
    }

    @Test(
        "removing a user deletes their data and tokens; another user's zone of the same name survives",
        arguments: TestStore.single)
    func removeUser(_ store: TestStore) async throws {
        let log = LogLines()
        try await ConsoleTestServer.with(store: store, log: log) { server in
            let alice = try await server.server.user("alice")
            let bob = try await server.server.user("bob")
            try await server.seed(user: "alice", zone: "Notes", records: [Self.note("a1", title: "alice's")])
            try await server.seed(user: "bob", zone: "Notes", records: [Self.note("b1", title: "bob's")])
            let session = try await server.signIn()
            let user = [("container", server.container), ("name", "alice")]
            let confirm = try await server.get(ConsoleTestServer.link("/console/remove-user", user), session: session)
            #expect(confirm.status == 200)
            #expect(confirm.body.contains("cumulus user remove") && confirm.body.contains("Delete their data"))
            let csrf = try #require(confirm.hiddenValue("csrf"))
            // Without a choice for the data, or without the CSRF token, nothing happens.
            #expect(
                try await server.send(.POST, "/console/remove-user", session: session, form: user + [("csrf", csrf)])
                    .status == 400)
            #expect(
                try await server.send(
                    .POST, "/console/remove-user", session: session, form: user + [("data", "delete")]
                )
                .status == 403)
            #expect(try await server.lookUp("a1", zone: "Notes", user: "alice") != nil)

            let removed = try await server.send(
                .POST, "/console/remove-user", session: session, form: user + [("data", "delete"), ("csrf", csrf)])
            #expect(removed.status == 200)
            #expect(removed.body.contains("revoked 1 web auth tokens; deleted "))
            let users = try await server.service.users(container: server.container)
            #expect(!users.contains { $0.name == "alice" } && users.contains { $0.name == "bob" })
            #expect(await Self.failure(of: Self.device(server, token: alice.token)) == .authenticationFailed)
            let aliceCaller = Caller(
                container: server.container, environment: .development, scope: .private, user: alice.recordName)
            await #expect(throws: (any Error).self) {
                _ = try await server.service.rules.browseRecords(
                    in: ZoneID(zoneName: "Notes"), after: nil, limit: 10, as: aliceCaller)
            }
            #expect(try await server.lookUp("b1", zone: "Notes", user: "bob")?["title"] == .string("bob's"))
            #expect(await Self.failure(of: Self.device(server, token: bob.token)) == nil)
            let lines = log.all.filter { $0.contains("console removed a user") }
            #expect(
                lines.count == 1 && lines[0].contains("user=\(alice.recordName)") && lines[0].contains("consoleToken="))
            // The user page is gone with the user.
            #expect(try await server.get(ConsoleTestServer.link("/console/user", user), session: session).status == 404)
        }
    }

    @Test(
        "removing an identity user: blocked when asked, their next sign-in is refused; unblocked, it makes a new user")
    func removeIdentityUser() async throws {
        try await ConsoleTestServer.with { server in
            let issuer = "https://id.example.com"
            let carol = try await server.service.signIn(
                VerifiedIdentity(issuer: issuer, subject: "carol<script>"), container: server.container)
            let dave = try await server.service.signIn(
                VerifiedIdentity(issuer: issuer, subject: "dave"), container: server.container)
            let session = try await server.signIn()
            let carolPage = [("container", server.container), ("name", carol)]
            let confirm = try await server.get(
                ConsoleTestServer.link("/console/remove-user", carolPage), session: session)
            #expect(
                confirm.body.contains("carol&lt;script&gt;") && confirm.body.contains("Also block these identities"))
            ConsoleEscapingTests.expectEscaped(confirm.body, page: "remove-user")
            let csrf = try #require(confirm.hiddenValue("csrf"))
            let blocked = try await server.send(
                .POST, "/console/remove-user", session: session,
                form: carolPage + [("data", "keep"), ("block", "yes"), ("csrf", csrf)])
            #expect(blocked.status == 200 && blocked.body.contains("blocked 1 identities; kept the data."))
            await #expect(throws: CloudError.self) {
                _ = try await server.service.signIn(
                    VerifiedIdentity(issuer: issuer, subject: "carol<script>"), container: server.container)
            }
            let davePage = [("container", server.container), ("name", dave)]
            let kept = try await server.send(
                .POST, "/console/remove-user", session: session, form: davePage + [("data", "keep"), ("csrf", csrf)])
            #expect(kept.status == 200)
            // Not blocked: the provider's next token signs in as a new user, as `cumulus user remove` says.
            let again = try await server.service.signIn(
                VerifiedIdentity(issuer: issuer, subject: "dave"), container: server.container)
            #expect(again != dave)
        }
    }
}
