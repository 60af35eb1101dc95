import Cumulus
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An album of the demo's sharing story.
struct DemoAlbum: CloudCodable, Identifiable, Equatable {
    var id: String
    var title: String
    var cloudMetadata: RecordMetadata?

    static func == (lhs: DemoAlbum, rhs: DemoAlbum) -> Bool { lhs.id == rhs.id && lhs.title == rhs.title }
}

/// A photo of an album: the album is its parent, so sharing the album shares
/// it. Its picture, when it has one, is an asset beside the record.
struct DemoPhoto: CloudCodable, Identifiable, Equatable {
    var id: String
    var albumID: String
    var caption: String
    var picture: CloudAsset?
    var cloudMetadata: RecordMetadata?

    var cloudParentIdentifier: String? { albumID }

    static func == (lhs: DemoPhoto, rhs: DemoPhoto) -> Bool {
        lhs.id == rhs.id && lhs.albumID == rhs.albumID && lhs.caption == rhs.caption && lhs.picture == rhs.picture
    }
}

/// The users of the sharing story: who they are and how they sign in.
struct DemoPeople {
    var alice: String
    var bob: String
    var carol: String
    var carolRecordName: String
}

extension DemoWorld {
    /// A database of `scope` signed in with `webAuthToken`.
    func database(_ scope: DatabaseScope, webAuthToken: String) -> RemoteCloudDatabase {
        RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(baseURL: baseURL, container: container, scope: scope),
            credentials: .user(apiToken: apiToken, webAuthToken: webAuthToken))
    }

    /// An engine of `Model` for the zone `Albums`: of the user's private
    /// database, or, given `sharedZone`, of another user's through a share.
    func engine<Model: CloudCodable>(
        _ type: Model.Type, _ name: String, webAuthToken: String, sharedZone: ZoneID? = nil
    ) async throws -> SyncEngine<Model> {
        var configuration = sharedZone.map { SyncConfiguration(sharedZone: $0) } ?? SyncConfiguration()
        configuration.zoneName = "Albums"
        configuration.automaticSync = false
        configuration.retryPolicy = RetryPolicy(initialDelay: .milliseconds(100))
        return try await SyncEngine<Model>(
            database: database(sharedZone == nil ? .private : .shared, webAuthToken: webAuthToken),
            directory: directory.appendingPathComponent(name, isDirectory: true), configuration: configuration)
    }

    /// Alice shares an album with bob and carol; they accept, edit, are
    /// refused, removed and leave, each step checked.
    func tellSharing(_ people: DemoPeople) async throws -> Bool {
        var passed = true
        let albums = try await engine(DemoAlbum.self, "alice-albums", webAuthToken: people.alice)
        let photos = try await engine(DemoPhoto.self, "alice-photos", webAuthToken: people.alice)
        let holidays = DemoAlbum(id: "holidays", title: "Holidays")
        let beachPicture = Self.pictureBytes(count: 5_000_000)
        var share: Share?
        var link: URL?

        passed =
            try await step(
                "Alice shares an album with its two photos (the beach with its 5 MB picture): bob may add and edit (invited by email), carol may only look."
            ) {
                try await albums.upload(holidays)
                try await photos.upload([
                    DemoPhoto(
                        id: "beach", albumID: "holidays", caption: "The beach",
                        picture: CloudAsset(data: beachPicture)),
                    DemoPhoto(id: "harbour", albumID: "holidays", caption: "The harbour"),
                ])
                try await albums.sync()
                try await photos.sync()
                guard let album = await albums.model(withIdentifier: "holidays") else { return false }
                let made = try await albums.share(
                    album, title: "Holidays",
                    participants: [
                        ShareParticipant(lookupInfo: .email("bob@example.com"), permission: .readWrite),
                        ShareParticipant(lookupInfo: .user(people.carolRecordName), permission: .readOnly),
                    ])
                share = made
                guard let shortGUID = made.shortGUID else { return false }
                link = baseURL.appendingPathComponent("share").appendingPathComponent(shortGUID)
                output.write("  the link to send: \(link!.absoluteString)")
                return made.participants.count == 3
                    && made.participants.dropFirst().allSatisfy {
                        $0.acceptanceStatus == .pending
                    }
            } && passed
        guard let link, let share else { return false }

        var bobPhotos: SyncEngine<DemoPhoto>?
        var bobShare: Share?
        passed =
            try await step("Bob opens the link: it names the album and its owner; he accepts and sees the photos.") {
                let (page, response) = try await URLSession.shared.data(from: link)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                let pageNamesAlbum = String(decoding: page, as: UTF8.self).contains("Holidays")
                let invitation = try await database(.public, webAuthToken: people.bob).shareMetadata(for: link)
                output.write(
                    "  invitation: \"\(Share(invitation.share)?.title ?? "-")\", "
                        + "\(invitation.participantPermission.rawValue), \(invitation.participantStatus.rawValue)")
                let accepted = try await database(.public, webAuthToken: people.bob).accept(invitation)
                bobShare = Share(accepted.share)
                let engine = try await self.engine(
                    DemoPhoto.self, "bob-photos", webAuthToken: people.bob, sharedZone: accepted.zoneID)
                bobPhotos = engine
                try await engine.sync()
                let seen = Set(await engine.models.map(\.id))
                return status == 200 && pageNamesAlbum && invitation.participantPermission == .readWrite
                    && seen == ["beach", "harbour"]
            } && passed
        guard let bobPhotos, let bobShare else { return false }

        passed =
            try await step("Bob opens the beach photo: its picture downloads only now, showing its progress.") {
                guard let picture = await bobPhotos.model(withIdentifier: "beach")?.picture else { return false }
                let fetchedEarly = await bobPhotos.hasContents(of: picture)
                var updates = 0
                var file: URL?
                for try await update in bobPhotos.download(picture) {
                    switch update {
                    case .progress: updates += 1
                    case .finished(let url): file = url
                    }
                }
                guard let file else { return false }
                let bytes = try Data(contentsOf: file)
                output.write("  \(bytes.count) bytes in \(updates) progress updates")
                return !fetchedEarly && updates > 1 && bytes == beachPicture
            } && passed

        passed =
            try await step("Bob adds a photo to the album; alice's device shows it.") {
                try await bobPhotos.upload(DemoPhoto(id: "sunset", albumID: "holidays", caption: "Bob's sunset"))
                try await bobPhotos.sync()
                try await photos.sync()
                return await photos.model(withIdentifier: "sunset")?.caption == "Bob's sunset"
            } && passed

        var carolPhotos: SyncEngine<DemoPhoto>?
        passed =
            try await step(
                "Carol accepts and edits a caption: the server refuses it; her device reports it and keeps it."
            ) {
                let accepted = try await database(.public, webAuthToken: people.carol).accept(
                    try await database(.public, webAuthToken: people.carol).shareMetadata(for: link))
                let engine = try await self.engine(
                    DemoPhoto.self, "carol-photos", webAuthToken: people.carol, sharedZone: accepted.zoneID)
                carolPhotos = engine
                let events = engine.events
                try await engine.sync()
                guard var beach = await engine.model(withIdentifier: "beach") else { return false }
                beach.caption = "Carol was here"
                try await engine.upload(beach)
                try await engine.sync()
                let reported = await first(of: events) { event in
                    if case .recordFailed("beach", let error) = event { return error.code == .accessDenied }
                    return false
                }
                let refused = await engine.refusedChanges["beach"]
                output.write("  refused: \(refused?.reason ?? "-")")
                try await photos.sync()
                let aliceKept = await photos.model(withIdentifier: "beach")?.caption == "The beach"
                return reported && refused?.code == .accessDenied && aliceKept
            } && passed
        guard let carolPhotos else { return false }

        passed =
            try await step("Alice removes carol from the share: carol's copy of the album disappears.") {
                guard var current = try await albums.fetchShare(of: holidays) else { return false }
                current.removeParticipants { $0.isUser(people.carolRecordName) }
                _ = try await albums.saveShare(current)
                let events = carolPhotos.events
                try await carolPhotos.sync()
                let lost = await first(of: events) { if case .shareLost = $0 { true } else { false } }
                let empty = await carolPhotos.models.isEmpty
                return lost && empty
            } && passed

        passed =
            try await step("Bob leaves the share: his copy disappears, and alice keeps every photo.") {
                try await bobPhotos.leave(bobShare)
                try await bobPhotos.sync()
                try await photos.sync()
                let aliceHas = Set(await photos.models.map(\.id))
                let remaining = try await albums.fetchShare(of: holidays)?.participants.count ?? 0
                output.write("  the share now has \(remaining) participants, alice included")
                let bobEmpty = await bobPhotos.models.isEmpty
                return bobEmpty && aliceHas == ["beach", "harbour", "sunset"] && share.recordName == "share-holidays"
            } && passed

        await bobPhotos.close()
        await carolPhotos.close()
        await albums.close()
        await photos.close()
        return passed
    }

    /// Bytes that look like a picture's: no two neighbours alike, the same every run.
    static func pictureBytes(count: Int) -> Data {
        var state: UInt32 = 2_463_534_242
        return Data(
            (0..<count).map { _ in
                state ^= state << 13
                state ^= state >> 17
                state ^= state << 5
                return UInt8(truncatingIfNeeded: state)
            })
    }
}
