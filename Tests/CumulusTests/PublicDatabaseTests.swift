import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

struct Post: CloudCodable, Identifiable, Hashable {
    var id: String
    var text: String
    var cloudMetadata: RecordMetadata?
}

/// The `records/query` requests an engine made, in order.
final class QueryLog: @unchecked Sendable {
    // Safety: `entries` is guarded by `lock`.
    private let lock = NSLock()
    private var entries: [(query: RecordQuery, desiredKeys: [String]?)] = []

    func append(_ query: RecordQuery, _ desiredKeys: [String]?) {
        lock.withLock { entries.append((query, desiredKeys)) }
    }

    var queries: [(query: RecordQuery, desiredKeys: [String]?)] { lock.withLock { entries } }
    /// The scans of record names among them.
    var scans: Int { queries.filter { $0.desiredKeys == [] }.count }
    func removeAll() { lock.withLock { entries.removeAll() } }

    private var feedCount = 0
    /// The number of `changes/zone` requests.
    var feedRequests: Int { lock.withLock { feedCount } }
    func countFeedRequest() { lock.withLock { feedCount += 1 } }
}

/// Users of one public database, each with an engine of posts.
struct PublicBoard {
    let server: InMemoryCloudServer
    let clock = ManualClock()
    /// Whether the engines' databases refuse `changes/zone` as a plain
    /// CloudKit server does, so that the engines fetch by queries.
    let feedless: Bool
    let queries = QueryLog()
    static let scanInterval = Duration.seconds(600)

    /// `serverClock` dates the records (by default the time of day).
    init(feedless: Bool, serverClock: ManualClock? = nil) {
        self.feedless = feedless
        server = serverClock.map { InMemoryCloudServer(clock: $0) } ?? InMemoryCloudServer()
    }

    func database(_ user: String?) -> InMemoryCloudDatabase {
        server.database(scope: .public, signedInAs: user)
    }

    func engine(
        _ handle: InMemoryCloudDatabase, directory: URL, automatic: Bool = false, resultsLimit: Int? = nil,
        beforeQuery: (@Sendable (Int) async -> Void)? = nil
    ) async throws -> SyncEngine<Post> {
        var database = InterposedDatabase(handle)
        database.refusesZoneChanges = feedless
        let queries = queries
        database.beforeFetchZoneChanges = { _ in queries.countFeedRequest() }
        database.beforeQuery = { query, keys in
            queries.append(query, keys)
            await beforeQuery?(queries.queries.count)
        }
        var configuration = SyncConfiguration(automaticSync: automatic, retryPolicy: RetryPolicy(maximumAttempts: 1))
        configuration.clock = clock
        configuration.publicScanInterval = Self.scanInterval
        configuration.fetchResultsLimit = resultsLimit
        return try await SyncEngine<Post>(database: database, directory: directory, configuration: configuration)
    }

    func engine(_ user: String?, directory: URL = temporaryDirectory("public"), automatic: Bool = false)
        async throws -> SyncEngine<Post>
    {
        try await engine(database(user), directory: directory, automatic: automatic)
    }

    /// Moves time past a scan interval, once every engine's timer marked its scan due.
    func passScanInterval(engines: Int) async {
        await clock.waitForSleepers(count: engines)
        clock.advance(by: Self.scanInterval)
        await clock.waitForSleepers(count: engines)
    }
}

/// Whether `condition` holds within two seconds of real time.
func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0..<400 {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}

@Suite("SyncEngine on the public database")
struct PublicDatabaseTests {
    @Test("two users each see the other's posts", arguments: [false, true])
    func usersSeeEachOthersPosts(feedless: Bool) async throws {
        let board = PublicBoard(feedless: feedless)
        let alice = try await board.engine("alice")
        let bob = try await board.engine("bob")
        try await alice.upload(Post(id: "a1", text: "Hello from Alice"))
        try await bob.upload(Post(id: "b1", text: "Hello from Bob"))
        try await alice.sync()
        try await bob.sync()
        try await alice.sync()
        #expect(await alice.models.map(\.id) == ["a1", "b1"])
        #expect(await bob.models.map(\.id) == ["a1", "b1"])
        #expect(await bob.model(withIdentifier: "a1")?.cloudMetadata?.created?.userRecordName == "alice")
        let stored = await board.server.storedRecords(in: .defaultZone, of: "", scope: .public)
        #expect(stored.map(\.recordName) == ["a1", "b1"])

        // An edit comes through too, and an idle fetch changes nothing.
        var post = try #require(await alice.model(withIdentifier: "a1"))
        post.text = "Hello again"
        try await alice.upload(post)
        try await alice.sync()
        let changes = Collected(bob.changes)
        try await bob.sync()
        #expect(await bob.model(withIdentifier: "a1")?.text == "Hello again")
        try await bob.sync()
        let updates = changes.values.filter { if case .updated = $0 { true } else { false } }
        #expect(updates.count == 1)
        // Cumulus's server has a public feed; only a server without one is queried.
        #expect(board.queries.queries.isEmpty == !feedless)
    }

