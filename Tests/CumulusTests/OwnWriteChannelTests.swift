import CloudCodable
import CloudProtocol
import Foundation
import Testing

@testable import CumulusServerCore
@testable import CumulusTesting

/// A write that names its writer's notification channel is left out of that
/// channel's polls, and of no other's: a rule of the core, over the
/// in-memory storage (the record server's tests run it on SQLite and
/// PostgreSQL).
@Suite("Own writes left out of their channel's polls, in memory")
struct OwnWriteChannelTests {
    let service = RecordService(storage: InMemoryStorage(), now: { Date() }, publish: { _ in })
    let alice = Caller(container: "iCloud.test", environment: .development, scope: .private, user: "_alice")
    let bob = Caller(container: "iCloud.test", environment: .development, scope: .private, user: "_bob")
    let notes = ZoneID(zoneName: "Notes")
    let other = ZoneID(zoneName: "Other")

    func write(_ name: String, in zone: ZoneID? = nil, as caller: Caller, channel: String? = nil) async throws {
        let zone = zone ?? notes
        let record = Record(recordType: "Note", recordName: name, zoneID: zone, fields: ["title": .string(name)])
        _ = try await service.answer(
            .modifyRecords(operations: [RecordOperation(.create, record)], zoneID: zone, atomic: false), as: caller,
            channel: channel)
    }

    /// Opens a channel for `caller` with a zone subscription on each zone, and its cursor.
    func channel(for caller: Caller, zones: [ZoneID]) async throws -> (token: String, cursor: String) {
        if !zones.isEmpty {
            _ = try await service.perform(.modifyZones(zones.map { .create($0) }), as: caller)
            _ = try await service.perform(
                .modifySubscriptions(zones.map { .save(Subscription(subscriptionID: $0.zoneName, zoneID: $0)) }),
                as: caller)
        }
        let token = try await service.openChannel(for: caller)
        let cursor = try await service.pollChannel(token: token, cursor: nil, timeout: .zero).cursor
        return (token, cursor)
    }

    func poll(_ token: String, _ cursor: String) async throws -> NotificationBatch {
        try await service.pollChannel(token: token, cursor: cursor, timeout: .milliseconds(20))
    }

    @Test("a write naming its channel is not heard by it, and the cursor moves past it")
    func ownWriteIsLeftOut() async throws {
        let (token, cursor) = try await channel(for: alice, zones: [notes])
        try await write("a", as: alice, channel: token)
        try await write("b", as: alice, channel: token)
        let quiet = try await poll(token, cursor)
        #expect(quiet.notifications.isEmpty)
        #expect(quiet.cursor != cursor)
        // The same user's other device (no channel named) is heard.
        try await write("c", as: alice)
        let heard = try await poll(token, quiet.cursor)
        #expect(heard.notifications == [.zoneChanged(notes, subscriptionID: "Notes"), .databaseChanged])
    }

    @Test("another writer between two own writes is heard, from a cursor before them")
    func writerInBetweenIsHeard() async throws {
        let (token, cursor) = try await channel(for: alice, zones: [notes])
        try await write("a", as: alice, channel: token)
        try await write("b", as: alice)
        try await write("c", as: alice, channel: token)
        #expect(try await poll(token, cursor).notifications.contains(.zoneChanged(notes, subscriptionID: "Notes")))
    }

    @Test("an own write that changed more than it named (a DELETE_SELF cascade) is heard")
    func cascadeIsHeard() async throws {
        let (token, cursor) = try await channel(for: alice, zones: [notes])
        try await write("parent", as: alice)
        let child = Record(
            recordType: "Note", recordName: "child", zoneID: notes,
            fields: ["parent": .reference(Reference(recordName: "parent", action: .deleteSelf))])
        _ = try await service.perform(
            .modifyRecords(operations: [RecordOperation(.create, child)], zoneID: notes, atomic: false), as: alice)
        let heard = try await poll(token, cursor)
        let parent = Record(recordType: "Note", recordName: "parent", zoneID: notes)
        _ = try await service.answer(
            .modifyRecords(operations: [RecordOperation(.forceDelete, parent)], zoneID: notes, atomic: false),
            as: alice, channel: token)
        #expect(try await poll(token, heard.cursor).notifications.contains(.databaseChanged))
        // The same delete without a cascade is left out.
        try await write("alone", as: alice)
        let quiet = try await poll(token, try await poll(token, heard.cursor).cursor)
        _ = try await service.answer(
            .modifyRecords(
                operations: [
                    RecordOperation(.forceDelete, Record(recordType: "Note", recordName: "alone", zoneID: notes))
                ],
                zoneID: notes, atomic: false),
            as: alice, channel: token)
        #expect(try await poll(token, quiet.cursor).notifications.isEmpty)
    }

