import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// Another device that, while `isActive`, changes every record just
/// before each write of the engine arrives: the write always meets a
/// newer version.
final class Rival: @unchecked Sendable {
    // Safety: `active` and `writes` are guarded by `lock`.
    let database: InMemoryCloudDatabase
    private let lock = NSLock()
    private var active = false
    private var writes = 0

    init(_ database: InMemoryCloudDatabase) {
        self.database = database
    }

    var isActive: Bool {
        get { lock.withLock { active } }
        set { lock.withLock { active = newValue } }
    }

    var writeCount: Int { lock.withLock { writes } }

    /// Changes the records that `operations` are about to write.
    func interpose(_ operations: [RecordOperation], zoneID: ZoneID) async throws {
        guard isActive else { return }
        let current = try await database.lookupRecords(
            operations.map(\.record.recordName), zoneID: zoneID, desiredKeys: nil)
        let edits = current.compactMap { result -> RecordOperation? in
            guard case .record(var record) = result else { return nil }
            record["body"] = .string("rival edit \(UUID().uuidString)")
            return RecordOperation(.update, record)
        }
        _ = try await database.modifyRecords(edits, zoneID: zoneID, atomic: false)
        lock.withLock { writes += edits.count }
    }
}

/// A note whose resolver always keeps the server's version.
struct ServerWinsNote: CloudCodable, Identifiable, Hashable {
    var id: String
    var title: String
    var cloudMetadata: RecordMetadata?

    static func resolveConflict(client: Self, server: Self, ancestor: Self?) -> Self? { nil }
}

@Suite("SyncEngine conflicts")
struct SyncEngineConflictTests {
    @Test("a record that keeps conflicting is reported after the configured attempts and kept until changed")
    func conflictsAreBounded() async throws {
        let server = InMemoryCloudServer()
        let directory = temporaryDirectory("rival")
        let rival = Rival(server.database(signedInAs: "alice"))
        let database = InterposedDatabase(server.database(signedInAs: "alice")) { operations, zoneID in
            try await rival.interpose(operations, zoneID: zoneID)
        }
        let configuration = SyncConfiguration(
            automaticSync: false, retryPolicy: RetryPolicy(jitter: 0), maximumConflictAttempts: 3)
        var engine: SyncEngine<Note>? = try await SyncEngine<Note>(
            database: database, directory: directory, configuration: configuration)
        try await engine!.upload(Note(id: "n", title: "First"))
        try await engine!.sync()

        let events = Collected(engine!.events)
        rival.isActive = true
        var note = try #require(await engine!.model(withIdentifier: "n"))
        note.title = "Second"
        try await engine!.upload(note)
        try await engine!.sync()  // returns: the record is held back, not retried forever

        // One first try and three resolutions, each of them beaten by the rival.
        #expect(rival.writeCount == 4)
        #expect(await engine!.pendingChangeCount == 1)
        #expect(await engine!.refusedChanges["n"]?.code == .conflict)
        let reported = await events.waitUntil { values in
            values.contains { event in
                if case .recordFailed(recordName: "n", let error) = event { error.code == .conflict } else { false }
            }
        }
        #expect(reported)
        let resolutions = events.values.filter { $0 == .conflict(recordName: "n", resolution: .resolved) }
        #expect(resolutions.count == 3)

        // Nothing is lost: the held-back change is in the journal.
        engine = nil
        engine = try await SyncEngine<Note>(database: database, directory: directory, configuration: configuration)
        #expect(await engine!.pendingChangeCount == 1)
        #expect(await engine!.model(withIdentifier: "n")?.title == "Second")

        // Once the rival stops and the app changes the model again, it goes through.
        rival.isActive = false
        note = try #require(await engine!.model(withIdentifier: "n"))
        note.title = "Third"
        try await engine!.upload(note)
        try await engine!.sync()
        #expect(await engine!.pendingChangeCount == 0)
        let stored = await server.storedRecords(in: ZoneID(zoneName: "Note"), of: "alice")
        #expect(stored.first?["title"] == .string("Third"))
        #expect(stored.first?["body"] != .string(""), "the rival's body survives the merge")
    }

    @Test("a delete that meets a newer server version asks the resolver, which lets it stand")
    func deleteMeetsNewerVersionAndStands() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let (laptop, _, _) = try await devices.engine()
        try await phone.upload(Note(id: "n", title: "Title"))
        try await phone.sync()
        try await laptop.sync()

        var edited = try #require(await laptop.model(withIdentifier: "n"))
        edited.body = "edited on the laptop"
        try await laptop.upload(edited)
        try await laptop.sync()

        let events = Collected(phone.events)
        try await phone.delete(identifiers: ["n"])  // based on the version before the laptop's edit
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        #expect(await devices.server.storedRecords(in: ZoneID(zoneName: "Note"), of: "alice").isEmpty)
        let resolved = await events.waitUntil { $0.contains(.conflict(recordName: "n", resolution: .resolved)) }
        #expect(resolved)
        try await laptop.sync()
        #expect(await laptop.models.isEmpty)
    }

    @Test("a delete that meets a newer server version keeps the server's record when the resolver says nil")
    func deleteMeetsNewerVersionAndYields() async throws {
        let server = InMemoryCloudServer()
        let configuration = SyncConfiguration(automaticSync: false, retryPolicy: RetryPolicy(jitter: 0))
        let phone = try await SyncEngine<ServerWinsNote>(
            database: server.database(signedInAs: "alice"), directory: temporaryDirectory("phone"),
            configuration: configuration)
        let laptop = try await SyncEngine<ServerWinsNote>(
            database: server.database(signedInAs: "alice"), directory: temporaryDirectory("laptop"),
            configuration: configuration)
        try await phone.upload(ServerWinsNote(id: "n", title: "Title"))
        try await phone.sync()
        try await laptop.sync()
        var edited = try #require(await laptop.model(withIdentifier: "n"))
        edited.title = "Edited on the laptop"
        try await laptop.upload(edited)
        try await laptop.sync()

        let changes = Collected(phone.changes)
        let events = Collected(phone.events)
        try await phone.delete(identifiers: ["n"])
        #expect(await phone.model(withIdentifier: "n") == nil)
        try await phone.sync()

        #expect(await phone.pendingChangeCount == 0)
        #expect(await phone.model(withIdentifier: "n")?.title == "Edited on the laptop")
        let stored = await server.storedRecords(in: ZoneID(zoneName: "ServerWinsNote"), of: "alice")
        #expect(stored.map { $0["title"] } == [.string("Edited on the laptop")])
        let kept = await events.waitUntil { $0.contains(.conflict(recordName: "n", resolution: .keptServerVersion)) }
        #expect(kept)
        let restored = await changes.waitUntil { values in
            values.contains { if case .updated(let notes) = $0 { notes.map(\.id) == ["n"] } else { false } }
        }
        #expect(restored, "the app hears that the model is back")
    }
}
