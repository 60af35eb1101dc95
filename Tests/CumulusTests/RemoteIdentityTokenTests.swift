import CloudCodable
import CumulusServerCore
import Foundation
import Testing

@testable import Cumulus
@testable import CumulusTesting

/// Identity tokens shaped as an identity provider's: three base64url parts,
/// the payload naming issuer, subject and expiry (the signature is not read).
enum IdentityFixture {
    static let issuer = "https://appleid.apple.com"
    /// The fixture's current date: `RemoteFixture`'s.
    static let start = Date(timeIntervalSince1970: 1_700_000_000)

    static func token(subject: String?, issuer: String? = issuer, expiresIn seconds: TimeInterval? = 3600) -> String {
        var claims: [String: Any] = ["aud": "com.example.notes", "iat": start.timeIntervalSince1970]
        if let subject { claims["sub"] = subject }
        if let issuer { claims["iss"] = issuer }
        if let seconds { claims["exp"] = start.timeIntervalSince1970 + seconds }
        let payload = try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return base64URL(Data(#"{"alg":"ES256","kid":"k1"}"#.utf8)) + "." + base64URL(payload) + ".c2lnbmF0dXJl"
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// The app's side of identity tokens: what the provider answers, the calls
/// it received (their `refresh` flags), and a gate that can hold them.
final class TokenSource: @unchecked Sendable {
    // Safety: every stored property is touched only while `lock` is held.
    private let lock = NSLock()
    private var current: String?
    private var refreshed: String?
    private var received: [Bool] = []
    private var failure: (any Error)?
    private var held = false
    private var heldCalls: [CheckedContinuation<Void, Never>] = []

    init(_ token: String?) { current = token }

    /// The token answered from now on.
    var token: String? {
        get { withLock { current } }
        set { withLock { current = newValue } }
    }

    /// The `refresh` flag of every call so far.
    var calls: [Bool] { withLock { received } }

    /// Makes calls with `refresh` answer `token` (and keep it as the current one).
    func refresh(to token: String?) { withLock { refreshed = token } }

    /// Makes the next calls throw `error` (`nil`: answer again).
    func fail(with error: (any Error)?) { withLock { failure = error } }

    /// Holds every call until ``release()``.
    func hold() { withLock { held = true } }

    func release() {
        let waiting = withLock {
            held = false
            defer { heldCalls = [] }
            return heldCalls
        }
        for call in waiting { call.resume() }
    }

    var provider: IdentityTokenProvider {
        IdentityTokenProvider { refresh in try await self.answer(refresh: refresh) }
    }

    var credentials: RemoteCloudDatabase.Credentials {
        .identity(apiToken: RemoteFixture.apiToken, token: provider)
    }

    private func answer(refresh: Bool) async throws -> String? {
        await withCheckedContinuation { (call: CheckedContinuation<Void, Never>) in
            let wait = withLock {
                received.append(refresh)
                if held { heldCalls.append(call) }
                return held
            }
            if !wait { call.resume() }
        }
        return try withLock {
            if let failure { throw failure }
            if refresh, let refreshed {
                current = refreshed
                self.refreshed = nil
            }
            return current
        }
    }

    private func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// A date tests move by hand.
final class MovableDate: @unchecked Sendable {
    // Safety: `date` is touched only while `lock` is held.
    private let lock = NSLock()
    private var date = IdentityFixture.start

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return date
    }

    func advance(by seconds: TimeInterval) {
        lock.lock()
        date += seconds
        lock.unlock()
    }
}

extension CloudHTTPRequest {
    /// The identity token of the `Authorization` header, if any.
    var bearer: String? {
        guard let value = headers["Authorization"], value.hasPrefix("Bearer ") else { return nil }
        return String(value.dropFirst("Bearer ".count))
    }
}

@Suite("RemoteCloudDatabase identity tokens", .timeLimit(.minutes(1)))
struct RemoteIdentityTokenTests {
    let alice = IdentityFixture.token(subject: "alice")
    let date = MovableDate()

    private func database(_ transport: any CloudTransport, _ source: TokenSource) -> RemoteCloudDatabase {
        var configuration = RemoteFixture.configuration()
        let date = date
        configuration.currentDate = { date.now }
        return RemoteCloudDatabase(configuration: configuration, credentials: source.credentials, transport: transport)
    }

    /// A transport that refuses the tokens in `refused` with
    /// `AUTHENTICATION_FAILED` and answers the rest with no zones, or with
    /// the subject's user for `users/current`.
    private func server(refusing refused: Set<String> = []) -> RecordingTransport {
        RecordingTransport { request in
            if let token = request.bearer, refused.contains(token) {
                let error = CloudError(.authenticationFailed, reason: "the identity token was refused")
                return CloudHTTPResponse(status: 401, body: error.encodedBody())
            }
            guard request.url.path.hasSuffix("users/current") else {
                return CloudHTTPResponse(status: 200, body: try CloudResponse.zones([]).encodedBody())
            }
            let subject = request.bearer.flatMap { IdentityTokenClaims(token: $0)?.subject } ?? "unknown"
            return CloudHTTPResponse(
                status: 200, body: try CloudResponse.user(UserIdentity(userRecordName: "_" + subject)).encodedBody())
        }
    }

    @Test("the token travels as a bearer header, never in the query, and is kept for the next request")
    func bearerHeader() async throws {
        let transport = server()
        let source = TokenSource(alice)
        let database = database(transport, source)
        _ = try await database.listZones()
        _ = try await database.listZones()
        #expect(transport.requests.map(\.bearer) == [alice, alice])
        for request in transport.requests {
            #expect(request.headers["Authorization"] == "Bearer " + alice)
            #expect(RemoteFixture.query(of: request.url) == ["ckAPIToken": RemoteFixture.apiToken])
            #expect(!request.url.absoluteString.contains(alice))
        }
        #expect(source.calls == [false])
    }

    @Test("signed out: no header, the API token alone, and each request asks again until someone signs in")
    func signedOut() async throws {
        let transport = server()
        let source = TokenSource(nil)
        let database = database(transport, source)
        _ = try await database.listZones()
        let signedOut = database.accountGeneration
        _ = try await database.listZones()
        #expect(transport.requests.allSatisfy { $0.headers["Authorization"] == nil })
        let first = try #require(transport.requests.first)
        #expect(RemoteFixture.query(of: first.url) == ["ckAPIToken": RemoteFixture.apiToken])
        #expect(source.calls == [false, false])
        #expect(database.accountGeneration == signedOut)

        // Signing in is seen by the next request, as a change of account.
        source.token = alice
        _ = try await database.listZones()
        #expect(transport.requests.last?.bearer == alice)
        #expect(database.accountGeneration != signedOut)
    }

    @Test("a token that expires within a minute is refreshed before the request")
    func refreshBeforeExpiry() async throws {
        let transport = server()
        let source = TokenSource(alice)
        let database = database(transport, source)
        let check = try await database.checkAccount()
        #expect(check.user.userRecordName == "_alice")

        date.advance(by: 3600 - 61)
        _ = try await database.listZones()
        #expect(source.calls == [false], "61 seconds before expiry, the token is kept")

        let renewed = IdentityFixture.token(subject: "alice", expiresIn: 7200)
        source.refresh(to: renewed)
        date.advance(by: 1)
        _ = try await database.listZones()
        #expect(source.calls == [false, true])
        #expect(transport.requests.map(\.bearer) == [alice, alice, renewed])
        // The same subject: the same account, and a view bound to the check still sends.
        #expect(database.accountGeneration == check.generation)
        _ = try await database.bound(to: check).listZones()
        #expect(transport.requests.count == 4)
    }

    @Test("a refused token is refreshed once and the request sent again with the new one")
    func retryAfterRefusal() async throws {
        let transport = server(refusing: [alice])
        let source = TokenSource(alice)
        let renewed = IdentityFixture.token(subject: "alice", expiresIn: 7200)
        source.refresh(to: renewed)
        let database = database(transport, source)
        let generation = database.accountGeneration
        _ = try await database.listZones()
        #expect(transport.requests.map(\.bearer) == [alice, renewed])
        #expect(source.calls == [false, true])
        #expect(database.accountGeneration == generation)
    }

    @Test("a refused token is not sent again when the provider gives the same one")
    func noRetryWithTheSameToken() async throws {
        let transport = server(refusing: [alice])
        let source = TokenSource(alice)
        let database = database(transport, source)
        let error = try await #require(throws: CloudError.self) { _ = try await database.listZones() }
        #expect(error.code == .authenticationFailed)
        #expect(transport.requests.count == 1)
        #expect(source.calls == [false, true])
    }

    @Test("a request is sent at most twice, however many tokens the server refuses")
    func oneRetryOnly() async throws {
        let renewed = IdentityFixture.token(subject: "alice", expiresIn: 7200)
        let transport = server(refusing: [alice, renewed])
        let source = TokenSource(alice)
        source.refresh(to: renewed)
        let database = database(transport, source)
        let error = try await #require(throws: CloudError.self) { _ = try await database.listZones() }
        #expect(error.code == .authenticationFailed)
        #expect(transport.requests.map(\.bearer) == [alice, renewed])
    }

    @Test("concurrent requests share one call of the provider")
    func sharedRefresh() async throws {
        let transport = server()
        let source = TokenSource(alice)
        let database = database(transport, source)
        _ = try await database.listZones()

        let renewed = IdentityFixture.token(subject: "alice", expiresIn: 7200)
        source.refresh(to: renewed)
        source.hold()
        date.advance(by: 3600)
        let first = Task { try await database.listZones() }
        let second = Task { try await database.listZones() }
        // Both wait for the one call before it answers.
        while database.channels.identityTokenWaiters < 2 { await Task.yield() }
        source.release()
        _ = try await first.value
        _ = try await second.value
        #expect(source.calls == [false, true])
        #expect(transport.requests.map(\.bearer) == [alice, renewed, renewed])
    }

    @Test("another subject is another account: a bound view refuses to send, and a new check finds the new user")
    func newSubject() async throws {
        let transport = server()
        let source = TokenSource(alice)
        let database = database(transport, source)
        var check = try await database.checkAccount()

        // The same subject from another issuer is another user.
        for (token, user) in [
            (IdentityFixture.token(subject: "alice", issuer: "https://accounts.example.com"), "_alice"),
            (IdentityFixture.token(subject: "bob"), "_bob"),
            // "é" precomposed and decomposed: equal to Swift's ==, two subjects as bytes.
            (IdentityFixture.token(subject: "ren\u{E9}"), "_ren\u{E9}"),
            (IdentityFixture.token(subject: "rene\u{301}"), "_rene\u{301}"),
        ] {
            let before = database.accountGeneration
            let bound = database.bound(to: check)
            source.token = token
            // Setting the credentials again forgets the kept token: the next request asks.
            database.setCredentials(source.credentials)
            #expect(database.accountGeneration == before, "not known before the provider answers")
            let sent = transport.requests.count
            let error = try await #require(throws: CloudError.self) { _ = try await bound.listZones() }
            #expect(error.code == .accountChanged)
            #expect(transport.requests.count == sent, "nothing was sent as the new account")
            #expect(database.accountGeneration != before)
            check = try await database.checkAccount()
            #expect(check.user.userRecordName.utf8.elementsEqual(user.utf8))
            #expect(check.generation == database.accountGeneration)
            _ = try await database.bound(to: check).listZones()
        }
    }

    @Test("signing out is a change of account, and so is signing in again")
    func signOutAndIn() async throws {
        let transport = server()
        let source = TokenSource(alice)
        let database = database(transport, source)
        let check = try await database.checkAccount()
        source.token = nil
        database.setCredentials(source.credentials)
        _ = try await database.listZones()
        #expect(transport.requests.last?.bearer == nil)
        let signedOut = try #require(database.accountGeneration)
        #expect(signedOut != check.generation)
        source.token = alice
        _ = try await database.listZones()
        #expect(try #require(database.accountGeneration) != signedOut)
    }

    @Test("a notification stream hears of another subject and reconnects with its token")
    func notificationsHearTheChange() async throws {
        let transport = QueueTransport()
        let source = TokenSource(alice)
        let bob = IdentityFixture.token(subject: "bob")
        source.refresh(to: bob)
        let database = database(transport, source)
        var notifications = database.notifications().makeAsyncIterator()
        let create = try await transport.next()
        #expect(create.path.hasSuffix("/tokens/create"))
        #expect(create.request.bearer == alice)
        try create.respond(
            .token(
                NotificationToken(
                    apnsEnvironment: "production", apnsToken: "t1",
                    webcourierURL: "https://cloud.example.com/notifications/t1")))
        let poll = try await transport.next()
        #expect(poll.path == "/notifications/t1")
        #expect(poll.request.bearer == alice)
        #expect(poll.query == ["ckAPIToken": RemoteFixture.apiToken, "timeout": "25"])

        // The server refuses the token; the provider's fresh one is bob's.
        poll.respond(CloudError(.authenticationFailed, reason: "expired"))
        #expect(await notifications.next() == .accountChanged)
        let recreate = try await transport.next()
        #expect(recreate.path.hasSuffix("/tokens/create"))
        #expect(recreate.request.bearer == bob)
        #expect(source.calls == [false, true])
    }

    @Test("a failing provider fails the request with a clear error, sending nothing; the next request asks again")
    func providerFails() async throws {
        struct SignInError: Error, CustomStringConvertible {
            var description: String { "refresh failed for token SECRET-TOKEN" }
        }
        let transport = server()
        let source = TokenSource(alice)
        source.fail(with: SignInError())
        let database = database(transport, source)
        let error = try await #require(throws: CloudError.self) { _ = try await database.listZones() }
        #expect(error.code == .authenticationFailed)
        #expect(error.reason.contains("SignInError"))
        #expect(!error.description.contains("SECRET-TOKEN"))
        #expect(transport.requests.isEmpty)

        // A CloudError the provider throws comes through as it is.
        source.fail(with: CloudError(.networkFailure, reason: "offline"))
        let offline = try await #require(throws: CloudError.self) { _ = try await database.listZones() }
        #expect(offline.code == .networkFailure)

        source.fail(with: nil)
        _ = try await database.listZones()
        #expect(transport.requests.map(\.bearer) == [alice])
        #expect(source.calls == [false, false, false])
    }

    @Test("text that cannot travel in a header is refused without sending")
    func headerUnsafeToken() async throws {
        let transport = server()
        for text in ["", "a\r\nX-Injected: 1", "caf\u{E9}.a.b"] {
            let database = database(transport, TokenSource(text))
            let error = try await #require(throws: CloudError.self) { _ = try await database.listZones() }
            #expect(error.code == .authenticationFailed)
            #expect(!error.description.contains(text) || text.isEmpty)
        }
        #expect(transport.requests.isEmpty)
    }

    @Test(
        "a malformed token is sent as it is; only the same token is the same account",
        arguments: [
            "not-a-jwt",
            "a.b",
            "a.b.c.d",
            "e30.!!!.c2ln",
            // A payload that is JSON but not an object, and one without `sub`.
            "e30." + IdentityFixture.base64URL(Data("[1]".utf8)) + ".c2ln",
            "e30." + IdentityFixture.base64URL(Data(#"{"iss":"x","exp":"soon"}"#.utf8)) + ".c2ln",
        ])
    func malformedToken(token: String) async throws {
        let transport = server()
        let source = TokenSource(token)
        let database = database(transport, source)
        let check = try await database.checkAccount()
        #expect(transport.requests.first?.bearer == token)

        // The same token again: the same account.
        database.setCredentials(source.credentials)
        _ = try await database.bound(to: check).listZones()
        #expect(database.accountGeneration == check.generation)
        #expect(source.calls == [false, false])

        // Another malformed token: another account, as nothing says who it is.
        source.token = token + "x"
        database.setCredentials(source.credentials)
        await #expect(throws: CloudError.self) { _ = try await database.bound(to: check).listZones() }
        #expect(database.accountGeneration != check.generation)
    }

    @Test("the claims of a token: subject and issuer, expiry, and nothing from a malformed one")
    func claims() throws {
        let claims = try #require(IdentityTokenClaims(token: alice))
        #expect(claims.subject == "alice")
        #expect(claims.issuer == IdentityFixture.issuer)
        #expect(claims.expiry == IdentityFixture.start + 3600)
        #expect(IdentityTokenClaims(token: "a.b") == nil)
        #expect(IdentityTokenClaims(token: "a.@@@.c") == nil)
        // Padded base64url is read too; a length no base64 has is not.
        let padded = "e30." + Data(#"{"sub":"x"}"#.utf8).base64EncodedString() + ".c2ln"
        #expect(IdentityTokenClaims(token: padded)?.subject == "x")
        #expect(IdentityTokenClaims(token: "e30.abcde.c2ln") == nil)
        #expect(TokenIdentity(token: nil) == .signedOut)
        #expect(TokenIdentity(token: "opaque") == .unreadable(token: Array("opaque".utf8)))
    }

    @Test("printing the credentials shows no token")
    func redaction() {
        let credentials = TokenSource(alice).credentials
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in [
            credentials.description, String(describing: credentials), String(reflecting: credentials), dumped,
        ] {
            #expect(!text.contains(RemoteFixture.apiToken))
            #expect(!text.contains(alice))
        }
        #expect(credentials.description == "identity(apiToken: <redacted>, token: <provider>)")
    }
}

/// A record server behind a transport: the in-memory server's rules, the
/// caller the subject of the request's identity token (unverified).
struct IdentityServerTransport: CloudTransport {
    let server: InMemoryCloudServer

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        let components = request.url.path.split(separator: "/").map(String.init)
        guard let index = components.firstIndex(of: "database"), components.count > index + 5,
            let scope = DatabaseScope(rawValue: components[index + 4]),
            let operation = CloudOperation(rawValue: components[(index + 5)...].joined(separator: "/"))
        else { return CloudHTTPResponse(status: 404) }
        let user = request.bearer.flatMap { IdentityTokenClaims(token: $0)?.subject }
        let caller = Caller(
            container: InMemoryCloudServer.container, environment: server.environment, scope: scope,
            user: user, anonymous: user == nil)
        do {
            let decoded = try CloudRequest.decode(operation, body: request.body ?? [])
            let response = try await server.service.perform(decoded, as: caller)
            return CloudHTTPResponse(status: 200, body: try response.encodedBody())
        } catch let error as CloudError {
            return CloudHTTPResponse(
                status: error.httpStatus, headers: ["Content-Type": "application/json"], body: error.encodedBody())
        }
    }
}

@Suite("SyncEngine over identity tokens", .timeLimit(.minutes(1)))
struct IdentityTokenEngineTests {
    let zone = ZoneID(zoneName: "Note")

    @Test("a refreshed token of the same user changes nothing; another subject is an account change the engine sees")
    func engineSeesTheSwitch() async throws {
        let server = InMemoryCloudServer()
        let source = TokenSource(IdentityFixture.token(subject: "alice"))
        var configuration = RemoteFixture.configuration()
        configuration.environment = .development
        let database = RemoteCloudDatabase(
            configuration: configuration, credentials: source.credentials,
            transport: IdentityServerTransport(server: server))
        let engine = try await SyncEngine<Note>(
            database: database, directory: temporaryDirectory("identity"),
            configuration: SyncConfiguration(automaticSync: false, retryPolicy: RetryPolicy(jitter: 0)))
        let events = Collected(engine.events)
        try await engine.upload(Note(id: "alice-1", title: "mine"))
        try await engine.sync()
        #expect(await server.storedRecords(in: zone, of: "alice").map(\.recordName) == ["alice-1"])

        // A new token of the same subject: the engine goes on as alice.
        let generation = database.accountGeneration
        source.token = IdentityFixture.token(subject: "alice", expiresIn: 7200)
        database.setCredentials(source.credentials)
        try await engine.upload(Note(id: "alice-2", title: "also mine"))
        try await engine.sync()
        #expect(database.accountGeneration == generation)
        #expect(await server.storedRecords(in: zone, of: "alice").map(\.recordName) == ["alice-1", "alice-2"])

        // Bob's token: the engine drops alice's data and syncs as bob.
        try await engine.upload(Note(id: "alice-3", title: "not sent yet"))
        source.token = IdentityFixture.token(subject: "bob")
        database.setCredentials(source.credentials)
        try await engine.sync()
        #expect(await engine.models.isEmpty)
        let switched = await events.waitUntil {
            $0.contains(.accountChanged(previousUser: "alice", newUser: "bob", discardedChanges: ["alice-3"]))
        }
        #expect(switched)
        #expect(await server.storedRecords(in: zone, of: "bob").isEmpty)
        #expect(await server.storedRecords(in: zone, of: "alice").map(\.recordName) == ["alice-1", "alice-2"])
        try await engine.upload(Note(id: "bob-1", title: "his"))
        try await engine.sync()
        #expect(await server.storedRecords(in: zone, of: "bob").map(\.recordName) == ["bob-1"])
        await engine.close()
    }
}
