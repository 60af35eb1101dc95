import Crypto
import Cumulus
import CumulusServer
import Foundation
import Testing

/// Web auth tokens with expiries, several per user; API token rotation with
/// an overlap; key removal: through the service, on SQLite and PostgreSQL.
@Suite("Credential lifecycle")
struct CredentialLifecycleTests {
    static let container = "iCloud.lifecycle"

    /// Runs `body` on a fresh store whose clock the test moves, with a container.
    static func with(
        _ store: TestStore, _ body: (CloudService, LockedBox<Date>, _ apiToken: String) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-lifecycle-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
        let services = try await store.makeServices(directory: directory, now: { clock.withLock { $0 } })
        do {
            let service = services.services[0]
            let apiToken = try await service.addContainer(named: container)
            try await body(service, clock, apiToken)
        } catch {
            await services.close()
            throw error
        }
        await services.close()
    }

    static func isValid(_ finding: CredentialFinding<String>, user: String) -> Bool {
        if case .valid(let found, _) = finding { return found.isExactly(user) }
        return false
    }

    static func isExpired<T>(_ finding: CredentialFinding<T>) -> Bool {
        if case .expired = finding { return true }
        return false
    }

    static func isUnknown<T>(_ finding: CredentialFinding<T>) -> Bool {
        if case .unknown = finding { return true }
        return false
    }

