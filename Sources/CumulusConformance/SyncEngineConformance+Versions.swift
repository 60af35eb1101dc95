import Cumulus
import Foundation
import Testing

// Issue #32 over every store: devices on different app versions never lose
// a field, whether the edit travels as a field delta or a whole record.
extension SyncEngineConformance {
    /// The zone both versions sync.
    var versionZone: ZoneID { ZoneID(zoneName: ConformanceNote.cloudRecordType) }

    /// The record's fields as a `records/lookup` from a fresh device of
    /// alice answers them, without the write lineage engines add (`cumulusWrites`).
    func serverFields(_ name: String) async throws -> [String: FieldValue]? {
        let device = try await backend.database(signedInAs: "alice")
        let record = try await device.lookupRecords([name], zoneID: versionZone, desiredKeys: nil).first?.record
        return record.map { record in record.fields.dictionary.filter { $0.key != "cumulusWrites" } }
    }

    /// The older version creates the note, the newer one rates it; both have synced.
    func ratedNote(_ older: SyncEngine<ConformanceNote>, _ newer: SyncEngine<RatedConformanceNote>) async throws {
        try await older.upload(ConformanceNote(id: "n", title: "Draft", body: "text", tag: "work"))
        try await older.sync()
        try await newer.sync()
        var rated = try #require(await newer.model(withIdentifier: "n"))
        rated.rating = 5
        try await newer.upload(rated)
        try await newer.sync()
    }

    func olderEditKeepsNewerField() async throws {
        let older = try await engine()
        let newer = try await engine(RatedConformanceNote.self)
        try await ratedNote(older, newer)
        try await older.sync()
        var edit = try #require(await older.model(withIdentifier: "n"))
        edit.title = "Final"
        try await older.upload(edit)
        try await older.sync()
        try await newer.sync()
        #expect(
            try await serverFields("n") == [
                "id": .string("n"), "title": .string("Final"), "body": .string("text"), "tag": .string("work"),
                "rating": .int64(5),
            ])
        #expect(
            await newer.model(withIdentifier: "n").map { [$0.title, $0.rating.map(String.init)] } == ["Final", "5"])
        await older.close()
        await newer.close()
    }

    func olderMergeKeepsNewerField() async throws {
        let older = try await engine()
        let newer = try await engine(RatedConformanceNote.self)
        try await older.upload(ConformanceNote(id: "n", title: "Draft", body: "text"))
        try await older.sync()
        try await newer.sync()
        // The older version edits offline, on the version before the rating.
        var offline = try #require(await older.model(withIdentifier: "n"))
        offline.body = "edited offline"
        try await older.upload(offline)
        var rated = try #require(await newer.model(withIdentifier: "n"))
        rated.rating = 4
        try await newer.upload(rated)
        try await newer.sync()
        try await older.sync()
        try await newer.sync()
        #expect(
            try await serverFields("n") == [
                "id": .string("n"), "title": .string("Draft"), "body": .string("edited offline"), "rating": .int64(4),
            ])
        #expect(await newer.model(withIdentifier: "n")?.body == "edited offline")
        #expect(await newer.model(withIdentifier: "n")?.rating == 4)
        #expect(await older.pendingChangeCount == 0)
        await older.close()
        await newer.close()
    }

    func olderClearKeepsNewerField() async throws {
        let older = try await engine()
        let newer = try await engine(RatedConformanceNote.self)
        try await ratedNote(older, newer)
        try await older.sync()
        var edit = try #require(await older.model(withIdentifier: "n"))
        edit.tag = nil
        try await older.upload(edit)
        try await older.sync()
        try await newer.sync()
        #expect(
            try await serverFields("n") == [
                "id": .string("n"), "title": .string("Draft"), "body": .string("text"), "rating": .int64(5),
            ])
        #expect(await newer.model(withIdentifier: "n")?.tag == nil)
        #expect(await newer.model(withIdentifier: "n")?.rating == 5)
        await older.close()
        await newer.close()
    }
}
