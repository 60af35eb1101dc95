import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

private struct PhotoAlbum: CloudCodable, Identifiable, Hashable {
    var id: String
    var title = ""
    var cloudMetadata: RecordMetadata?
}

private struct AlbumPhoto: CloudCodable, Identifiable, Hashable {
    var id: String
    /// Deleting the album deletes the photo.
    var album: CloudReference<PhotoAlbum>
    /// The album must exist when the photo is saved.
    var shownIn: CloudReference<PhotoAlbum>? = nil
    var cloudMetadata: RecordMetadata?
}

/// A model that refers to models of its own type.
private struct Item: CloudCodable, Identifiable, Hashable {
    var id: String
    var parent: CloudReference<Item>? = nil
    var seeAlso: [CloudReference<Item>] = []
    var cloudMetadata: RecordMetadata?
}

/// A model with a plain reference, which may name a zone.
private struct Link: CloudCodable, Identifiable, Hashable {
    var id: String
    var target: Reference
    var cloudMetadata: RecordMetadata?
}

/// The identifiers that `.deleted` changes named.
private func deletedNames<Model>(_ changes: [ModelChange<Model>]) -> Set<String> {
    var names = Set<String>()
    for case .deleted(let deleted) in changes { names.formUnion(deleted) }
    return names
}

@Suite("SyncEngine references")
struct SyncEngineReferenceTests {
    let server = InMemoryCloudServer()
    let zoneName = "Library"

    private func engine<Model: CloudCodable>(
        _ type: Model.Type, directory: URL, user: String = "alice"
    ) async throws -> SyncEngine<Model> {
        var configuration = SyncConfiguration(automaticSync: false, retryPolicy: RetryPolicy(jitter: 0))
        configuration.zoneName = zoneName
        return try await SyncEngine<Model>(
            database: server.database(signedInAs: user), directory: directory, configuration: configuration)
    }

    @Test("deleting an album deletes its photos, which the photos' engine reports and drops")
    func deleteSelfAcrossEngines() async throws {
        let albums = try await engine(PhotoAlbum.self, directory: temporaryDirectory("albums"))
        let photos = try await engine(AlbumPhoto.self, directory: temporaryDirectory("photos"))
        let holidays = PhotoAlbum(id: "a1", title: "Holidays")
        try await albums.upload([holidays, PhotoAlbum(id: "a2", title: "Work")])
        try await albums.sync()
        try await photos.upload([
            AlbumPhoto(id: "p1", album: CloudReference(holidays, action: .deleteSelf)),
            AlbumPhoto(id: "p2", album: CloudReference(holidays, action: .deleteSelf)),
            AlbumPhoto(id: "p3", album: CloudReference(identifier: "a2", action: .deleteSelf)),
            AlbumPhoto(id: "p4", album: CloudReference(holidays)),
        ])
        try await photos.sync()
        let changes = Collected(photos.changes)

        try await albums.delete([holidays])
        try await albums.sync()
        try await photos.sync()
        #expect(await photos.models.map(\.id) == ["p3", "p4"])
        #expect(await changes.waitUntil { deletedNames($0) == ["p1", "p2"] })
        #expect(await albums.models.map(\.id) == ["a2"])
    }

