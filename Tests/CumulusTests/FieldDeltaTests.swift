import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// Version 1 of a page: a title only.
struct PageV1: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Page" }
    var id: String
    var title: String
    var cloudMetadata: RecordMetadata?
}

/// Version 2 adds a long text.
struct PageV2: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Page" }
    var id: String
    var title: String
    var text: String? = nil
    var cloudMetadata: RecordMetadata?
}

/// Issue #32 on the wire: what the engine sends for an edit, observed
/// before it reaches the server.
@Suite("Field deltas on the wire", .timeLimit(.minutes(1)))
struct FieldDeltaTests {
    let devices = VersionedDevices()
    let sent = SentOperations()

    /// Version 1 wrote the note with a body, version 2 rated it; `device`
    /// (version 1, through the recording database) has fetched both.
    func ratedNote(_ device: SyncEngine<NoteV1>) async throws {
        let writer = try await devices.engine(NoteV2.self)
        try await writer.upload(NoteV2(id: "n", title: "Draft", body: "text", rating: 5))
        try await writer.sync()
        try await device.sync()
        sent.reset()
    }

    @Test("an edit is an update carrying only the changed field")
    func updateCarriesOnlyTheChange() async throws {
        let v2 = try await devices.engine(
            NoteV2.self, database: sent.recording(devices.server.database(signedInAs: "alice")))
        try await v2.upload(NoteV2(id: "n", title: "Draft", body: "text", rating: 5))
        try await v2.sync()
        #expect(sent.on("n").map(\.type) == [.create])
        #expect(
            sent.on("n").first?.record.modelFields == [
                "id": .string("n"), "title": .string("Draft"), "body": .string("text"), "rating": .int64(5),
            ])
        sent.reset()

        var edit = try #require(await v2.model(withIdentifier: "n"))
        edit.title = "Final"
        try await v2.upload(edit)
        try await v2.sync()
        let operation = try #require(sent.on("n").first)
        #expect(sent.on("n").count == 1)
        #expect(operation.type == .update)
        #expect(operation.record.modelFields == ["title": .string("Final")])
        #expect(operation.clearedFields.isEmpty)
        try await devices.expectServerFields(
            "n", ["id": .string("n"), "title": .string("Final"), "body": .string("text"), "rating": .int64(5)])
    }

    @Test("a field set to nil goes as a cleared field of an update")
    func clearedFieldIsNamed() async throws {
        let v1 = try await devices.engine(
            NoteV1.self, database: sent.recording(devices.server.database(signedInAs: "alice")))
        try await ratedNote(v1)
        var edit = try #require(await v1.model(withIdentifier: "n"))
        edit.body = nil
        try await v1.upload(edit)
        try await v1.sync()
        let operation = try #require(sent.on("n").first)
        #expect(sent.on("n").count == 1)
        #expect(operation.type == .update)
        #expect(operation.record.modelFields.isEmpty)
        #expect(operation.clearedFields == ["body"])
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft"), "rating": .int64(5)])
    }

    @Test("without field clearing a clear is a whole replace that carries the fields the model does not know")
    func replaceWithoutFieldClearing() async throws {
        let database = sent.recording(devices.server.database(signedInAs: "alice"), supportsFieldClearing: false)
        #expect(!database.supportsFieldClearing)
        let v1 = try await devices.engine(NoteV1.self, database: database)
        try await ratedNote(v1)
        var edit = try #require(await v1.model(withIdentifier: "n"))
        edit.body = nil
        try await v1.upload(edit)
        try await v1.sync()
        let operation = try #require(sent.on("n").first)
        #expect(sent.on("n").count == 1)
        #expect(operation.type == .replace)
        #expect(
            operation.record.modelFields == ["id": .string("n"), "title": .string("Draft"), "rating": .int64(5)])
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft"), "rating": .int64(5)])
    }

    @Test("with field deltas turned off every edit is a whole replace that carries the fields the model does not know")
    func replaceWhenDeltasAreOff() async throws {
        let database = sent.recording(devices.server.database(signedInAs: "alice"))
        let v1 = try await devices.engine(NoteV1.self, database: database) { $0.sendsFieldDeltas = false }
        try await ratedNote(v1)
        var edit = try #require(await v1.model(withIdentifier: "n"))
        edit.title = "Final"
        try await v1.upload(edit)
        try await v1.sync()
        let operation = try #require(sent.on("n").first)
        #expect(sent.on("n").count == 1)
        #expect(operation.type == .replace)
        let expected: [String: FieldValue] = [
            "id": .string("n"), "title": .string("Final"), "body": .string("text"), "rating": .int64(5),
        ]
        #expect(operation.record.modelFields == expected)
        try await devices.expectServerFields("n", expected)
    }

    @Test("an edit whose record, with the fields the model does not know, would pass the limit is refused")
    func sizeCheckCountsUnknownFields() async throws {
        let pages = VersionedDevices(recordType: "Page")
        let v2 = try await pages.engine(PageV2.self)
        let v1 = try await pages.engine(PageV1.self)
        try await v2.upload(PageV2(id: "p", title: "Short", text: String(repeating: "t", count: 700_000)))
        try await v2.sync()
        try await v1.sync()

        var edit = try #require(await v1.model(withIdentifier: "p"))
        edit.title = String(repeating: "x", count: 400_000)
        await #expect(throws: RecordTooLargeError.self) { try await v1.upload(edit) }
        #expect(await v1.pendingChangeCount == 0)
        #expect(await v1.model(withIdentifier: "p")?.title == "Short")
        try await v1.sync()
        let stored = try #require(await pages.stored("p"))
        #expect(stored["title"] == .string("Short"))
        #expect(stored["text"] == .string(String(repeating: "t", count: 700_000)))

        // Under the limit with the unknown field, the edit goes through and keeps it.
        edit.title = String(repeating: "y", count: 200_000)
        try await v1.upload(edit)
        try await v1.sync()
        #expect(await pages.stored("p")?["title"] == .string(String(repeating: "y", count: 200_000)))
        #expect(await pages.stored("p")?["text"] == .string(String(repeating: "t", count: 700_000)))
    }
}
