import Cumulus
import CumulusServer
import Foundation
import Synchronization
import Testing

/// Notification channels live in storage: they outlive the server that made
/// them and serve every server on the same storage.
@Suite("Notification channels in storage")
struct ChannelStorageTests {
    @Test("a channel made on one server is polled on the other, and hears writes through either")
    func pollOnAnotherServer() async throws {
        try await withStore(.twoPostgresServers) { services in
            let alice = caller("_alice")
            let token = try await services[0].createNotificationToken(for: alice)
            try await services[1].createZone(as: alice)
            let first = try await services[1].pollNotifications(token: token, cursor: nil, timeout: .seconds(5))
            #expect(first.notifications == [.databaseChanged])

            // A poll waiting on server 2 wakes for a write through server 1.
            let waiting = Task {
                try await services[1].pollNotifications(token: token, cursor: first.cursor, timeout: .seconds(20))
            }
            try await Task.sleep(for: .milliseconds(200))
            _ = try await services[0].modify([RecordOperation(.create, note("a"))], as: alice)
            #expect(try await waiting.value.notifications == [.databaseChanged])
        }
    }

    @Test("a restart between two polls loses no change", arguments: TestStore.single)
    func restartLosesNothing(_ store: TestStore) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-channels-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let alice = caller("_alice")
        var stores = try await store.makeServices(directory: directory)
        let token: String
        let cursor: String
        do {
            let service = stores.services[0]
            token = try await service.createNotificationToken(for: alice)
            try await service.createZone(as: alice)
            _ = try await service.perform(
                .modifySubscriptions([.save(Subscription(subscriptionID: "notes", zoneID: notesZone))]), as: alice)
            cursor = try await service.pollNotifications(token: token, cursor: nil, timeout: .zero).cursor
            // A write after the last poll, then the server stops.
            _ = try await service.modify([RecordOperation(.create, note("while-away"))], as: alice)
            try await service.close()
        } catch {
            await stores.close()
            throw error
        }
        stores = try await store.reopenServices(stores, directory: directory)
        do {
            let heard = try await stores.services[0].pollNotifications(token: token, cursor: cursor, timeout: .zero)
            #expect(heard.notifications == [.zoneChanged(notesZone, subscriptionID: "notes"), .databaseChanged])
            let next = try await stores.services[0].pollNotifications(
                token: token, cursor: heard.cursor, timeout: .milliseconds(50))
            #expect(next.notifications.isEmpty)
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }

    @Test("a channel no poll uses for the idle limit is gone; one in use stays", arguments: TestStore.single)
    func idleChannelsExpire(_ store: TestStore) async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-channels-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try await store.makeServices(
            directory: directory, notificationIdleLimit: .seconds(600), now: { clock.withLock { $0 } })
        do {
            let service = stores.services[0]
            let idle = try await service.createNotificationToken(for: caller("_alice"))
            let used = try await service.createNotificationToken(for: caller("_alice"))
            for _ in 0..<3 {
                clock.withLock { $0 += 300 }
                _ = try await service.pollNotifications(token: used, cursor: nil, timeout: .zero)
            }
            await #expect(throws: CloudError.self) {
                _ = try await service.pollNotifications(token: idle, cursor: nil, timeout: .zero)
            }
            _ = try await service.pollNotifications(token: used, cursor: nil, timeout: .zero)
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }

    private func withStore(_ store: TestStore, _ body: ([CloudService]) async throws -> Void) async throws {
        guard TestStore.available.contains(store) else { return }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-channels-\(UUID().uuidString)")
        let stores = try await store.makeServices(directory: directory)
        do {
            try await body(stores.services)
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }
}
