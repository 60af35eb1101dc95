import Cumulus
import CumulusServer
import Foundation
import PostgresNIO
import Testing

/// A fresh PostgreSQL database for one test (notification channels are per
/// database, so tests running side by side do not hear each other).
struct BroadcastDatabase {
    /// Without a server the tests are skipped, unless CI requires them.
    static let enabled = PostgresTestDatabase.isEnabled

    let admin: PostgresURL
    let url: PostgresURL
    let name: String

    static func make() async throws -> BroadcastDatabase {
        let url = try await PostgresTestDatabase.create()
        return BroadcastDatabase(admin: try PostgresTestDatabase.adminURL(), url: url, name: url.database)
    }

    /// Ends the broadcasters' listening connections; returns how many.
    func dropListeners() async throws -> Int {
        try await Self.run(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = \(name) AND application_name = \(PostgresChangeBroadcaster.applicationName)
            """, on: admin)
    }

    func drop() async {
        try? await PostgresTestDatabase.drop(url)
    }

    /// Runs one statement on a connection of its own; returns the rows' count.
    @discardableResult
    private static func run(_ query: PostgresQuery, on url: PostgresURL) async throws -> Int {
        let logger = Logger(label: "cumulus.tests.postgres")
        let connection = try await PostgresConnection.connect(
            configuration: try url.connectionConfiguration(), id: 1, logger: logger)
        do {
            let count = try await connection.query(query, logger: logger).collect().count
            try await connection.close()
            return count
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// Collects what a broadcaster delivers.
final class BroadcastRecorder: Sendable {
    let events: AsyncStream<ChangeBroadcastEvent>
    private let continuation: AsyncStream<ChangeBroadcastEvent>.Continuation

    init(_ broadcaster: some ChangeBroadcasting) {
        (events, continuation) = AsyncStream.makeStream(of: ChangeBroadcastEvent.self)
        let continuation = continuation
        broadcaster.setReceiver { continuation.yield($0) }
    }

    /// The first event that satisfies `wanted`, skipping the others.
    func first(where wanted: (ChangeBroadcastEvent) -> Bool) async -> ChangeBroadcastEvent? {
        for await event in events where wanted(event) { return event }
        return nil
    }
}

@Suite("Broadcasts between services through PostgreSQL", .enabled(if: BroadcastDatabase.enabled))
struct BroadcastPostgresTests {
    /// Two services with a broadcaster each, and a third broadcaster that
    /// tells when an announcement has gone through PostgreSQL.
    struct Setup {
        let database: BroadcastDatabase
        let servers: TwoServers
        let observer: PostgresChangeBroadcaster
        let recorder: BroadcastRecorder

        static func make() async throws -> Setup {
            let database = try await BroadcastDatabase.make()
            let servers = try await TwoServers.make(
                a: try await PostgresChangeBroadcaster(url: database.url, logger: quietLogger),
                b: try await PostgresChangeBroadcaster(url: database.url, logger: quietLogger))
            let observer = try await PostgresChangeBroadcaster(url: database.url, logger: quietLogger)
            return Setup(
                database: database, servers: servers, observer: observer, recorder: BroadcastRecorder(observer))
        }

        /// Runs `body` on a fresh setup, torn down even when `body` throws
        /// (a storage left open would trap when it is freed).
        static func with(_ body: (Setup) async throws -> Void) async throws {
            let setup = try await make()
            do {
                try await body(setup)
            } catch {
                try? await setup.tearDown()
                throw error
            }
            try await setup.tearDown()
        }

        func tearDown() async throws {
            await observer.close()
            try await servers.tearDown()
            await database.drop()
        }
    }

    @Test("a poll on B wakes for a write through A, and not for another user's")
    func pollsWakeForOtherServersWrites() async throws {
        try await Setup.with { setup in
            let servers = setup.servers
            let alice = caller("alice")
            let bob = caller("bob")
            // Set up through B: announcements of A's writes come only from the writes under test.
            try await servers.b.createZone(as: alice)
            try await servers.b.createZone(as: bob)
            try await servers.b.subscribe("s", as: alice)
            let channel = try await servers.b.channel(for: alice)

            // A sends in order: had bob's write reached alice's channel, it would come first.
            _ = try await servers.a.modify([RecordOperation(.create, note("b"))], as: bob)
            _ = try await servers.a.modify([RecordOperation(.create, note("a"))], as: alice)
            let batch = try await servers.b.pollNotifications(
                token: channel.token, cursor: channel.cursor, timeout: .seconds(60))
            #expect(batch.notifications == [.zoneChanged(notesZone, subscriptionID: "s"), .databaseChanged])
        }
    }

    @Test("a server's own write reaches its channels once")
    func ownWritesOnce() async throws {
        try await Setup.with { setup in
            let servers = setup.servers
            let alice = caller("alice")
            let other = ZoneID(zoneName: "Other")
            _ = try await servers.b.perform(.modifyZones([.create(notesZone), .create(other)]), as: alice)
            try await servers.b.subscribe("notes", as: alice)
            try await servers.b.subscribe("other", to: other, as: alice)
            let channel = try await servers.b.channel(for: alice)

            _ = try await servers.b.modify([RecordOperation(.create, note("a"))], as: alice)
            // Once the observer has B's announcement, B's own listener has it before anything A sends next.
            _ = await setup.recorder.first {
                $0 == .changed(ChangeAnnouncement(key: Self.privateKey("alice"), zoneNames: ["Notes"]))
            }
            _ = try await servers.a.modify([RecordOperation(.create, note("b", zone: other))], zone: other, as: alice)
            let heard = try await servers.b.listen(channel.token, from: channel.cursor) {
                $0.contains(.zoneChanged(other, subscriptionID: "other"))
            }
            // Each zone once, whether the two writes come in one batch or two.
            #expect(heard.notifications.filter { $0 == .zoneChanged(notesZone, subscriptionID: "notes") }.count == 1)
            #expect(heard.notifications.filter { $0 == .zoneChanged(other, subscriptionID: "other") }.count == 1)
            #expect(heard.notifications.last == .databaseChanged)
            let after = try await servers.b.pollNotifications(
                token: channel.token, cursor: heard.cursor, timeout: .milliseconds(100))
            #expect(after.notifications.isEmpty)
        }
    }

    @Test("public database writes reach the public channels of their subscribers")
    func publicWrites() async throws {
        try await Setup.with { setup in
            let servers = setup.servers
            let alice = caller("alice", scope: .public)
            let bob = caller("bob", scope: .public)
            try await servers.b.subscribe("p", to: .defaultZone, as: alice)
            let channel = try await servers.b.channel(for: alice)

            _ = try await servers.a.modify(
                [RecordOperation(.create, note("a", zone: .defaultZone))], zone: .defaultZone, as: bob)
            let batch = try await servers.b.pollNotifications(
                token: channel.token, cursor: channel.cursor, timeout: .seconds(60))
            #expect(batch.notifications == [.zoneChanged(.defaultZone, subscriptionID: "p")])
        }
    }

    @Test("a dropped listening connection comes back, channels catch up, and writes wake polls again")
    func reconnects() async throws {
        try await Setup.with { setup in
            let servers = setup.servers
            let alice = caller("alice")
            let publicAlice = caller("alice", scope: .public)
            try await servers.b.createZone(as: alice)
            try await servers.b.subscribe("s", as: alice)
            try await servers.b.subscribe("p", to: .defaultZone, as: publicAlice)
            let channel = try await servers.b.channel(for: alice)
            let publicChannel = try await servers.b.channel(for: publicAlice)

            // Polls wait on server b while its listening connection drops and writes go through a.
            let waiting = Task {
                try await servers.b.pollNotifications(
                    token: channel.token, cursor: channel.cursor, timeout: .seconds(60))
            }
            let waitingPublic = Task {
                try await servers.b.pollNotifications(
                    token: publicChannel.token, cursor: publicChannel.cursor, timeout: .seconds(60))
            }
            try await Task.sleep(for: .milliseconds(200))
            let started = ContinuousClock.now
            #expect(try await setup.database.dropListeners() == 3)
            _ = try await servers.a.modify([RecordOperation(.create, note("a"))], as: alice)
            _ = try await servers.a.modify(
                [RecordOperation(.create, note("p", zone: .defaultZone))], zone: .defaultZone, as: publicAlice)
            let caughtUp = try await waiting.value
            #expect(caughtUp.notifications == [.zoneChanged(notesZone, subscriptionID: "s"), .databaseChanged])
            #expect(try await waitingPublic.value.notifications == [.zoneChanged(.defaultZone, subscriptionID: "p")])
            #expect(started.duration(to: .now) < .seconds(30))

            // And once reconnected, writes wake polls again.
            let next = Task {
                try await servers.b.pollNotifications(
                    token: channel.token, cursor: caughtUp.cursor, timeout: .seconds(60))
            }
            try await Task.sleep(for: .milliseconds(200))
            _ = try await servers.a.modify([RecordOperation(.create, note("b"))], as: alice)
            #expect(
                try await next.value.notifications == [.zoneChanged(notesZone, subscriptionID: "s"), .databaseChanged])
        }
    }

    @Test("an announcement too long for one notification arrives whole")
    func oversizeAnnouncements() async throws {
        let database = try await BroadcastDatabase.make()
        let sender = try await PostgresChangeBroadcaster(url: database.url, logger: quietLogger)
        let receiver = try await PostgresChangeBroadcaster(url: database.url, logger: quietLogger)
        let recorder = BroadcastRecorder(receiver)
        // Far over PostgreSQL's 8000 bytes a notification, with characters JSON escapes.
        let zones = (0..<60).map { "zone \($0) \"é\" " + String(repeating: "z", count: 240) }
        let announcement = ChangeAnnouncement(key: Self.privateKey("alice"), zoneNames: zones)
        sender.announce(announcement)
        sender.announce(ChangeAnnouncement(key: Self.privateKey("bob"), zoneNames: ["Notes"]))

        let first = await recorder.first { _ in true }
        #expect(first == .changed(announcement))
        let second = await recorder.first { _ in true }
        #expect(second == .changed(ChangeAnnouncement(key: Self.privateKey("bob"), zoneNames: ["Notes"])))
        await sender.close()
        await receiver.close()
        await database.drop()
    }

    @Test func badChannelNamesAreRefused() async throws {
        let database = try await BroadcastDatabase.make()
        await #expect(throws: CloudError.self) {
            _ = try await PostgresChangeBroadcaster(
                url: database.url, channel: "changes\"; DROP", logger: quietLogger)
        }
        await database.drop()
    }

    static func privateKey(_ owner: String) -> DatabaseKey {
        DatabaseKey(container: "iCloud.test", environment: .development, scope: .private, owner: owner)
    }
}