    @Test(
        "a user has several tokens with their own expiries; an expired one answers expired", arguments: TestStore.single
    )
    func tokensExpire(_ store: TestStore) async throws {
        try await Self.with(store) { service, clock, _ in
            let alice = try await service.addUser(
                named: "alice", container: Self.container, tokenLifetime: .seconds(3600))
            let phone = try await service.addWebAuthToken(forUser: "alice", container: Self.container, lifetime: nil)
            let laptop = try await service.addWebAuthToken(
                forUser: "alice", container: Self.container, lifetime: .seconds(86_400))
            #expect(phone.details.expires == nil)
            #expect(laptop.details.expires == laptop.details.created + 86_400_000)
            #expect(phone.details.id.count == 16 && !phone.webAuthToken.hasPrefix(phone.details.id))

            let listed = try await service.webAuthTokens(ofUser: "alice", container: Self.container)
            #expect(listed.count == 3)
            #expect(Set(listed.map(\.id)).count == 3)
            #expect(try await service.users(container: Self.container).first?.activeTokens == 3)
            for token in [alice.webAuthToken, phone.webAuthToken, laptop.webAuthToken] {
                let found = try await service.authenticateWebAuthToken(token, container: Self.container)
                #expect(Self.isValid(found, user: alice.userRecordName))
            }

            clock.withLock { $0 += 3600 }
            #expect(
                Self.isExpired(
                    try await service.authenticateWebAuthToken(alice.webAuthToken, container: Self.container)))
            #expect(try await service.user(container: Self.container, webAuthToken: alice.webAuthToken) == nil)
            #expect(try await service.users(container: Self.container).first?.activeTokens == 2)
            clock.withLock { $0 += 86_400 }
            #expect(
                Self.isExpired(
                    try await service.authenticateWebAuthToken(laptop.webAuthToken, container: Self.container)))
            #expect(
                Self.isValid(
                    try await service.authenticateWebAuthToken(phone.webAuthToken, container: Self.container),
                    user: alice.userRecordName))
            // Another container never knows them.
            #expect(
                Self.isUnknown(
                    try await service.authenticateWebAuthToken(phone.webAuthToken, container: "iCloud.other")))
        }
    }

    @Test(
        "tokens are revoked by token, by ID, or all of a user's; other users keep theirs", arguments: TestStore.single)
    func revoke(_ store: TestStore) async throws {
        try await Self.with(store) { service, _, _ in
            let alice = try await service.addUser(named: "alice", container: Self.container)
            let bob = try await service.addUser(named: "bob", container: Self.container)
            let second = try await service.addWebAuthToken(forUser: "alice", container: Self.container, lifetime: nil)
            let third = try await service.addWebAuthToken(forUser: "alice", container: Self.container, lifetime: nil)

            let byToken = try await service.revokeWebAuthToken(alice.webAuthToken, container: Self.container)
            #expect(byToken.userRecordName == alice.userRecordName)
            #expect(
                Self.isUnknown(
                    try await service.authenticateWebAuthToken(alice.webAuthToken, container: Self.container)))
            try await service.revokeWebAuthToken(id: second.details.id, container: Self.container)
            #expect(
                Self.isUnknown(
                    try await service.authenticateWebAuthToken(second.webAuthToken, container: Self.container)))
            #expect(
                Self.isValid(
                    try await service.authenticateWebAuthToken(third.webAuthToken, container: Self.container),
                    user: alice.userRecordName))

            // Revoking what is not there is a clear error, and changes nothing.
            await #expect(throws: CloudError.self) {
                try await service.revokeWebAuthToken(alice.webAuthToken, container: Self.container)
            }
            await #expect(throws: CloudError.self) {
                try await service.revokeWebAuthToken(id: "0000000000000000", container: Self.container)
            }
            await #expect(throws: CloudError.self) {
                try await service.revokeWebAuthToken(id: third.details.id, container: "iCloud.other")
            }
            await #expect(throws: CloudError.self) {
                try await service.revokeWebAuthTokens(ofUser: "nobody", container: Self.container)
            }
            await #expect(throws: CloudError.self) {
                try await service.addWebAuthToken(forUser: "al\u{0}ice", container: Self.container, lifetime: nil)
            }

            let all = try await service.revokeWebAuthTokens(ofUser: "alice", container: Self.container)
            #expect(all.map(\.id) == [third.details.id])
            #expect(try await service.webAuthTokens(ofUser: "alice", container: Self.container).isEmpty)
            #expect(
                Self.isValid(
                    try await service.authenticateWebAuthToken(bob.webAuthToken, container: Self.container),
                    user: bob.userRecordName))
        }
    }

    @Test("a rotated API token keeps working for the overlap, then answers expired", arguments: TestStore.single)
    func rotate(_ store: TestStore) async throws {
        try await Self.with(store) { service, clock, first in
            let second = try await service.rotateAPIToken(container: Self.container, overlap: .seconds(600))
            #expect(second != first)
            for token in [first, second] {
                #expect(try await service.authenticateContainer(named: Self.container, apiToken: token))
            }
            clock.withLock { $0 += 600 }
            #expect(Self.isExpired(try await service.authenticateAPIToken(first, container: Self.container)))
            #expect(try await service.authenticateContainer(named: Self.container, apiToken: second))

            // Without an overlap the previous token stops at once.
            let third = try await service.rotateAPIToken(container: Self.container, overlap: .zero)
            #expect(!(try await service.authenticateContainer(named: Self.container, apiToken: second)))
            #expect(try await service.authenticateContainer(named: Self.container, apiToken: third))
            await #expect(throws: CloudError.self) {
                try await service.rotateAPIToken(container: "iCloud.none", overlap: .zero)
            }
        }
    }

    @Test("keys are listed with their fingerprint and removed", arguments: TestStore.single)
    func keys(_ store: TestStore) async throws {
        try await Self.with(store) { service, _, _ in
            let key = P256.Signing.PrivateKey().publicKey
            let id = try await service.addServerKey(container: Self.container, publicKeyPEM: key.pemRepresentation)
            let listed = try await service.serverKeys(container: Self.container)
            let fingerprint = SHA256.hash(data: key.derRepresentation).map { String(format: "%02x", $0) }.joined()
            #expect(listed.map(\.id) == [id] && listed.first?.fingerprint == fingerprint)
            try await service.removeServerKey(id: id, container: Self.container)
            #expect(try await service.serverKey(container: Self.container, keyID: id) == nil)
            #expect(try await service.serverKeys(container: Self.container).isEmpty)
            await #expect(throws: CloudError.self) {
                try await service.removeServerKey(id: id, container: Self.container)
            }
        }
    }
}

@Suite("Expired tokens over HTTP")
struct ExpiredTokenHTTPTests {
    @Test("an expired web auth token answers 401 AUTHENTICATION_FAILED saying it expired")
    func expired() async throws {
        try await HTTPTestServer.with { server in
            let service = try #require(server.service as? CloudService)
            let token = "an-expired-web-auth-token"
            let hash = SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
            try await service.storage.write { transaction async throws in
                try await transaction.saveUserToken(
                    StoredUserToken(tokenHash: hash, userRecordName: server.userRecordName, created: 0, expires: 1),
                    container: server.container)
            }
            let answer = try await server.send(
                "GET", server.path("zones/list"), query: ["ckAPIToken": server.apiToken, "ckWebAuthToken": token])
            #expect(answer.isError(.authenticationFailed, status: 401))
            #expect(answer.reason?.contains("expired") == true, "\(answer.reason ?? "")")
            #expect(answer.reason?.contains(token) == false)
            // The user's other token still works.
            #expect(try await server.sendAsUser("zones/list", method: "GET").status == 200)
        }
    }
}
