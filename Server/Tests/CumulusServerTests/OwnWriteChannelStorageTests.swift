import Cumulus
import CumulusServer
import Foundation
import SQLiteNIO
import Testing

/// A write that names its writer's channel is left out of that channel's
/// polls only, on every store: the zone log keeps each entry's origin and
/// since when that origin alone wrote the zone.
@Suite("Own writes left out of their channel's polls, in storage")
struct OwnWriteChannelStorageTests {
    static let otherZone = ZoneID(zoneName: "Other")

    @Test("own writes are left out; another device, zone or writer in between is heard", arguments: TestStore.available)
    func ownWritesAreLeftOut(_ store: TestStore) async throws {
        try await withStore(store) { services in
            let (writer, reader) = (services[0], services[services.count - 1])
            let alice = caller("_alice")
            let (token, cursor) = try await Self.channel(for: alice, on: writer)
            try await Self.write("a", as: alice, channel: token, on: writer)
            try await Self.write("b", as: alice, channel: token, on: writer)
            let quiet = try await reader.pollNotifications(token: token, cursor: cursor, timeout: .milliseconds(50))
            #expect(quiet.notifications.isEmpty)
            #expect(quiet.cursor != cursor)

            // Another writer between two own writes is heard from a cursor before them.
            try await Self.write("c", as: alice, channel: token, on: writer)
            try await Self.write("d", as: alice, on: writer)
            try await Self.write("e", as: alice, channel: token, on: writer)
            let between = try await reader.pollNotifications(token: token, cursor: quiet.cursor, timeout: .seconds(5))
            #expect(between.notifications == [.zoneChanged(notesZone, subscriptionID: "Notes"), .databaseChanged])

            // Another zone written by another device, beside an own write.
            try await Self.write("f", as: alice, channel: token, on: writer)
            try await Self.write("g", zone: Self.otherZone, as: alice, on: writer)
            let other = try await reader.pollNotifications(token: token, cursor: between.cursor, timeout: .seconds(5))
            #expect(other.notifications == [.zoneChanged(Self.otherZone, subscriptionID: "Other"), .databaseChanged])

            // Another channel of the same user hears the first channel's writes.
            let second = try await writer.createNotificationToken(for: alice)
            let secondCursor = try await reader.pollNotifications(token: second, cursor: nil, timeout: .zero).cursor
            try await Self.write("h", as: alice, channel: token, on: writer)
            let heard = try await reader.pollNotifications(token: second, cursor: secondCursor, timeout: .seconds(5))
            #expect(heard.notifications == [.zoneChanged(notesZone, subscriptionID: "Notes"), .databaseChanged])
        }
    }

    @Test("a channel of another user or database named on a write is ignored", arguments: TestStore.single)
    func foreignChannelsAreIgnored(_ store: TestStore) async throws {
        try await withStore(store) { services in
            let service = services[0]
            let (alice, bob) = (caller("_alice"), caller("_bob"))
            let (alicesToken, alicesCursor) = try await Self.channel(for: alice, on: service)
            _ = try await Self.channel(for: bob, on: service)
            // Bob names Alice's channel in his own database: nothing reaches her, nothing is kept.
            try await Self.write("b", as: bob, channel: alicesToken, on: service)
            let quiet = try await service.pollNotifications(
                token: alicesToken, cursor: alicesCursor, timeout: .milliseconds(50))
            #expect(quiet.notifications.isEmpty)
            // Alice names her private channel on a public write: her public channel hears it.
            let publicAlice = caller("_alice", scope: .public)
            let publicToken = try await service.createNotificationToken(for: publicAlice)
            _ = try await service.perform(
                .modifySubscriptions([
                    .save(
                        Subscription(subscriptionID: "q", query: RecordQuery(recordType: "Note"), firesOn: [.created]))
                ]), as: publicAlice)
            let publicCursor = try await service.pollNotifications(token: publicToken, cursor: nil, timeout: .zero)
                .cursor
            // Bob names Alice's public channel on his public write: she still hears it.
            try await Self.write(
                "p", zone: .defaultZone, as: caller("_bob", scope: .public), channel: publicToken, on: service)
            let heard = try await service.pollNotifications(
                token: publicToken, cursor: publicCursor, timeout: .seconds(5))
            #expect(heard.notifications.count == 1)
            // Then Alice's own write naming her private channel: heard on the public one.
            try await Self.write("q", zone: .defaultZone, as: publicAlice, channel: alicesToken, on: service)
            let own = try await service.pollNotifications(
                token: publicToken, cursor: heard.cursor, timeout: .seconds(5))
            #expect(own.notifications.count == 1)
        }
    }