    @Test("another device's own write is left out of its channel only")
    func otherChannelStillHears() async throws {
        let (mine, cursor) = try await channel(for: alice, zones: [notes])
        let theirs = try await service.openChannel(for: alice)
        try await write("a", as: alice, channel: theirs)
        #expect(try await poll(mine, cursor).notifications.contains(.zoneChanged(notes, subscriptionID: "Notes")))
    }

    @Test("an own write in one zone leaves another writer's zone heard")
    func otherZoneIsHeard() async throws {
        let (token, cursor) = try await channel(for: alice, zones: [notes, other])
        try await write("a", in: notes, as: alice, channel: token)
        try await write("b", in: other, as: alice)
        try await write("c", in: notes, as: alice, channel: token)
        let batch = try await poll(token, cursor)
        #expect(batch.notifications == [.zoneChanged(other, subscriptionID: "Other"), .databaseChanged])
    }

    @Test("another user's channel named on a write is ignored, and so is one of another database")
    func foreignChannelIsIgnored() async throws {
        let (alicesToken, alicesCursor) = try await channel(for: alice, zones: [notes])
        _ = try await channel(for: bob, zones: [notes])
        // Bob names Alice's channel: his database's log keeps no origin, hers hears nothing of it.
        try await write("b", as: bob, channel: alicesToken)
        #expect(try await poll(alicesToken, alicesCursor).notifications.isEmpty)
        #expect(try await origins(of: bob).allSatisfy { $0 == nil })
        // A public write naming Alice's private channel keeps no origin either.
        var publicAlice = alice
        publicAlice.scope = .public
        try await write("p", in: .defaultZone, as: publicAlice, channel: alicesToken)
        #expect(try await origins(of: publicAlice).allSatisfy { $0 == nil })
        // In the public database, Bob naming Alice's public channel does not silence it.
        let publicToken = try await service.openChannel(for: publicAlice)
        var publicBob = bob
        publicBob.scope = .public
        try await write("q", in: .defaultZone, as: publicBob, channel: publicToken)
        #expect(try await origins(of: publicBob).allSatisfy { $0 == nil })
    }

    @Test("a write naming no channel, or one the store forgot (a renewed store), is heard")
    func unknownChannelIsHeard() async throws {
        let (token, cursor) = try await channel(for: alice, zones: [notes])
        try await write("a", as: alice)
        let first = try await poll(token, cursor)
        #expect(first.notifications == [.zoneChanged(notes, subscriptionID: "Notes"), .databaseChanged])
        try await service.storage.write { transaction in
            _ = try await StoreRestores.takeNotice(of: "another store", in: transaction)
        }
        let (renewed, renewedCursor) = try await channel(for: alice, zones: [])
        try await write("b", as: alice, channel: token)
        #expect(try await poll(renewed, renewedCursor).notifications.contains(.databaseChanged))
        #expect(try await origins(of: alice).allSatisfy { $0 == nil })
    }

    @Test("the since of an origin follows the rule: the same origin keeps it, another resets it")
    func originSinceRule() {
        let first = ZoneLogEntry(zoneName: "z", serial: 5, deleted: false, origin: "c")
        #expect(ZoneLogEntry.originSince(of: first, after: nil) == 4)
        let kept = ZoneLogEntry(zoneName: "z", serial: 7, deleted: false, origin: "c", originSince: 4)
        #expect(
            ZoneLogEntry.originSince(
                of: kept, after: ZoneLogEntry(zoneName: "z", serial: 5, deleted: false, origin: "c", originSince: 2))
                == 2)
        #expect(ZoneLogEntry.originSince(of: kept, after: ZoneLogEntry(zoneName: "z", serial: 6, deleted: false)) == 6)
        #expect(
            ZoneLogEntry.originSince(
                of: kept, after: ZoneLogEntry(zoneName: "z", serial: 6, deleted: false, origin: "d", originSince: 1))
                == 6)
        #expect(ZoneLogEntry.originSince(of: ZoneLogEntry(zoneName: "z", serial: 8, deleted: false), after: kept) == 0)
        #expect(kept.isOnlyWrite(ofChannel: "c", after: 4))
        #expect(!kept.isOnlyWrite(ofChannel: "c", after: 3))
        #expect(!kept.isOnlyWrite(ofChannel: "d", after: 6))
    }

    /// The origins of the zone log of `caller`'s database.
    func origins(of caller: Caller) async throws -> [String?] {
        let key = DatabaseKey(
            container: caller.container, environment: caller.environment, scope: caller.scope,
            owner: caller.user ?? "")
        return try await service.storage.read { transaction in
            guard let database = try await transaction.database(key) else { return [] }
            return try await transaction.zoneLog(inDatabase: database.id, after: 0, limit: 100).map(\.origin)
        }
    }
}
