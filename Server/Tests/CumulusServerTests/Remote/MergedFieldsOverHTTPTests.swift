import Cumulus
import CumulusServer
import Foundation
import Testing

/// A photo whose caption two devices may edit at once.
struct MergedCaption: CloudCodable, Identifiable {
    static var cloudTextMergedFields: Set<String> { ["caption"] }
    var id: String
    var caption: String
    var cloudMetadata: RecordMetadata?
}

/// A tag: one record per name, whichever device creates it.
struct NamedTag: CloudCodable, Identifiable {
    var id: String
    var name: String
    var color: String? = nil
    var uses: Int? = nil
    var cloudMetadata: RecordMetadata?

    init(name: String, color: String? = nil, uses: Int? = nil) {
        id = CloudIdentifier.derived(for: NamedTag.self, from: [name])
        self.name = name
        self.color = color
        self.uses = uses
    }
}

/// Issue #36, parts 3 and 4, end to end over HTTP on each store.
@Suite("Merged text and derived identifiers over HTTP")
struct MergedFieldsOverHTTPTests {
    func device<Model: CloudCodable>(_ type: Model.Type, on server: RunningServer) async throws -> SyncEngine<Model> {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-merge-\(UUID())")
        return try await SyncEngine<Model>(
            database: try await server.database(signedInAs: "alice"), directory: directory,
            configuration: SyncConfiguration(automaticSync: false))
    }

    @Test("two devices edit one caption offline and both keep both edits", arguments: TestStore.single)
    func captionEditsMerge(store: TestStore) async throws {
        let server = try await RunningServer.start(store: store)
        do {
            let phone = try await device(MergedCaption.self, on: server)
            let laptop = try await device(MergedCaption.self, on: server)
            try await phone.upload(MergedCaption(id: "p", caption: "Sunset over the bay\nTaken from the pier\n"))
            try await phone.sync()
            try await laptop.sync()

            var onPhone = try #require(await phone.model(withIdentifier: "p"))
            onPhone.caption = "Sunset over the old bay\nTaken from the pier\n"
            try await phone.upload(onPhone)
            var onLaptop = try #require(await laptop.model(withIdentifier: "p"))
            onLaptop.caption = "Sunset over the bay\nTaken from the north pier\n"
            try await laptop.upload(onLaptop)
            try await phone.sync()
            try await laptop.sync()
            try await phone.sync()

            let merged = "Sunset over the old bay\nTaken from the north pier\n"
            #expect(await phone.model(withIdentifier: "p")?.caption == merged)
            #expect(await laptop.model(withIdentifier: "p")?.caption == merged)
            await phone.close()
            await laptop.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("two devices create the same tag offline: one record, both devices' fields", arguments: TestStore.single)
    func sameTagIsOneRecord(store: TestStore) async throws {
        let server = try await RunningServer.start(store: store)
        do {
            let phone = try await device(NamedTag.self, on: server)
            let laptop = try await device(NamedTag.self, on: server)
            try await phone.upload(NamedTag(name: "work", color: "blue"))
            try await laptop.upload(NamedTag(name: "work", uses: 3))
            try await phone.sync()
            try await laptop.sync()
            try await phone.sync()

            for engine in [phone, laptop] {
                let tags = await engine.models
                #expect(tags.count == 1)
                #expect(tags.first?.name == "work" && tags.first?.color == "blue" && tags.first?.uses == 3)
            }
            let fresh = try await device(NamedTag.self, on: server)
            try await fresh.sync()
            #expect(await fresh.models.count == 1)
            await phone.close()
            await laptop.close()
            await fresh.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