    @Test("a chain of DELETE_SELF references in one engine goes with its root")
    func deleteSelfInOneEngine() async throws {
        let items = try await engine(Item.self, directory: temporaryDirectory("items"))
        let root = Item(id: "root")
        try await items.upload([
            root, Item(id: "child", parent: CloudReference(root, action: .deleteSelf)),
            Item(id: "grandchild", parent: CloudReference(identifier: "child", action: .deleteSelf)),
            Item(id: "other", seeAlso: [CloudReference(root)]),
        ])
        try await items.sync()
        let changes = Collected(items.changes)
        try await items.delete([root])
        try await items.sync()
        #expect(await items.models.map(\.id) == ["other"])
        #expect(
            await changes.waitUntil { values in
                deletedNames(values) == ["root", "child", "grandchild"]
            })
        #expect(
            await server.storedRecords(in: ZoneID(zoneName: zoneName), of: "alice").map(\.recordName).sorted()
                .filter { $0 != ZoneMarker.recordName } == ["other"])
    }

    @Test("a VALIDATE reference to a missing record is refused, kept across a restart, and sent once it appears")
    func validateWaitsForTarget() async throws {
        let photosDirectory = temporaryDirectory("photos")
        var photos: SyncEngine<AlbumPhoto>? = try await engine(AlbumPhoto.self, directory: photosDirectory)
        let events = Collected(photos!.events)
        let photo = AlbumPhoto(
            id: "p1", album: CloudReference(identifier: "a1"),
            shownIn: CloudReference(identifier: "a1", action: .validate))
        try await photos!.upload(photo)
        try await photos!.sync()
        #expect(await photos!.refusedChanges["p1"]?.code == .validatingReferenceError)
        #expect(await photos!.pendingChangeCount == 1)
        #expect(await photos!.models.map(\.id) == ["p1"])
        #expect(
            await events.waitUntil { values in
                values.contains {
                    if case .recordFailed("p1", let error) = $0 {
                        error.code == .validatingReferenceError
                    } else {
                        false
                    }
                }
            })
        await photos!.close()
        photos = nil

        let reopened = try await engine(AlbumPhoto.self, directory: photosDirectory)
        #expect(await reopened.refusedChanges["p1"]?.code == .validatingReferenceError)
        server.resetRequestCounts()
        try await reopened.sync()
        #expect(server.requestCount(of: .modifyRecords) == 0)

        // Another engine's album appears: the photo goes with the next sync.
        let albums = try await engine(PhotoAlbum.self, directory: temporaryDirectory("albums"))
        try await albums.upload(PhotoAlbum(id: "a1"))
        try await albums.sync()
        try await reopened.sync()
        #expect(await reopened.refusedChanges.isEmpty)
        #expect(await reopened.pendingChangeCount == 0)
        let stored = await server.storedRecords(in: ZoneID(zoneName: zoneName), of: "alice")
        #expect(stored.contains { $0.recordName == "p1" })
    }

    @Test("a change refused for its VALIDATE reference is sent again once its target is uploaded here, or re-uploaded")
    func validateRetriedOnLocalUpload() async throws {
        let items = try await engine(Item.self, directory: temporaryDirectory("items"))
        let dangling = Item(id: "b", parent: CloudReference(identifier: "a", action: .validate))
        try await items.upload(dangling)
        try await items.sync()
        #expect(await items.refusedChanges["b"]?.code == .validatingReferenceError)
        // Uploaded again unchanged: tried again, and refused again.
        try await items.upload(dangling)
        #expect(await items.refusedChanges.isEmpty)
        try await items.sync()
        #expect(await items.refusedChanges["b"]?.code == .validatingReferenceError)

        try await items.upload(Item(id: "a"))
        #expect(await items.refusedChanges.isEmpty)
        try await items.sync()
        #expect(await items.pendingChangeCount == 0)
        #expect(await items.models.map(\.id) == ["a", "b"])
    }

    @Test("a reference to another zone is refused at upload, and nothing is queued")
    func crossZoneReferenceRefused() async throws {
        let directory = temporaryDirectory("links")
        var links: SyncEngine<Link>? = try await engine(Link.self, directory: directory)
        let elsewhere = Link(id: "l1", target: Reference(recordName: "x", zoneID: ZoneID(zoneName: "Elsewhere")))
        await #expect {
            try await links!.upload(elsewhere)
        } throws: { error in
            (error as? SyncEngineError)?.code == .crossZoneReference
        }
        let otherOwner = Link(
            id: "l2", target: Reference(recordName: "x", zoneID: ZoneID(zoneName: zoneName, ownerRecordName: "_bob")))
        await #expect(throws: SyncEngineError.self) { try await links!.upload([otherOwner]) }
        #expect(await links!.pendingChangeCount == 0)
        // The engine's own zone, named or not, is fine.
        try await links!.upload([
            Link(id: "l3", target: Reference(recordName: "x", zoneID: ZoneID(zoneName: zoneName))),
            Link(id: "l4", target: Reference(recordName: "x")),
        ])
        await links!.close()
        links = nil
        let reopened = try await engine(Link.self, directory: directory)
        #expect(await reopened.models.map(\.id) == ["l3", "l4"])
        try await reopened.sync()
        #expect(await reopened.pendingChangeCount == 0)
    }

    @Test("in a shared zone, the owner's delete cascades to the participant's engine; its VALIDATE refusals wait")
    func referencesInSharedZone() async throws {
        let albums = try await engine(PhotoAlbum.self, directory: temporaryDirectory("albums"))
        let photos = try await engine(AlbumPhoto.self, directory: temporaryDirectory("photos"))
        let holidays = PhotoAlbum(id: "a1")
        try await albums.upload(holidays)
        try await albums.sync()
        try await photos.upload(AlbumPhoto(id: "p1", album: CloudReference(holidays, action: .deleteSelf)))
        try await photos.sync()
        let share = try await albums.shareZone(
            participants: [ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite)])
        let bobPublic = server.database(scope: .public, signedInAs: "bob")
        let accepted = try await bobPublic.accept(
            try await bobPublic.shareMetadata(shortGUID: try #require(share.shortGUID)))
        var configuration = SyncConfiguration(sharedZone: accepted.zoneID)
        configuration.automaticSync = false
        let bobPhotos = try await SyncEngine<AlbumPhoto>(
            database: server.database(scope: .shared, signedInAs: "bob"), directory: temporaryDirectory("bob"),
            configuration: configuration)
        try await bobPhotos.sync()
        #expect(await bobPhotos.models.map(\.id) == ["p1"])
        let changes = Collected(bobPhotos.changes)

        try await bobPhotos.upload(
            AlbumPhoto(
                id: "p2", album: CloudReference(holidays, action: .deleteSelf),
                shownIn: CloudReference(identifier: "a2", action: .validate)))
        try await bobPhotos.sync()
        #expect(await bobPhotos.refusedChanges["p2"]?.code == .validatingReferenceError)

        try await albums.delete([holidays])
        try await albums.sync()
        try await albums.upload(PhotoAlbum(id: "a2"))
        try await albums.sync()
        try await bobPhotos.sync()
        #expect(await changes.waitUntil { deletedNames($0) == ["p1"] })
        // The album it waited for appeared: p2 was sent (and, its own album gone, is there alone).
        #expect(await bobPhotos.refusedChanges.isEmpty)
        #expect(await bobPhotos.models.map(\.id) == ["p2"])
        try await photos.sync()
        #expect(await photos.models.map(\.id) == ["p2"])
    }
}
