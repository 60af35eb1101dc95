import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// Issue #32: devices on different app versions never lose a field. Each
/// device is an engine of one model version; the server's record and every
/// device's model are checked field by field.
@Suite("Mixed app versions keep every field", .timeLimit(.minutes(1)))
struct MixedVersionTests {
    let devices = VersionedDevices()

    /// Version 1 creates a note, both devices sync, version 2 rates it and syncs.
    func ratedNote(
        _ v1: SyncEngine<NoteV1>, _ v2: SyncEngine<NoteV2>, title: String = "Draft", body: String? = nil
    ) async throws {
        try await v1.upload(NoteV1(id: "n", title: title, body: body))
        try await v1.sync()
        try await v2.sync()
        var rated = try #require(await v2.model(withIdentifier: "n"))
        rated.rating = 5
        try await v2.upload(rated)
        try await v2.sync()
    }

    @Test("an older version that fetched a newer field keeps it when it edits another")
    func editAfterFetchKeepsNewerField() async throws {
        let v1 = try await devices.engine(NoteV1.self)
        let v2 = try await devices.engine(NoteV2.self)
        try await ratedNote(v1, v2)

        try await v1.sync()
        var edit = try #require(await v1.model(withIdentifier: "n"))
        edit.title = "Final"
        try await v1.upload(edit)
        try await v1.sync()
        try await v2.sync()

        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Final"), "rating": .int64(5)])
        #expect(await v2.model(withIdentifier: "n")?.title == "Final")
        #expect(await v2.model(withIdentifier: "n")?.rating == 5)
        #expect(await v1.model(withIdentifier: "n")?.title == "Final")
        #expect(await v1.pendingChangeCount == 0)
        // A third device, on version 2, that starts from nothing.
        let fresh = try await devices.engine(NoteV2.self)
        try await fresh.sync()
        #expect(await fresh.model(withIdentifier: "n")?.rating == 5)
    }

    @Test("an older version's offline edit, merged on it against a newer field, keeps that field")
    func concurrentEditKeepsNewerField() async throws {
        let v1 = try await devices.engine(NoteV1.self)
        let v2 = try await devices.engine(NoteV2.self)
        try await v1.upload(NoteV1(id: "n", title: "Draft"))
        try await v1.sync()
        try await v2.sync()

        // Both edit the same version: version 1 has not heard of the rating.
        var offline = try #require(await v1.model(withIdentifier: "n"))
        offline.title = "Final"
        try await v1.upload(offline)
        var rated = try #require(await v2.model(withIdentifier: "n"))
        rated.rating = 5
        try await v2.upload(rated)
        try await v2.sync()
        try await v1.sync()
        try await v2.sync()

        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Final"), "rating": .int64(5)])
        #expect(await v2.model(withIdentifier: "n")?.title == "Final")
        #expect(await v2.model(withIdentifier: "n")?.rating == 5)
        #expect(await v1.model(withIdentifier: "n")?.title == "Final")
        #expect(await v1.pendingChangeCount == 0)
    }

    @Test("an older version restarted from its journal edits without losing a newer field")
    func editAfterRestartKeepsNewerField() async throws {
        let directory = temporaryDirectory("v1")
        let v2 = try await devices.engine(NoteV2.self)
        do {
            let v1 = try await devices.engine(NoteV1.self, directory: directory)
            try await ratedNote(v1, v2)
            try await v1.sync()
            await v1.close()
        }
        let restarted = try await devices.engine(NoteV1.self, directory: directory)
        var edit = try #require(await restarted.model(withIdentifier: "n"))
        edit.title = "Final"
        try await restarted.upload(edit)
        try await restarted.sync()
        try await v2.sync()

        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Final"), "rating": .int64(5)])
        #expect(await v2.model(withIdentifier: "n")?.rating == 5)
        #expect(await v2.model(withIdentifier: "n")?.title == "Final")
    }

    @Test("an older version's edit queued before a restart and sent after it keeps a newer field")
    func pendingEditAcrossRestartKeepsNewerField() async throws {
        let directory = temporaryDirectory("v1")
        let v2 = try await devices.engine(NoteV2.self)
        do {
            let v1 = try await devices.engine(NoteV1.self, directory: directory)
            try await ratedNote(v1, v2)
            try await v1.sync()
            var edit = try #require(await v1.model(withIdentifier: "n"))
            edit.title = "Final"
            try await v1.upload(edit)
            await v1.close()
        }
        let restarted = try await devices.engine(NoteV1.self, directory: directory)
        #expect(await restarted.pendingChangeCount == 1)
        try await restarted.sync()
        try await v2.sync()

        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Final"), "rating": .int64(5)])
        #expect(await v2.model(withIdentifier: "n")?.rating == 5)
    }