    @Test("a user cannot change another's post: the change is refused, reported and kept", arguments: [false, true])
    func othersPostIsRefused(feedless: Bool) async throws {
        let board = PublicBoard(feedless: feedless)
        let alice = try await board.engine("alice")
        try await alice.upload([Post(id: "a1", text: "Alice's"), Post(id: "a2", text: "Alice's too")])
        try await alice.sync()
        let directory = temporaryDirectory("bob")
        var bob: SyncEngine<Post>? = try await board.engine("bob", directory: directory)
        try await bob!.sync()
        let events = Collected(bob!.events)
        var post = try #require(await bob!.model(withIdentifier: "a1"))
        post.text = "Defaced"
        try await bob!.upload(post)
        try await bob!.delete(identifiers: ["a2"])
        try await bob!.sync()

        let refused = await bob!.refusedChanges
        #expect(refused["a1"]?.code == .accessDenied)
        #expect(refused["a2"]?.code == .accessDenied)
        let reported = await events.waitUntil { events in
            events.contains {
                if case .recordFailed("a1", let error) = $0 { error.code == .accessDenied } else { false }
            }
        }
        #expect(reported)
        #expect(await bob!.pendingChangeCount == 2)
        // Bob's device still shows his intent, kept for the app to discard or change.
        #expect(await bob!.model(withIdentifier: "a1")?.text == "Defaced")
        let stored = await board.server.storedRecords(in: .defaultZone, of: "", scope: .public)
        #expect(stored.map { $0["text"] } == [.string("Alice's"), .string("Alice's too")])

        // After a restart the refusal stands: nothing is sent again.
        await bob!.close()
        bob = nil
        let reopened = try await board.engine("bob", directory: directory)
        board.server.resetRequestCounts()
        try await reopened.sync()
        #expect(board.server.requestCount(of: .modifyRecords) == 0)
        #expect(await reopened.refusedChanges.keys.sorted() == ["a1", "a2"])
        try await reopened.discardChanges(identifiers: ["a1", "a2"])
        try await reopened.sync()
        #expect(await reopened.model(withIdentifier: "a1")?.text == "Alice's")
        #expect(await reopened.models.count == 2)
        #expect(await reopened.pendingChangeCount == 0)
    }

