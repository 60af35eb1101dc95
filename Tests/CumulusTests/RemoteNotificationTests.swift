import CloudCodable
import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A request the transport holds until the test answers it.
final class PendingRequest: @unchecked Sendable {
    // Safety: the mutable state is touched only while `lock` is held.
    private let lock = NSLock()
    let request: CloudHTTPRequest
    private var continuation: CheckedContinuation<CloudHTTPResponse, any Error>?
    private var outcome: Result<CloudHTTPResponse, any Error>?
    private var cancelledWaiters: [CheckedContinuation<Void, Never>] = []
    private var cancelled = false

    init(_ request: CloudHTTPRequest) { self.request = request }

    var path: String { request.url.path }
    var query: [String: String] { RemoteFixture.query(of: request.url) }

    /// Answers the request.
    func respond(_ result: Result<CloudHTTPResponse, any Error>) {
        lock.lock()
        guard outcome == nil else {
            lock.unlock()
            return
        }
        outcome = result
        let continuation = continuation
        self.continuation = nil
        lock.unlock()
        continuation?.resume(with: result)
    }

    func respond(_ response: CloudResponse) throws {
        respond(.success(CloudHTTPResponse(status: 200, body: try response.encodedBody())))
    }

    func respond(_ batch: NotificationBatch) {
        respond(.success(CloudHTTPResponse(status: 200, body: batch.encodedBody())))
    }

    func respond(_ error: CloudError) {
        respond(
            .success(
                CloudHTTPResponse(
                    status: error.httpStatus, headers: ["Content-Type": "application/json"], body: error.encodedBody()))
        )
    }

    /// Returns once the requesting task was cancelled.
    func waitUntilCancelled() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            lock.lock()
            if cancelled {
                lock.unlock()
                waiter.resume()
            } else {
                cancelledWaiters.append(waiter)
                lock.unlock()
            }
        }
    }

    fileprivate func wait() async throws -> CloudHTTPResponse {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.lock()
                if let outcome {
                    lock.unlock()
                    continuation.resume(with: outcome)
                } else {
                    self.continuation = continuation
                    lock.unlock()
                }
            }
        } onCancel: {
            lock.lock()
            cancelled = true
            let waiters = cancelledWaiters
            cancelledWaiters = []
            lock.unlock()
            respond(.failure(CancellationError()))
            for waiter in waiters { waiter.resume() }
        }
    }
}

/// A transport that hands each request to the test, in order, and waits for its answer.
final class QueueTransport: CloudTransport, @unchecked Sendable {
    // Safety: the iterator is used by one test task at a time.
    private let stream: AsyncStream<PendingRequest>
    private let continuation: AsyncStream<PendingRequest>.Continuation
    private var iterator: AsyncStream<PendingRequest>.Iterator

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: PendingRequest.self)
        iterator = stream.makeAsyncIterator()
    }

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        let pending = PendingRequest(request)
        continuation.yield(pending)
        return try await pending.wait()
    }

    /// The next request sent.
    func next() async throws -> PendingRequest {
        try #require(await iterator.next())
    }
}

@Suite("RemoteCloudDatabase notifications", .timeLimit(.minutes(1)))
struct RemoteNotificationTests {
    let zone = ZoneID(zoneName: "Notes")
    let clock = ManualClock()
    let transport = QueueTransport()
    let base = "/prefix/database/1/iCloud.com.example.notes/production/private"