    @Test("a field a version sets to nil is cleared everywhere; the fields it does not know stay")
    func nilClearsOnlyThatField() async throws {
        let v1 = try await devices.engine(NoteV1.self)
        let v2 = try await devices.engine(NoteV2.self)
        let otherV2 = try await devices.engine(NoteV2.self)
        try await ratedNote(v1, v2, body: "text")

        try await v1.sync()
        var cleared = try #require(await v1.model(withIdentifier: "n"))
        #expect(cleared.body == "text")
        cleared.body = nil
        try await v1.upload(cleared)
        try await v1.sync()
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft"), "rating": .int64(5)])

        try await v2.sync()
        var unrated = try #require(await v2.model(withIdentifier: "n"))
        #expect(unrated.body == nil)
        unrated.rating = nil
        try await v2.upload(unrated)
        try await v2.sync()
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft")])

        try await v1.sync()
        try await otherV2.sync()
        #expect(
            await otherV2.model(withIdentifier: "n").map { [$0.title, $0.body, $0.rating.map(String.init)] } == [
                "Draft", nil, nil,
            ])
        #expect(await v1.model(withIdentifier: "n").map { [$0.title, $0.body] } == ["Draft", nil])
    }

    @Test("a field a newer version removed from its model, and an older one still writes, survives its edits")
    func removedFieldSurvivesNewerEdits() async throws {
        let v1 = try await devices.engine(NoteV1.self)
        let v3 = try await devices.engine(NoteV3.self)
        try await v1.upload(NoteV1(id: "n", title: "Draft", body: "written by v1"))
        try await v1.sync()
        try await v3.sync()

        var edit = try #require(await v3.model(withIdentifier: "n"))
        edit.title = "Renamed on v3"
        edit.color = "blue"
        try await v3.upload(edit)
        try await v3.sync()
        try await devices.expectServerFields(
            "n",
            [
                "id": .string("n"), "title": .string("Renamed on v3"), "body": .string("written by v1"),
                "color": .string("blue"),
            ])

        // Version 1 goes on writing the body; version 3 edits again, concurrently.
        try await v1.sync()
        var body = try #require(await v1.model(withIdentifier: "n"))
        #expect(body.body == "written by v1")
        body.body = "rewritten by v1"
        try await v1.upload(body)
        var again = try #require(await v3.model(withIdentifier: "n"))
        again.color = "green"
        try await v3.upload(again)
        try await v1.sync()
        try await v3.sync()
        try await v1.sync()

        try await devices.expectServerFields(
            "n",
            [
                "id": .string("n"), "title": .string("Renamed on v3"), "body": .string("rewritten by v1"),
                "color": .string("green"),
            ])
        #expect(await v1.model(withIdentifier: "n")?.body == "rewritten by v1")
        #expect(await v3.model(withIdentifier: "n")?.color == "green")
    }

    @Test("three versions on three devices edit one record: every version's fields survive the others' edits")
    func threeVersionsKeepEachOthersFields() async throws {
        let v1 = try await devices.engine(NoteV1.self)
        let v2 = try await devices.engine(NoteV2.self)
        let v3 = try await devices.engine(NoteV3.self)
        try await v1.upload(NoteV1(id: "n", title: "Draft", body: "b0"))
        try await v1.sync()
        try await v2.sync()
        try await v3.sync()

        // One round in turn, each device fetching before it edits.
        try await edit(v2) { $0.rating = 4 }
        try await edit(v3) { $0.color = "red" }
        try await edit(v1) { $0.body = "b1" }
        try await devices.expectServerFields(
            "n",
            [
                "id": .string("n"), "title": .string("Draft"), "body": .string("b1"), "rating": .int64(4),
                "color": .string("red"),
            ])

        // Then all three offline at once, on the same version.
        try await v2.sync()
        try await v3.sync()
        try await queue(v1) { $0.title = "Title from v1" }
        try await queue(v2) { $0.rating = 2 }
        try await queue(v3) { $0.color = "teal" }
        for device in 0..<6 {
            switch device % 3 {
            case 0: try await v1.sync()
            case 1: try await v2.sync()
            default: try await v3.sync()
            }
        }
        let expected: [String: FieldValue] = [
            "id": .string("n"), "title": .string("Title from v1"), "body": .string("b1"), "rating": .int64(2),
            "color": .string("teal"),
        ]
        try await devices.expectServerFields("n", expected)
        #expect(await v1.model(withIdentifier: "n").map { [$0.title, $0.body] } == ["Title from v1", "b1"])
        #expect(
            await v2.model(withIdentifier: "n").map { [$0.title, $0.body, $0.rating.map(String.init)] } == [
                "Title from v1", "b1", "2",
            ])
        #expect(
            await v3.model(withIdentifier: "n").map { [$0.title, $0.color, $0.rating.map(String.init)] } == [
                "Title from v1", "teal", "2",
            ])
        #expect(await v1.pendingChangeCount + v2.pendingChangeCount + v3.pendingChangeCount == 0)
    }

    /// Fetches, edits the note and sends the edit.
    func edit<Model: CloudCodable>(_ engine: SyncEngine<Model>, _ change: (inout Model) -> Void) async throws {
        try await engine.sync()
        try await queue(engine, change)
        try await engine.sync()
    }

    /// Edits the note as the device knows it, without syncing.
    func queue<Model: CloudCodable>(_ engine: SyncEngine<Model>, _ change: (inout Model) -> Void) async throws {
        var model = try #require(await engine.model(withIdentifier: "n"))
        change(&model)
        try await engine.upload(model)
    }
}

