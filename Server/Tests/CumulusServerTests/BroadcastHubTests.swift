import Cumulus
import CumulusServer
import Foundation
import Testing

/// Two services on one storage, standing in for two servers on one
/// database; each with its own broadcaster.
struct TwoServers {
    let directory: URL
    let storage: SQLiteStorage
    let a: CloudService
    let b: CloudService

    static func make(a first: any ChangeBroadcasting, b second: any ChangeBroadcasting) async throws -> TwoServers {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-broadcast-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let storage = try await SQLiteStorage(
            path: directory.appendingPathComponent("cumulus.sqlite").path, logger: quietLogger)
        return TwoServers(
            directory: directory, storage: storage, a: CloudService(storage: storage, broadcaster: first),
            b: CloudService(storage: storage, broadcaster: second))
    }

    func tearDown() async throws {
        try? await a.close()
        try? await b.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

extension CloudService {
    func subscribe(_ id: String, to zone: ZoneID = notesZone, as who: Caller) async throws {
        guard
            case .subscriptionResults(let results) = try await perform(
                .modifySubscriptions([.save(Subscription(subscriptionID: id, zoneID: zone))]), as: who),
            case .subscription = results.first
        else { throw CloudError(.internalError, reason: "the subscription was not saved") }
    }

    /// A new channel and the cursor of its start.
    func channel(for who: Caller) async throws -> (token: String, cursor: String) {
        let token = try await createNotificationToken(for: who)
        return (token, try await pollNotifications(token: token, cursor: nil, timeout: .zero).cursor)
    }

    /// Polls from `cursor` until the notifications heard satisfy `enough`;
    /// a poll that hears nothing for a long while fails the test.
    func listen(
        _ token: String, from cursor: String, until enough: ([CloudNotification]) -> Bool
    ) async throws -> (notifications: [CloudNotification], cursor: String) {
        var heard: [CloudNotification] = []
        var cursor = cursor
        while !enough(heard) {
            let batch = try await pollNotifications(token: token, cursor: cursor, timeout: .seconds(60))
            guard !batch.notifications.isEmpty else {
                throw CloudError(.internalError, reason: "nothing arrived; heard \(heard)")
            }
            heard += batch.notifications
            cursor = batch.cursor
        }
        return (heard, cursor)
    }
}

/// Connects broadcasters in memory: each announcement reaches every other
/// member, in order.
final class BroadcastBus: Sendable {
    private let members = LockedBox<[BusMember]>([])

    func join() -> BusMember {
        let member = BusMember(bus: self)
        members.withLock { $0.append(member) }
        return member
    }

    fileprivate func announce(_ announcement: ChangeAnnouncement, from sender: BusMember) {
        for member in members.withLock({ $0 }) where member !== sender {
            member.queue.yield(.changed(announcement))
        }
    }
}

final class BusMember: ChangeBroadcasting {
    fileprivate let queue: AsyncStream<ChangeBroadcastEvent>.Continuation
    private let receiver = LockedBox<(@Sendable (ChangeBroadcastEvent) async -> Void)?>(nil)
    private let delivering: Task<Void, Never>
    private let bus: BroadcastBus

    fileprivate init(bus: BroadcastBus) {
        self.bus = bus
        let (events, queue) = AsyncStream.makeStream(of: ChangeBroadcastEvent.self)
        self.queue = queue
        let receiver = receiver
        delivering = Task {
            for await event in events { await receiver.withLock({ $0 })?(event) }
        }
    }

    /// Delivers a catch-up, as a reconnected listener would.
    func missSome() {
        queue.yield(.mayHaveMissed)
    }

    func announce(_ announcement: ChangeAnnouncement) {
        bus.announce(announcement, from: self)
    }

    func setReceiver(_ receiver: @escaping @Sendable (ChangeBroadcastEvent) async -> Void) {
        self.receiver.withLock { $0 = receiver }
    }

    func close() async {
        queue.finish()
        await delivering.value
    }
}

final class LockedBox<Value: Sendable>: @unchecked Sendable {
    // Safety: `value` is reached only under `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

@Suite("Broadcasts between services, in memory")
struct BroadcastHubTests {
    @Test("a poll on B wakes for a write through A, and not for another user's")
    func pollsWakeForOtherServersWrites() async throws {
        let bus = BroadcastBus()
        let servers = try await TwoServers.make(a: bus.join(), b: bus.join())
        let alice = caller("alice")
        let bob = caller("bob")
        // Set up through B: announcements of A's writes come only from the writes under test.
        try await servers.b.createZone(as: alice)
        try await servers.b.createZone(as: bob)
        try await servers.b.subscribe("s", as: alice)
        let channel = try await servers.b.channel(for: alice)

        // Announcements arrive in order: had bob's write reached alice's channel, it would come first.
        _ = try await servers.a.modify([RecordOperation(.create, note("b"))], as: bob)
        _ = try await servers.a.modify([RecordOperation(.create, note("a"))], as: alice)
        let batch = try await servers.b.pollNotifications(
            token: channel.token, cursor: channel.cursor, timeout: .seconds(60))
        #expect(batch.notifications == [.zoneChanged(notesZone, subscriptionID: "s"), .databaseChanged])
        try await servers.tearDown()
    }

    @Test("a server's own write reaches its channels once")
    func ownWritesOnce() async throws {
        let bus = BroadcastBus()
        let servers = try await TwoServers.make(a: bus.join(), b: bus.join())
        let alice = caller("alice")
        let other = ZoneID(zoneName: "Other")
        _ = try await servers.b.perform(.modifyZones([.create(notesZone), .create(other)]), as: alice)
        try await servers.b.subscribe("notes", as: alice)
        try await servers.b.subscribe("other", to: other, as: alice)
        let channel = try await servers.b.channel(for: alice)

        _ = try await servers.b.modify([RecordOperation(.create, note("a"))], as: alice)
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
        try await servers.tearDown()
    }

    @Test("public database writes reach the public channels of their subscribers")
    func publicWrites() async throws {
        let bus = BroadcastBus()
        let servers = try await TwoServers.make(a: bus.join(), b: bus.join())
        let alice = caller("alice", scope: .public)
        let bob = caller("bob", scope: .public)
        try await servers.b.subscribe("p", to: .defaultZone, as: alice)
        let channel = try await servers.b.channel(for: alice)

        _ = try await servers.a.modify(
            [RecordOperation(.create, note("a", zone: .defaultZone))], zone: .defaultZone, as: bob)
        let batch = try await servers.b.pollNotifications(
            token: channel.token, cursor: channel.cursor, timeout: .seconds(60))
        #expect(batch.notifications == [.zoneChanged(.defaultZone, subscriptionID: "p")])
        try await servers.tearDown()
    }

    @Test("after announcements may have been missed, waiting polls read storage and hear what was not announced")
    func catchUp() async throws {
        let bus = BroadcastBus()
        let b = bus.join()
        let servers = try await TwoServers.make(a: bus.join(), b: b)
        // A server on the same storage that announces nothing: its writes are the ones missed.
        let silent = CloudService(storage: servers.storage)
        let alice = caller("alice")
        let publicAlice = caller("alice", scope: .public)
        try await servers.b.subscribe("p", to: .defaultZone, as: publicAlice)
        let privateChannel = try await servers.b.channel(for: alice)
        let publicChannel = try await servers.b.channel(for: publicAlice)
        let waiting = Task {
            try await servers.b.pollNotifications(
                token: privateChannel.token, cursor: privateChannel.cursor, timeout: .seconds(60))
        }
        let waitingPublic = Task {
            try await servers.b.pollNotifications(
                token: publicChannel.token, cursor: publicChannel.cursor, timeout: .seconds(60))
        }
        try await Task.sleep(for: .milliseconds(200))
        _ = try await silent.modify(
            [RecordOperation(.create, note("p", zone: .defaultZone))], zone: .defaultZone, as: publicAlice)
        _ = try await silent.perform(.modifyZones([.create(notesZone)]), as: alice)

        let started = ContinuousClock.now
        b.missSome()
        #expect(try await waiting.value.notifications == [.databaseChanged])
        #expect(try await waitingPublic.value.notifications == [.zoneChanged(.defaultZone, subscriptionID: "p")])
        #expect(started.duration(to: .now) < .seconds(30))
        try await servers.tearDown()
    }
}
