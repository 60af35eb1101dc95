import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A tag: one record per name, whichever device creates it.
struct Tag: CloudCodable, Hashable {
    var name: String
    var color: String? = nil
    var noteCount: Int? = nil
    var cloudMetadata: RecordMetadata?
    var cloudIdentifier: String { CloudIdentifier.derived(for: Tag.self, from: [name]) }
}

/// Issue #36, part 4: one record for one real thing.
@Suite("Derived identifiers through the engine", .timeLimit(.minutes(1)))
struct DerivedIdentifierTests {
    let devices = VersionedDevices(recordType: "Tag")
    let work = CloudIdentifier.derived(for: Tag.self, from: ["work"])

    func storedTags() async -> [Record] {
        await devices.server.storedRecords(in: devices.zone, of: "alice").filter { $0.recordType == "Tag" }
    }

    @Test("two devices that create one tag offline make one record with both devices' fields")
    func createdTwice() async throws {
        let phone = try await devices.engine(Tag.self)
        let laptop = try await devices.engine(Tag.self)
        try await phone.upload(Tag(name: "work", color: "red"))
        try await laptop.upload(Tag(name: "work", noteCount: 3))
        let events = Collected(laptop.events)
        try await phone.sync()
        try await laptop.sync()
        try await phone.sync()

        #expect(await storedTags().map(\.recordName) == [work])
        let both = Tag(name: "work", color: "red", noteCount: 3)
        for device in [phone, laptop] {
            #expect(await device.pendingChangeCount == 0)
            let tags = await device.models.map { Tag(name: $0.name, color: $0.color, noteCount: $0.noteCount) }
            #expect(tags == [both])
        }
        try await devices.expectServerFields(
            work, ["name": .string("work"), "color": .string("red"), "noteCount": .int64(3)])
        // The second create met the first with no version in common: reported.
        #expect(await events.waitUntil { $0.contains { isMergedWithoutAncestor($0, self.work) } })
        await phone.close()
        await laptop.close()
    }

    @Test("fields both devices set differently on create take the later device's value")
    func createdTwiceDifferently() async throws {
        let phone = try await devices.engine(Tag.self)
        let laptop = try await devices.engine(Tag.self)
        try await phone.upload(Tag(name: "work", color: "red"))
        try await laptop.upload(Tag(name: "work", color: "blue"))
        try await phone.sync()
        try await laptop.sync()
        try await phone.sync()
        #expect(await storedTags().count == 1)
        #expect(await phone.models.map(\.color) == ["blue"])
        #expect(await laptop.models.map(\.color) == ["blue"])
        await phone.close()
        await laptop.close()
    }

    @Test("a tag deleted and created again is the same record name, created anew and seen by every device")
    func deletedAndCreatedAgain() async throws {
        let phone = try await devices.engine(Tag.self)
        let laptop = try await devices.engine(Tag.self)
        try await phone.upload(Tag(name: "work", color: "red", noteCount: 1))
        try await phone.sync()
        try await laptop.sync()
        try await phone.delete(identifiers: [work])
        try await phone.sync()
        try await laptop.sync()
        #expect(await laptop.models.isEmpty)
        #expect(await storedTags().isEmpty)

        try await phone.upload(Tag(name: "work", color: "green"))
        try await phone.sync()
        try await laptop.sync()
        #expect(await storedTags().map(\.recordName) == [work])
        try await devices.expectServerFields(work, ["name": .string("work"), "color": .string("green")])
        #expect(await laptop.models.map(\.color) == ["green"])
        #expect(await laptop.models.map(\.noteCount) == [nil])
        await phone.close()
        await laptop.close()
    }

    @Test("a device that creates a tag again before it hears of the deletion creates it anew")
    func createdAgainWhileDeleted() async throws {
        let phone = try await devices.engine(Tag.self)
        let laptop = try await devices.engine(Tag.self)
        try await phone.upload(Tag(name: "work", color: "red", noteCount: 1))
        try await phone.sync()
        try await laptop.sync()
        try await phone.delete(identifiers: [work])
        try await phone.sync()

        // The laptop still holds the old tag: the new one merges with it
        // (no ancestor, a value never synced), then meets the deletion.
        try await laptop.upload(Tag(name: "work", color: "green"))
        try await laptop.sync()
        try await phone.sync()
        #expect(await storedTags().map(\.recordName) == [work])
        try await devices.expectServerFields(
            work, ["name": .string("work"), "color": .string("green"), "noteCount": .int64(1)])
        #expect(await phone.models.map(\.color) == ["green"])
        #expect(await laptop.pendingChangeCount == 0)
        await phone.close()
        await laptop.close()
    }
}

func isMergedWithoutAncestor(_ event: SyncEvent, _ name: String) -> Bool {
    if case .mergedWithoutAncestor(recordName: name) = event { true } else { false }
}