    @Test("a reader with nobody signed in sees the posts; what it queues waits for a user", arguments: [false, true])
    func anonymousReader(feedless: Bool) async throws {
        let board = PublicBoard(feedless: feedless)
        let alice = try await board.engine("alice")
        try await alice.upload(Post(id: "a1", text: "Hello"))
        try await alice.sync()

        let device = board.database(nil)
        let reader = try await board.engine(device, directory: temporaryDirectory("reader"))
        let status = Collected(reader.accountStatus)
        try await reader.sync()
        #expect(await reader.models.map(\.text) == ["Hello"])
        #expect(await reader.hasCompletedFirstFetch)
        #expect(await status.waitUntil { $0.last == .noAccount })

        try await alice.upload(Post(id: "a2", text: "More"))
        try await alice.sync()
        try await reader.sync()
        #expect(await reader.models.map(\.id) == ["a1", "a2"])

        // A post written with nobody signed in is kept, and sent once someone signs in.
        try await reader.upload(Post(id: "c1", text: "Draft"))
        await #expect(throws: CloudError.self) { try await reader.sync() }
        #expect(await reader.pendingChangeCount == 1)
        #expect(await reader.models.map(\.id) == ["a1", "a2", "c1"])
        device.signIn(as: "carol")
        try await reader.sync()
        #expect(await reader.pendingChangeCount == 0)
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "c1")?.cloudMetadata?.created?.userRecordName == "carol")
        #expect(board.queries.queries.isEmpty == !feedless)
    }

    @Test("through the feed, a deletion reaches the other user at the next fetch, and nothing is queried")
    func deletionThroughFeed() async throws {
        let board = PublicBoard(feedless: false)
        let alice = try await board.engine("alice")
        let bob = try await board.engine("bob")
        try await alice.upload([Post(id: "a1", text: "One"), Post(id: "a2", text: "Two")])
        try await alice.sync()
        try await bob.sync()
        #expect(await bob.models.count == 2)
        try await alice.delete(identifiers: ["a1"])
        try await alice.sync()
        try await bob.sync()
        #expect(await bob.models.map(\.id) == ["a2"])
        #expect(board.queries.queries.isEmpty)
        #expect(board.queries.feedRequests > 0)
    }

    @Test("without a feed, a deletion reaches other devices within one scan interval")
    func deletionFoundByScan() async throws {
        let board = PublicBoard(feedless: true)
        let alice = try await board.engine("alice")
        let bob = try await board.engine("bob")
        try await alice.upload([Post(id: "a1", text: "One"), Post(id: "a2", text: "Two")])
        try await alice.sync()
        try await bob.sync()
        #expect(await bob.models.count == 2)

        try await alice.delete(identifiers: ["a1"])
        try await alice.sync()
        #expect(await alice.models.map(\.id) == ["a2"])
        try await bob.sync()
        // The records modified since the last fetch say nothing of a deletion.
        #expect(await bob.models.count == 2)
        #expect(board.queries.scans == 0)

        await board.passScanInterval(engines: 2)
        let changes = Collected(bob.changes)
        try await bob.sync()
        #expect(await bob.models.map(\.id) == ["a2"])
        #expect(board.queries.scans == 1)
        #expect(await changes.waitUntil { $0.contains { if case .deleted(["a1"]) = $0 { true } else { false } } })
    }

    @Test("without a feed, a restart goes on from the last modification time and the last scan")
    func restartKeepsQueryProgress() async throws {
        let board = PublicBoard(feedless: true)
        let alice = try await board.engine("alice")
        try await alice.upload([Post(id: "a1", text: "One"), Post(id: "a2", text: "Two")])
        try await alice.sync()
        let directory = temporaryDirectory("bob")
        var bob: SyncEngine<Post>? = try await board.engine("bob", directory: directory)
        try await bob!.sync()
        let newest = try #require(
            await bob!.models.compactMap { $0.cloudMetadata?.modified?.timestamp }.max())
        let progress = await bob!.replica.meta
        #expect(progress.queryTime == newest)
        #expect(progress.scanTime != nil)
        await bob!.close()
        bob = nil

        board.queries.removeAll()
        let feedRequests = board.queries.feedRequests
        let reopened = try await board.engine("bob", directory: directory)
        #expect(await reopened.replica.meta.queryTime == progress.queryTime)
        #expect(await reopened.replica.meta.scanTime == progress.scanTime)
        try await reopened.sync()
        try await reopened.sync()
        // A new engine asks for the feed again, once: the refusal holds for the engine's life.
        #expect(board.queries.feedRequests == feedRequests + 1)
        #expect(await reopened.models.count == 2)
        let queries = board.queries.queries
        #expect(queries.count == 2)
        #expect(board.queries.scans == 0)
        let filter = try #require(queries.first?.query.filters.first)
        #expect(filter.fieldName == "___modTime")
        #expect(filter.comparator == .greaterThanOrEquals)
        guard case .timestamp(let since) = filter.fieldValue else {
            Issue.record("the query's bound is not a timestamp")
            return
        }
        // From a little before the newest modification it applied.
        let bound = RecordStamp(date: since).timestamp
        #expect(bound <= newest && bound >= newest - 60_000)
    }

    @Test("the engine's query subscription tells it of another user's post, which it fetches at once")
    func notifiedPost() async throws {
        let board = PublicBoard(feedless: true)
        let alice = try await board.engine("alice")
        let bob = try await board.engine("bob", automatic: true)
        #expect(await eventually { await bob.hasCompletedFirstFetch })
        let subscriptions = try await board.database("bob").listSubscriptions()
        #expect(subscriptions.map(\.subscriptionID) == ["cumulus.public.Post"])
        #expect(
            subscriptions.first?.kind
                == .query(RecordQuery(recordType: "Post"), firesOn: [.created, .updated, .deleted]))

        // Bob's engine polls on the manual clock, which stands still: only a notification brings the post.
        try await alice.upload(Post(id: "a1", text: "Hello"))
        try await alice.sync()
        #expect(await eventually { await bob.model(withIdentifier: "a1") != nil })
        await bob.close()
    }

    @Test("without a feed, each page is queried again from its last time: a deletion between pages skips nothing")
    func pagesByTime() async throws {
        let serverClock = ManualClock()
        let board = PublicBoard(feedless: true, serverClock: serverClock)
        let alice = try await board.engine("alice")
        for index in 1...5 {
            try await alice.upload(Post(id: "p\(index)", text: "Post \(index)"))
            try await alice.sync()
            serverClock.advance(by: .seconds(1))
        }
        // Three posts of one millisecond: more than a page, so they go on by marker.
        try await alice.upload((6...8).map { Post(id: "p\($0)", text: "Post \($0)") })
        try await alice.sync()

        let deleter = board.database("alice")
        let bob = try await board.engine(
            board.database("bob"), directory: temporaryDirectory("bob"), resultsLimit: 2,
            beforeQuery: { count in
                // Before the second page: a post of the first goes, which shifts every position after it.
                guard count == 2 else { return }
                var gone = Record(recordType: "Post", recordName: "p1", zoneID: .defaultZone)
                gone.fields = [:]
                _ = try? await deleter.modifyRecords(
                    [RecordOperation(.forceDelete, gone)], zoneID: .defaultZone, atomic: true)
            })
        board.queries.removeAll()
        try await bob.sync()
        #expect(Set(await bob.models.map(\.id)).isSuperset(of: (2...8).map { "p\($0)" }))
        let bounds = board.queries.queries.compactMap { entry -> Int64? in
            guard case .timestamp(let date)? = entry.query.filters.first?.fieldValue else { return nil }
            return RecordStamp(date: date).timestamp
        }
        // Pages of two: the first from the start, then from p2's time, p4's, and the ties' by marker.
        #expect(bounds.count >= 3)
        #expect(bounds == bounds.sorted())

        // Later posts of that same millisecond are still found: the next query starts before it.
        try await alice.upload(Post(id: "p9", text: "Post 9"))
        try await alice.sync()
        try await bob.sync()
        #expect(await bob.model(withIdentifier: "p9") != nil)
    }
}
