import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A clip with a downloaded file's path and an unsent draft that stay on
/// the device.
struct Clip: CloudCodable, Identifiable, Hashable {
    static var cloudLocalFields: Set<String> { ["localPath", "draft"] }
    var id: String
    var title: String
    var localPath: String? = nil
    var draft: String? = nil
    var cloudMetadata: RecordMetadata?
}

/// The same record type as an app version that synced `draft`.
struct SyncedDraftClip: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Clip" }
    var id: String
    var title: String
    var draft: String? = nil
    var cloudMetadata: RecordMetadata?
}

/// Issue #36, part 2: fields that never leave the device.
@Suite("Local-only fields", .timeLimit(.minutes(1)))
struct LocalFieldsTests {
    let devices = VersionedDevices(recordType: "Clip")
    let sent = SentOperations()

    func recordingEngine(directory: URL = temporaryDirectory("clips")) async throws -> SyncEngine<Clip> {
        try await devices.engine(
            Clip.self, directory: directory, database: sent.recording(devices.server.database(signedInAs: "alice")))
    }

    @Test("local fields are kept on the device and never sent")
    func neverSent() async throws {
        let device = try await recordingEngine()
        try await device.upload(Clip(id: "c", title: "Beach", localPath: "/tmp/beach.mov", draft: "Sunny"))
        try await device.sync()
        #expect(sent.on("c").map(\.record.modelFields) == [["id": .string("c"), "title": .string("Beach")]])
        try await devices.expectServerFields("c", ["id": .string("c"), "title": .string("Beach")])
        let model = try #require(await device.model(withIdentifier: "c"))
        #expect(model.localPath == "/tmp/beach.mov")
        #expect(model.draft == "Sunny")
    }

    @Test("a change of local fields alone sends nothing, yet the model and a restart show it")
    func localChangeIsNotAChangeToSync() async throws {
        let directory = temporaryDirectory("clips")
        let device = try await recordingEngine(directory: directory)
        try await device.upload(Clip(id: "c", title: "Beach", localPath: "/tmp/beach.mov"))
        try await device.sync()
        let tag = await devices.stored("c")?.changeTag
        sent.reset()

        var edit = try #require(await device.model(withIdentifier: "c"))
        edit.draft = "Half written"
        try await device.upload(edit)
        #expect(await device.pendingChangeCount == 0)
        #expect(await device.model(withIdentifier: "c")?.draft == "Half written")
        try await device.sync()
        #expect(sent.all.isEmpty)
        #expect(await devices.stored("c")?.changeTag == tag)
        await device.close()

        let reopened = try await devices.engine(Clip.self, directory: directory)
        let model = try #require(await reopened.model(withIdentifier: "c"))
        #expect(model.draft == "Half written")
        #expect(model.localPath == "/tmp/beach.mov")
        #expect(model.title == "Beach")
        #expect(await reopened.pendingChangeCount == 0)
    }

    @Test("a version arriving from another device keeps this device's local fields")
    func arrivingVersionKeepsThem() async throws {
        let directory = temporaryDirectory("clips")
        let device = try await devices.engine(Clip.self, directory: directory)
        try await device.upload(Clip(id: "c", title: "Beach", localPath: "/tmp/beach.mov", draft: "Sunny"))
        try await device.sync()

        let other = try await devices.engine(Clip.self)
        try await other.sync()
        let seen = try #require(await other.model(withIdentifier: "c"))
        #expect(seen.localPath == nil && seen.draft == nil)
        var renamed = seen
        renamed.title = "Beach at dusk"
        renamed.draft = "the other device's draft"
        try await other.upload(renamed)
        try await other.sync()

        try await device.sync()
        let model = try #require(await device.model(withIdentifier: "c"))
        #expect(model.title == "Beach at dusk")
        #expect(model.localPath == "/tmp/beach.mov")
        #expect(model.draft == "Sunny")
        await device.close()
        let reopened = try await devices.engine(Clip.self, directory: directory)
        #expect(await reopened.model(withIdentifier: "c")?.draft == "Sunny")
        #expect(await reopened.model(withIdentifier: "c")?.title == "Beach at dusk")
    }

