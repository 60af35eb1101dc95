import Cumulus
import CumulusConformance
import CumulusServer
import Foundation
import Testing

/// The story of an app with sign-up: its users sign in with the app's
/// identity provider, and nobody runs a command on the server for them.
@Suite("Signing in with an identity provider, end to end")
struct SignInEndToEndTests {
    @Test(
        "a user signed in on two devices syncs, and another user sees none of it",
        arguments: TestStore.available)
    func twoDevicesOneSubject(store: TestStore) async throws {
        let server = try await RunningServer.start(store: store)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-sign-in-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            // The operator's setup, once for the app: its identity provider.
            let key = try await server.addTestIssuer()

            let phoneDatabase = server.signedIn(subject: "alice", email: "alice@example.com", key: key, server: 0)
            let laptopDatabase = server.signedIn(subject: "alice", email: nil, key: key, server: 1)
            let phone = try await SyncEngine<ConformanceNote>(
                database: phoneDatabase, directory: directory.appendingPathComponent("phone"))
            let laptop = try await SyncEngine<ConformanceNote>(
                database: laptopDatabase, directory: directory.appendingPathComponent("laptop"))

            try await phone.upload(ConformanceNote(id: "groceries", title: "milk"))
            try await phone.sync()
            try await laptop.sync()
            #expect(await laptop.model(withIdentifier: "groceries")?.title == "milk")

            var edited = try #require(await laptop.model(withIdentifier: "groceries"))
            edited.title = "milk, eggs"
            try await laptop.upload(edited)
            try await laptop.sync()
            try await phone.sync()
            #expect(await phone.model(withIdentifier: "groceries")?.title == "milk, eggs")

            // Both devices are one user, made on first sight; the verified
            // address finds that user.
            let phoneUser = try await phoneDatabase.checkAccount().user.userRecordName
            let laptopUser = try await laptopDatabase.checkAccount().user.userRecordName
            #expect(phoneUser == laptopUser)
            let strangerDatabase = server.signedIn(subject: "bob", email: nil, key: key, server: 0)
            let found = try await strangerDatabase.lookupUsers(emailAddresses: ["alice@example.com"])
            #expect(found.map(\.userRecordName) == [phoneUser])

            // Another subject is another user, whose private database is empty.
            let stranger = try await SyncEngine<ConformanceNote>(
                database: strangerDatabase, directory: directory.appendingPathComponent("stranger"))
            try await stranger.sync()
            #expect(await stranger.models.isEmpty)
            #expect(try await strangerDatabase.checkAccount().user.userRecordName != phoneUser)

            await phone.close()
            await laptop.close()
            await stranger.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

extension RunningServer {
    /// Registers the test provider as the container's issuer, with one
    /// ES256 key stored, and returns the key its tokens are signed with.
    func addTestIssuer() async throws -> TestSigningKey {
        let key = TestSigningKey.es256(keyID: "provider-key")
        try await service.addIdentityIssuer(
            StoredIdentityIssuer(
                issuer: TestIssuer.defaultIssuer, audiences: [TestIssuer.defaultAudience], keySetURL: nil,
                keySet: TestSigningKey.keySet([key])),
            container: container)
        return key
    }

    /// A device whose user signed in with the test provider as `subject`:
    /// each token it asks for is freshly signed by `key`. With two servers,
    /// `server` picks the one it talks to.
    func signedIn(subject: String, email: String?, key: TestSigningKey, server: Int)
        -> RemoteCloudDatabase
    {
        let provider = IdentityTokenProvider { _ in
            try await key.sign(
                TestClaims(sub: subject, email: email, emailVerified: email == nil ? nil : .bool(true)))
        }
        return RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: baseURLs[server % baseURLs.count], container: container, scope: .private,
                notificationBackoff: RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .seconds(1))),
            credentials: .identity(apiToken: apiToken, token: provider))
    }
}
