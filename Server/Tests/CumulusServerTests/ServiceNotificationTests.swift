import Cumulus
import CumulusServer
import Foundation
import Synchronization
import Testing

@Suite("CloudService notifications")
struct ServiceNotificationTests {
    @Test func writesReachTheOwnersChannels() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        _ = try await fixture.service.perform(
            .modifySubscriptions([.save(Subscription(subscriptionID: "s", zoneID: notesZone))]), as: alice)
        let token = try await fixture.service.createNotificationToken(for: alice)
        let bobToken = try await fixture.service.createNotificationToken(for: caller("bob"))
        let start = try await fixture.service.pollNotifications(token: token, cursor: nil, timeout: .zero)
        #expect(start.notifications.isEmpty)

        _ = try await fixture.service.modify([RecordOperation(.create, note("a"))], as: alice)
        let batch = try await fixture.service.pollNotifications(
            token: token, cursor: start.cursor, timeout: .seconds(30))
        #expect(batch.notifications == [.zoneChanged(notesZone, subscriptionID: "s"), .databaseChanged])
        let bobs = try await fixture.service.pollNotifications(token: bobToken, cursor: nil, timeout: .milliseconds(1))
        #expect(bobs.notifications.isEmpty)
        try await fixture.tearDown()
    }

    @Test func aWaitingPollWakesOnAWrite() async throws {
        let fixture = try await ServiceFixture.make()
        let service = fixture.service
        let alice = caller("alice")
        try await service.createZone(as: alice)
        let token = try await service.createNotificationToken(for: alice)
        let cursor = try await service.pollNotifications(token: token, cursor: nil, timeout: .zero).cursor
        let poll = Task { try await service.pollNotifications(token: token, cursor: cursor, timeout: .seconds(600)) }
        _ = try await service.modify([RecordOperation(.create, note("a"))], as: alice)
        #expect(try await poll.value.notifications == [.databaseChanged])
        try await fixture.tearDown()
    }

    @Test("channels nobody polls are forgotten; a channel that is polled is kept and still hears writes")
    func idleChannelsAreForgotten() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        var fixture = try await ServiceFixture.make()
        try await fixture.service.close()
        fixture.service = CloudService(
            storage: try await SQLiteStorage(path: fixture.path, logger: quietLogger),
            notificationIdleLimit: .seconds(600), now: { clock.withLock { $0 } })
        do {
            let service = fixture.service
            let alice = caller("alice")
            try await service.createZone(as: alice)
            let idle = try await service.createNotificationToken(for: alice)
            let polled = try await service.createNotificationToken(for: alice)
            var cursor = try await service.pollNotifications(token: polled, cursor: nil, timeout: .zero).cursor
            for _ in 0..<6 {
                clock.withLock { $0 += 200 }
                cursor = try await service.pollNotifications(token: polled, cursor: cursor, timeout: .zero).cursor
            }

            // Opening another channel forgets the idle one, not the polled one.
            let fresh = try await service.createNotificationToken(for: alice)
            await #expect(throws: CloudError.self) {
                _ = try await service.pollNotifications(token: idle, cursor: nil, timeout: .zero)
            }
            _ = try await service.modify([RecordOperation(.create, note("a"))], as: alice)
            let heard = try await service.pollNotifications(token: polled, cursor: cursor, timeout: .seconds(5))
            #expect(heard.notifications == [.databaseChanged])
            let freshHeard = try await service.pollNotifications(token: fresh, cursor: nil, timeout: .zero)
            #expect(freshHeard.notifications == [.databaseChanged])
        } catch {
            try await fixture.tearDown()
            throw error
        }
        try await fixture.tearDown()
    }

    @Test("an idle limit or a clock at the ends of the range never traps")
    func extremeTimesDoNotTrap() async throws {
        let clock = Mutex(Date.distantFuture)
        var fixture = try await ServiceFixture.make()
        try await fixture.service.close()
        fixture.service = CloudService(
            storage: try await SQLiteStorage(path: fixture.path, logger: quietLogger),
            notificationIdleLimit: .seconds(Int64.max), now: { clock.withLock { $0 } })
        do {
            let token = try await fixture.service.createNotificationToken(for: caller("alice"))
            clock.withLock { $0 = Date(timeIntervalSince1970: -1e300) }
            _ = try await fixture.service.pollNotifications(token: token, cursor: nil, timeout: .zero)
            _ = try await fixture.service.createNotificationToken(for: caller("alice"))
        } catch {
            try await fixture.tearDown()
            throw error
        }
        try await fixture.tearDown()
    }

    @Test func pollTimesOutEmptyAndUnknownTokensFail() async throws {
        let fixture = try await ServiceFixture.make()
        let token = try await fixture.service.createNotificationToken(for: caller("alice"))
        let batch = try await fixture.service.pollNotifications(token: token, cursor: nil, timeout: .milliseconds(20))
        #expect(batch.notifications.isEmpty)
        let again = try await fixture.service.pollNotifications(
            token: token, cursor: batch.cursor, timeout: .milliseconds(1))
        #expect(again.cursor == batch.cursor)
        do {
            _ = try await fixture.service.pollNotifications(token: "nope", cursor: nil, timeout: .zero)
            Issue.record("an unknown token was polled")
        } catch let error as CloudError {
            #expect(error.code == .notFound)
        }
        try await fixture.tearDown()
    }

    @Test func cancellingAPollEndsIt() async throws {
        let fixture = try await ServiceFixture.make()
        let service = fixture.service
        let token = try await service.createNotificationToken(for: caller("alice"))
        let poll = Task { try await service.pollNotifications(token: token, cursor: nil, timeout: .seconds(600)) }
        poll.cancel()
        #expect(try await poll.value.notifications.isEmpty)
        try await fixture.tearDown()
    }
}