/// Issue #32 across a share: the owner and a participant run different
/// versions of the app.
@Suite("Mixed app versions in a shared zone", .timeLimit(.minutes(1)))
struct MixedVersionSharingTests {
    let server = InMemoryCloudServer()
    let zone = ZoneID(zoneName: "Notes")

    func engine<Model: CloudCodable>(_ type: Model.Type, _ user: String, sharedZone: ZoneID? = nil) async throws
        -> SyncEngine<Model>
    {
        var configuration = sharedZone.map { SyncConfiguration(sharedZone: $0) } ?? SyncConfiguration(zoneName: "Notes")
        configuration.automaticSync = false
        configuration.retryPolicy = RetryPolicy(jitter: 0)
        return try await SyncEngine<Model>(
            database: server.database(scope: sharedZone == nil ? .private : .shared, signedInAs: user),
            directory: temporaryDirectory(user), configuration: configuration)
    }

    @Test("a participant on an older version edits a shared note: the owner's newer field stays")
    func participantOnOlderVersionKeepsOwnersField() async throws {
        let alice = try await engine(NoteV2.self, "alice")
        try await alice.upload(NoteV2(id: "n1", title: "Groceries", rating: 5))
        try await alice.sync()
        let share = try await alice.shareZone(
            title: "Alice's notes", participants: [ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite)])
        let publicDatabase = server.database(scope: .public, signedInAs: "bob")
        let accepted = try await publicDatabase.accept(
            try await publicDatabase.shareMetadata(shortGUID: try #require(share.shortGUID)))
        let bob = try await engine(NoteV1.self, "bob", sharedZone: accepted.zoneID)
        try await bob.sync()

        var edit = try #require(await bob.model(withIdentifier: "n1"))
        edit.title = "Groceries and more"
        try await bob.upload(edit)
        try await bob.sync()
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "n1")?.rating == 5)
        #expect(await alice.model(withIdentifier: "n1")?.title == "Groceries and more")

        // Concurrently: the owner re-rates while the participant edits offline.
        var offline = try #require(await bob.model(withIdentifier: "n1"))
        offline.body = "milk"
        try await bob.upload(offline)
        var rerated = try #require(await alice.model(withIdentifier: "n1"))
        rerated.rating = 3
        try await alice.upload(rerated)
        try await alice.sync()
        try await bob.sync()
        try await alice.sync()

        let stored = await server.storedRecords(in: zone, of: "alice").first { $0.recordName == "n1" }
        #expect(
            stored?.modelFields == [
                "id": .string("n1"), "title": .string("Groceries and more"), "body": .string("milk"),
                "rating": .int64(3),
            ])
        #expect(await alice.model(withIdentifier: "n1")?.rating == 3)
        #expect(await alice.model(withIdentifier: "n1")?.body == "milk")
        #expect(await bob.pendingChangeCount == 0)
    }
}

/// A change queued by an earlier version of the app meets a conflict after
/// the update (found by the simulation's long mode, history 2576).
@Suite("A queued change of an earlier version survives a merge", .timeLimit(.minutes(1)))
struct QueuedEditAcrossUpdateTests {
    let devices = VersionedDevices()