    private func database(scope: DatabaseScope = .private) -> RemoteCloudDatabase {
        var configuration = RemoteFixture.configuration(scope: scope)
        configuration.clock = clock
        configuration.notificationBackoff = RetryPolicy(
            initialDelay: .milliseconds(500), maximumDelay: .seconds(30), jitter: 0)
        return RemoteCloudDatabase(
            configuration: configuration,
            credentials: .user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.webAuthToken),
            transport: transport)
    }

    private func token(_ name: String, url: String? = nil) -> CloudResponse {
        .token(
            NotificationToken(
                apnsEnvironment: "production", apnsToken: name,
                webcourierURL: url ?? "https://cloud.example.com/notifications/\(name)"))
    }

    /// Expects the next request to be `tokens/create` and answers it.
    private func createToken(_ name: String, webAuthToken: String = RemoteFixture.webAuthToken) async throws {
        let create = try await transport.next()
        #expect(create.request.method == "POST")
        #expect(create.path == base + "/tokens/create")
        #expect(create.query["ckWebAuthToken"] == webAuthToken)
        // The body names the environment, as CloudKit's tokens/create wants.
        #expect(
            try CloudRequest.decode(.createToken, body: create.request.body ?? [])
                == .createToken(apnsEnvironment: .production))
        try create.respond(token(name))
    }

    @Test("creates a token, long-polls its URL and yields each batch in order")
    func longPoll() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")

        let first = try await transport.next()
        #expect(first.request.method == "GET")
        #expect(first.path == "/notifications/t1")
        #expect(first.query["cursor"] == nil)
        #expect(first.query["timeout"] == "25")
        #expect(first.query["ckWebAuthToken"] == RemoteFixture.webAuthToken)
        #expect(first.request.timeout > .seconds(25))
        first.respond(
            NotificationBatch(notifications: [.zoneChanged(zone, subscriptionID: "s"), .databaseChanged], cursor: "c1"))
        #expect(await notifications.next() == .zoneChanged(zone, subscriptionID: "s"))
        #expect(await notifications.next() == .databaseChanged)

        let second = try await transport.next()
        #expect(second.query["cursor"] == "c1")
        second.respond(NotificationBatch(notifications: [], cursor: "c2"))
        let third = try await transport.next()
        #expect(third.query["cursor"] == "c2")
        third.respond(NotificationBatch(notifications: [.databaseChanged], cursor: "c3"))
        #expect(await notifications.next() == .databaseChanged)
    }

    @Test("a poll URL on another host gets no credentials")
    func foreignHost() async throws {
        let database = database()
        let stream = database.notifications()
        let create = try await transport.next()
        try create.respond(token("t1", url: "https://push.example.net/poll/t1?channel=9"))
        let poll = try await transport.next()
        #expect(poll.request.url.host == "push.example.net")
        #expect(poll.query == ["channel": "9", "timeout": "25"])
        _ = stream
    }

    @Test("failed polls are retried after growing waits, from the same cursor")
    func reconnect() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        try await transport.next().respond(NotificationBatch(notifications: [.databaseChanged], cursor: "c1"))
        #expect(await notifications.next() == .databaseChanged)

        try await transport.next().respond(.failure(URLError(.networkConnectionLost)))
        // The first failure of a streak: the reader syncs, and learns whether the server is away.
        #expect(await notifications.next() == .databaseChanged)
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [clock.now.advanced(by: .milliseconds(500))])
        clock.advance(by: .milliseconds(500))

        try await transport.next().respond(CloudError(.tryAgainLater, reason: "busy"))
        // The server answers now, with an error: another kind of break, told once too.
        #expect(await notifications.next() == .databaseChanged)
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [clock.now.advanced(by: .seconds(1))])
        clock.advance(by: .seconds(1))

        let retry = try await transport.next()
        #expect(retry.path == "/notifications/t1")
        #expect(retry.query["cursor"] == "c1")
        retry.respond(NotificationBatch(notifications: [.zoneChanged(zone, subscriptionID: nil)], cursor: "c2"))
        #expect(await notifications.next() == .zoneChanged(zone, subscriptionID: nil))

        // Success starts the waits again from the smallest.
        try await transport.next().respond(.failure(URLError(.timedOut)))
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [clock.now.advanced(by: .milliseconds(500))])
    }

    @Test("a request that succeeds while the channel waits after failures reconnects it at once and says to fetch")
    func networkReturned() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        try await transport.next().respond(NotificationBatch(notifications: [], cursor: "c1"))
        try await transport.next().respond(.failure(URLError(.notConnectedToInternet)))
        #expect(await notifications.next() == .databaseChanged)
        await clock.waitForSleepers(count: 1)

        // A failed request does not end the wait; a successful one does.
        let failing = Task { try await database.listZones() }
        try await transport.next().respond(.failure(URLError(.notConnectedToInternet)))
        await #expect(throws: CloudError.self) { try await failing.value }
        #expect(clock.sleeperCount == 1)
        let listing = Task { try await database.listZones() }
        try await transport.next().respond(.zones([]))
        #expect(try await listing.value.isEmpty)

        // No time passes: the stream says changes may have been missed, and the channel polls again.
        #expect(await notifications.next() == .databaseChanged)
        let poll = try await transport.next()
        #expect(poll.path == "/notifications/t1")
        #expect(poll.query["cursor"] == "c1")
        #expect(clock.sleeperCount == 0)
    }

    @Test("a channel that polls again after failures says so once, even when nothing changed")
    func channelBack() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        try await transport.next().respond(.failure(URLError(.cannotConnectToHost)))
        #expect(await notifications.next() == .databaseChanged)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(500))
        try await transport.next().respond(.failure(URLError(.cannotConnectToHost)))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))

        // The server is back: an empty answer still tells the reader, which stops waiting to retry.
        try await transport.next().respond(NotificationBatch(notifications: [], cursor: "c1"))
        #expect(await notifications.next() == .databaseChanged)
        let next = try await transport.next()
        #expect(next.query["cursor"] == "c1")
        next.respond(NotificationBatch(notifications: [.zoneChanged(zone, subscriptionID: nil)], cursor: "c2"))
        #expect(await notifications.next() == .zoneChanged(zone, subscriptionID: nil))
    }

    @Test(
        "a channel whose credential the server revoked says the account changed, once, and retries on new credentials")
    func credentialRevoked() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        try await transport.next().respond(
            CloudError(.authenticationFailed, reason: "the credential of this channel was revoked"))
        #expect(await notifications.next() == .accountChanged)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(500))
        // The channel is gone: a new one is asked for, and refused again without another event.
        let refused = try await transport.next()
        #expect(refused.path == base + "/tokens/create")
        refused.respond(CloudError(.authenticationFailed, reason: "the web auth token is not valid"))
        await clock.waitForSleepers(count: 1)

        // New credentials end the wait at once.
        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.webAuthToken))
        #expect(await notifications.next() == .databaseChanged)
        try await createToken("t2")
        #expect(await notifications.next() == .databaseChanged)
        try await transport.next().respond(
            NotificationBatch(notifications: [.zoneChanged(zone, subscriptionID: nil)], cursor: "c1"))
        #expect(await notifications.next() == .zoneChanged(zone, subscriptionID: nil))
    }

    @Test("signing out, then in as another user, says the account changed twice and nothing more")
    func signOutThenIn() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        let poll = try await transport.next()
        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: nil))
        #expect(await notifications.next() == .accountChanged)
        poll.respond(.failure(CancellationError()))
        let refused = try await transport.next()
        #expect(refused.path == base + "/tokens/create")
        refused.respond(CloudError(.authenticationRequired, reason: "nobody is signed in"))
        await clock.waitForSleepers(count: 1)
        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.otherWebAuthToken))
        #expect(await notifications.next() == .accountChanged)
        try await createToken("t2", webAuthToken: RemoteFixture.otherWebAuthToken)
        try await transport.next().respond(
            NotificationBatch(notifications: [.zoneChanged(zone, subscriptionID: nil)], cursor: "c1"))
        #expect(await notifications.next() == .zoneChanged(zone, subscriptionID: nil))
    }

    @Test("the waits are capped, jittered and never shorter than the server asks")
    func delays() {
        let policy = RetryPolicy(initialDelay: .milliseconds(500), maximumDelay: .seconds(30), jitter: 0.2)
        let delays = (1...8).map {
            NotificationChannel.delay(afterFailures: $0, policy: policy, retryAfter: nil, random: 0.5)
        }
        #expect(delays.map { $0 / .seconds(1) } == [0.5, 1, 2, 4, 8, 16, 30, 30])
        #expect(
            NotificationChannel.delay(afterFailures: 100_000, policy: policy, retryAfter: nil, random: 0.5)
                == .seconds(30))
        #expect(
            NotificationChannel.delay(afterFailures: 1, policy: policy, retryAfter: nil, random: 0)
                == .milliseconds(400))
        #expect(
            NotificationChannel.delay(afterFailures: 1, policy: policy, retryAfter: .seconds(9), random: 0)
                == .seconds(9))
    }

    @Test("a poll that answers NOT_FOUND gets a new token at once, and the stream says it may have missed changes")
    func lostToken() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        try await transport.next().respond(NotificationBatch(notifications: [], cursor: "c1"))
        try await transport.next().respond(CloudError(.notFound, reason: "no channel t1"))
        // No wait on the clock: the new channel is asked for at once.
        try await createToken("t2")
        #expect(await notifications.next() == .databaseChanged)
        let poll = try await transport.next()
        #expect(poll.path == "/notifications/t2")
        #expect(poll.query["cursor"] == nil)
    }

    @Test("a channel lost again before any poll of it succeeded waits before the next one")
    func lostAgain() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        try await transport.next().respond(CloudError(.notFound, reason: "no channel t1"))
        try await createToken("t2")
        #expect(await notifications.next() == .databaseChanged)
        try await transport.next().respond(CloudError(.notFound, reason: "no channel t2"))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(500))
        try await createToken("t3")
        #expect(await notifications.next() == .databaseChanged)
    }

    @Test("switching user yields .accountChanged and reconnects as the new user")
    func accountChanged() async throws {
        let database = database()
        var notifications = database.notifications().makeAsyncIterator()
        try await createToken("t1")
        let poll = try await transport.next()

        // A new API token for the same user changes nothing.
        database.setCredentials(.user(apiToken: "another", webAuthToken: RemoteFixture.webAuthToken))
        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.otherWebAuthToken))
        #expect(await notifications.next() == .accountChanged)
        await poll.waitUntilCancelled()
        try await createToken("t2", webAuthToken: RemoteFixture.otherWebAuthToken)
        let newPoll = try await transport.next()
        #expect(newPoll.path == "/notifications/t2")
        #expect(newPoll.query["ckWebAuthToken"] == RemoteFixture.otherWebAuthToken)
        newPoll.respond(NotificationBatch(notifications: [.databaseChanged], cursor: "x"))
        #expect(await notifications.next() == .databaseChanged)

        // Signing out is a change of account too.
        let next = try await transport.next()
        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: nil))
        #expect(await notifications.next() == .accountChanged)
        await next.waitUntilCancelled()
        let signedOut = try await transport.next()
        #expect(signedOut.path == base + "/tokens/create")
        #expect(signedOut.query["ckWebAuthToken"] == nil)
    }

    @Test("every open stream hears of the switch")
    func everyStream() async throws {
        let database = database()
        var first = database.notifications().makeAsyncIterator()
        var second = database.notifications().makeAsyncIterator()
        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.otherWebAuthToken))
        #expect(await first.next() == .accountChanged)
        #expect(await second.next() == .accountChanged)
    }

    @Test("the channel's task ends when the reader stops reading")
    func readerStops() async throws {
        let database = database()
        let reader = Task { [stream = database.notifications()] () -> CloudNotification? in
            for await notification in stream { return notification }
            return nil
        }
        try await createToken("t1")
        try await transport.next().respond(NotificationBatch(notifications: [.databaseChanged], cursor: "c1"))
        #expect(await reader.value == .databaseChanged)
        let poll = try await transport.next()
        await poll.waitUntilCancelled()
        await database.waitUntilChannelsStopped()
    }

    @Test("cancelling the reader mid-poll ends the channel; so does a sleeping one")
    func readerCancelled() async throws {
        let database = database()
        let reader = Task { [stream = database.notifications()] in
            for await _ in stream {}
        }
        try await createToken("t1")
        let poll = try await transport.next()
        reader.cancel()
        await poll.waitUntilCancelled()
        await database.waitUntilChannelsStopped()

        let sleeper = Task { [stream = database.notifications()] in
            for await _ in stream {}
        }
        try await transport.next().respond(.failure(URLError(.cannotConnectToHost)))
        await clock.waitForSleepers(count: 1)
        sleeper.cancel()
        await database.waitUntilChannelsStopped()
        #expect(clock.sleeperCount == 0)
    }

    @Test("the streams end when the database goes away")
    func databaseGone() async throws {
        var database: RemoteCloudDatabase? = self.database()
        var notifications = try #require(database).notifications().makeAsyncIterator()
        try await createToken("t1")
        let poll = try await transport.next()
        database = nil
        #expect(await notifications.next() == nil)
        await poll.waitUntilCancelled()
    }
}