    @Test("a conflict keeps the local fields of the device's own edit")
    func conflictKeepsThem() async throws {
        let device = try await devices.engine(Clip.self)
        try await device.upload(Clip(id: "c", title: "Beach"))
        try await device.sync()
        let other = try await devices.engine(Clip.self)
        try await other.sync()

        // Both edit offline; this device also keeps a draft.
        var mine = try #require(await device.model(withIdentifier: "c"))
        mine.title = "Mine"
        mine.draft = "kept here"
        try await device.upload(mine)
        var theirs = try #require(await other.model(withIdentifier: "c"))
        theirs.title = "Theirs"
        try await other.upload(theirs)
        try await other.sync()
        try await device.sync()

        let model = try #require(await device.model(withIdentifier: "c"))
        #expect(model.title == "Mine")
        #expect(model.draft == "kept here")
        try await devices.expectServerFields("c", ["id": .string("c"), "title": .string("Mine")])
    }

    @Test("an older copy uploaded while a change is queued on a newer version keeps the upload's local fields")
    func olderCopyMergedWithQueuedChange() async throws {
        let device = try await devices.engine(Clip.self)
        try await device.upload(Clip(id: "c", title: "Beach"))
        try await device.sync()
        let older = try #require(await device.model(withIdentifier: "c"))
        let other = try await devices.engine(Clip.self)
        try await other.sync()
        var theirs = try #require(await other.model(withIdentifier: "c"))
        theirs.title = "Beach at dusk"
        try await other.upload(theirs)
        try await other.sync()
        try await device.sync()

        // A change queued on the newer version, then the app saves a copy it kept of the older one.
        var queued = try #require(await device.model(withIdentifier: "c"))
        queued.title = "Mine"
        queued.draft = "first"
        try await device.upload(queued)
        var kept = older
        kept.draft = "second"
        kept.localPath = "/tmp/beach.mov"
        try await device.upload(kept)

        let model = try #require(await device.model(withIdentifier: "c"))
        #expect(model.title == "Mine")
        #expect(model.draft == "second")
        #expect(model.localPath == "/tmp/beach.mov")
        try await device.sync()
        try await devices.expectServerFields("c", ["id": .string("c"), "title": .string("Mine")])
        #expect(await device.model(withIdentifier: "c")?.draft == "second")
    }

    @Test("a field another app version syncs under a local field's name stays on the server")
    func serverFieldOfTheSameNameIsKept() async throws {
        let older = try await devices.engine(SyncedDraftClip.self)
        try await older.upload(SyncedDraftClip(id: "c", title: "Beach", draft: "shared draft"))
        try await older.sync()

        let device = try await devices.engine(Clip.self)
        try await device.sync()
        var edit = try #require(await device.model(withIdentifier: "c"))
        edit.title = "Beach at dusk"
        edit.draft = "mine only"
        try await device.upload(edit)
        try await device.sync()
        try await devices.expectServerFields(
            "c", ["id": .string("c"), "title": .string("Beach at dusk"), "draft": .string("shared draft")])
        #expect(await device.model(withIdentifier: "c")?.draft == "mine only")
    }

    @Test("deleting a model forgets its local fields")
    func deletingForgetsThem() async throws {
        let device = try await devices.engine(Clip.self)
        try await device.upload(Clip(id: "c", title: "Beach", draft: "Sunny"))
        try await device.sync()
        try await device.delete(identifiers: ["c"])
        try await device.sync()
        try await device.upload(Clip(id: "c", title: "Again"))
        try await device.sync()
        let model = try #require(await device.model(withIdentifier: "c"))
        #expect(model.draft == nil)
    }

    @Test("another user signing in does not see the previous user's local fields")
    func accountChangeForgetsThem() async throws {
        let directory = temporaryDirectory("clips")
        let device = try await devices.engine(Clip.self, directory: directory)
        try await device.upload(Clip(id: "c", title: "Alice's", draft: "private"))
        try await device.sync()
        await device.close()

        let bob = try await devices.engine(Clip.self, user: "bob")
        try await bob.upload(Clip(id: "c", title: "Bob's"))
        try await bob.sync()

        let reopened = try await devices.engine(Clip.self, user: "bob", directory: directory)
        try await reopened.sync()
        let model = try #require(await reopened.model(withIdentifier: "c"))
        #expect(model.title == "Bob's")
        #expect(model.draft == nil)
    }
}