    @Test("an edit version 1 queued of a field version 3 dropped survives a conflict after the update")
    func queuedEditOfDroppedFieldSurvivesConflict() async throws {
        let directory = temporaryDirectory("updated")
        let other = try await devices.engine(NoteV3.self)
        do {
            let v1 = try await devices.engine(NoteV1.self, directory: directory)
            try await v1.upload(NoteV1(id: "n", title: "Draft", body: "old"))
            try await v1.sync()
            var edit = try #require(await v1.model(withIdentifier: "n"))
            edit.body = "new"
            try await v1.upload(edit)
            await v1.close()
        }
        try await other.sync()
        var retitled = try #require(await other.model(withIdentifier: "n"))
        retitled.title = "Final"
        try await other.upload(retitled)
        try await other.sync()

        let updated = try await devices.engine(NoteV3.self, directory: directory)
        #expect(await updated.pendingChangeCount == 1)
        try await updated.sync()

        try await devices.expectServerFields(
            "n", ["id": .string("n"), "title": .string("Final"), "body": .string("new")])
        #expect(await updated.pendingChangeCount == 0)
    }

    /// Found by the simulation's long mode, history 1757 of mixed versions.
    @Test("an edit version 1 queued on a create whose answer was lost survives a conflict after the update")
    func queuedEditOnCreateInDoubtSurvivesConflict() async throws {
        let directory = temporaryDirectory("updated")
        let other = try await devices.engine(NoteV3.self)
        do {
            let handle = devices.server.database(signedInAs: "alice")
            let v1 = try await devices.engine(NoteV1.self, directory: directory, database: handle) {
                $0.retryPolicy = RetryPolicy(jitter: 0, maximumAttempts: 1)
            }
            try await v1.sync()
            try await v1.upload(NoteV1(id: "n", title: "Draft", body: "old"))
            handle.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
            await #expect(throws: CloudError.self) { try await v1.sync() }
            // The create arrived; this device does not know it, and edits the body on top of it.
            var edit = try #require(await v1.model(withIdentifier: "n"))
            #expect(edit.cloudMetadata?.changeTag == nil)
            edit.body = "new"
            try await v1.upload(edit)
            await v1.close()
        }
        try await other.sync()
        var retitled = try #require(await other.model(withIdentifier: "n"))
        retitled.title = "Final"
        try await other.upload(retitled)
        try await other.sync()

        // Version 3 does not declare the body; the conflict must keep the edit version 1 queued.
        let updated = try await devices.engine(NoteV3.self, directory: directory)
        try await updated.sync()
        try await devices.expectServerFields(
            "n", ["id": .string("n"), "title": .string("Final"), "body": .string("new")])
        #expect(await updated.pendingChangeCount == 0)
    }

    @Test("a rating version 2 cleared stays cleared when version 3, which reads none as 0, merges it")
    func clearedFieldStaysClearedThroughDefault() async throws {
        let directory = temporaryDirectory("updated")
        let other = try await devices.engine(NoteV2.self)
        do {
            let v2 = try await devices.engine(NoteV2.self, directory: directory)
            try await v2.upload(NoteV2(id: "n", title: "Draft", rating: 5))
            try await v2.sync()
            var cleared = try #require(await v2.model(withIdentifier: "n"))
            cleared.rating = nil
            try await v2.upload(cleared)
            await v2.close()
        }
        try await other.sync()
        var rated = try #require(await other.model(withIdentifier: "n"))
        rated.rating = 33
        try await other.upload(rated)
        try await other.sync()

        // Version 3 resolves for the local change, which reads as rating 0:
        // what goes out is the change as version 2 queued it, the rating cleared.
        let updated = try await devices.engine(RequiredRatingNote.self, directory: directory)
        try await updated.sync()

        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft")])
        #expect(await updated.model(withIdentifier: "n")?.rating == 0)
        #expect(await updated.pendingChangeCount == 0)
    }
}

/// A version that made the rating required: a record without one reads
/// as 0 (its upgrade path), and a conflict keeps the local change.
struct RequiredRatingNote: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Note" }
    var id: String
    var title: String
    var rating: Int
    var cloudMetadata: RecordMetadata?

    private enum CodingKeys: String, CodingKey {
        case id, title, rating
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        rating = try container.decodeIfPresent(Int.self, forKey: .rating) ?? 0
    }

    static func resolveConflict(client: Self, server: Self, ancestor: Self?) -> Self? { client }
}