    @Test("entries of stores without origins migrate to entries every poll hears", arguments: TestStore.single)
    func zoneLogMigrates(_ store: TestStore) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-origins-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let alice = caller("_alice")
        let services = try await store.makeServices(directory: directory)
        let token: String
        let cursor: String
        do {
            (token, cursor) = try await Self.channel(for: alice, on: services.services[0])
            try await Self.write("a", as: alice, channel: token, on: services.services[0])
        } catch {
            await services.close()
            throw error
        }
        for service in services.services { try await service.close() }
        // Back to today's schema, as a server of version twelve left it.
        try await Self.dropOrigins(store, directory: directory, database: services.database)
        let reopened = try await store.reopenServices(services, directory: directory)
        do {
            let service = reopened.services[0]
            // The entry lost its origin: the channel hears its own earlier write, as before.
            let batch = try await service.pollNotifications(token: token, cursor: cursor, timeout: .seconds(5))
            #expect(batch.notifications == [.zoneChanged(notesZone, subscriptionID: "Notes"), .databaseChanged])
            try await Self.write("b", as: alice, channel: token, on: service)
            let quiet = try await service.pollNotifications(
                token: token, cursor: batch.cursor, timeout: .milliseconds(50))
            #expect(quiet.notifications.isEmpty)
        } catch {
            await reopened.close()
            throw error
        }
        await reopened.close()
    }

    /// Takes the zone log back to version twelve's columns and the version back to twelve.
    static func dropOrigins(_ store: TestStore, directory: URL, database: PostgresURL?) async throws {
        if let database {
            try await PostgresTestDatabase.connect(to: database) { connection, logger in
                try await connection.query(
                    "ALTER TABLE zone_log DROP COLUMN origin, DROP COLUMN origin_since", logger: logger)
                try await connection.query("DELETE FROM cumulus_schema WHERE version = 13", logger: logger)
            }
            return
        }
        let connection = try await SQLiteConnection.open(
            storage: .file(path: directory.appendingPathComponent("cumulus.sqlite").path))
        do {
            for statement in [
                "ALTER TABLE zone_log DROP COLUMN origin", "ALTER TABLE zone_log DROP COLUMN origin_since",
                "PRAGMA user_version = 12",
            ] {
                _ = try await connection.query(statement)
            }
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    static func write(
        _ name: String, zone: ZoneID = notesZone, as who: Caller, channel: String? = nil, on service: CloudService
    ) async throws {
        let record = Record(recordType: "Note", recordName: name, zoneID: zone, fields: ["title": .string(name)])
        _ = try await service.answer(
            .modifyRecords(operations: [RecordOperation(.create, record)], zoneID: zone, atomic: false), as: who,
            credential: nil, channel: channel)
    }

    /// Alice's zones with their subscriptions, and a channel with its first cursor.
    static func channel(for who: Caller, on service: CloudService) async throws -> (String, String) {
        _ = try await service.perform(.modifyZones([.create(notesZone), .create(otherZone)]), as: who)
        _ = try await service.perform(
            .modifySubscriptions([
                .save(Subscription(subscriptionID: "Notes", zoneID: notesZone)),
                .save(Subscription(subscriptionID: "Other", zoneID: otherZone)),
            ]), as: who)
        let token = try await service.createNotificationToken(for: who)
        let cursor = try await service.pollNotifications(token: token, cursor: nil, timeout: .zero).cursor
        return (token, cursor)
    }

    private func withStore(_ store: TestStore, _ body: ([CloudService]) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-own-writes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
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
