import Cumulus
import CumulusServer
import Foundation
import Testing

/// Two `cumulus serve` processes on one PostgreSQL database behave as one
/// server: writes are visible through both at once, a change tag wins once,
/// a zone's feed neither skips nor repeats, and a long poll on one hears a
/// write through the other.
@Suite("Two server processes on one PostgreSQL", .serialized, .enabled(if: PostgresTestDatabase.isEnabled))
struct MultiServerTests {
    /// Two servers on a fresh database, with users provisioned by the CLI.
    final class Pair: Sendable {
        let database: PostgresURL
        let servers: [ServeProcess]
        let apiToken: String
        let userTokens: [String: String]

        static func start(users: [String] = ["alice", "bob"]) async throws -> Pair {
            let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
            let database = try await PostgresTestDatabase.create()
            do {
                let store = [
                    "--postgres",
                    "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)",
                ]
                let apiToken = try await ServerCrashTests.lastLine(
                    of: executable, ["container", "add", "multi"] + store)
                var userTokens: [String: String] = [:]
                for user in users {
                    userTokens[user] = try await ServerCrashTests.lastLine(
                        of: executable, ["user", "add", user, "--container", "multi"] + store)
                }
                var servers: [ServeProcess] = []
                for _ in 0..<2 {
                    servers.append(
                        try await ServeProcess.start(executable: executable, store: store, container: "multi"))
                }
                return Pair(database: database, servers: servers, apiToken: apiToken, userTokens: userTokens)
            } catch {
                try? await PostgresTestDatabase.drop(database)
                throw error
            }
        }

        private init(database: PostgresURL, servers: [ServeProcess], apiToken: String, userTokens: [String: String]) {
            self.database = database
            self.servers = servers
            self.apiToken = apiToken
            self.userTokens = userTokens
        }

        /// A device of `user` talking to server `index`.
        func device(_ user: String, on index: Int, scope: DatabaseScope = .private) -> RemoteCloudDatabase {
            servers[index].database(apiToken: apiToken, webAuthToken: userTokens[user]!, scope: scope)
        }

        func stop() async {
            for server in servers { server.kill() }
            try? await PostgresTestDatabase.drop(database)
        }
    }

    static func with(_ body: (Pair) async throws -> Void) async throws {
        let pair = try await Pair.start()
        do {
            try await body(pair)
        } catch {
            await pair.stop()
            throw error
        }
        await pair.stop()
    }

    @Test("a write through one server is visible through the other at once")
    func writesAreVisibleThroughBoth() async throws {
        try await Self.with { pair in
            let first = pair.device("alice", on: 0)
            let second = pair.device("alice", on: 1)
            let zone = ZoneID(zoneName: "Shared")
            _ = try await first.modifyZones([.create(zone)])
            for round in 0..<10 {
                let (writer, reader) = round.isMultiple(of: 2) ? (first, second) : (second, first)
                let record = Record(
                    recordType: "Note", recordName: "note-\(round)", zoneID: zone, fields: ["n": .int64(Int64(round))])
                let saved = try #require(
                    try await writer.modifyRecords([RecordOperation(.create, record)], zoneID: zone, atomic: true)[0]
                        .record)
                let read = try await reader.lookupRecords([record.recordName], zoneID: zone, desiredKeys: nil)
                #expect(read[0].record == saved)
            }
            // The other user sees none of it through either server.
            for index in 0..<2 {
                let bob = pair.device("bob", on: index)
                let zones = try await bob.listZones()
                #expect(!zones.contains { $0.zoneID.zoneName == "Shared" })
            }
        }
    }

    @Test("an asset uploaded through one server downloads through the other, with the URLs of either")
    func assetsCrossServers() async throws {
        try await Self.with { pair in
            for (first, second) in [(0, 1), (1, 0)] {
                let writer = pair.device("alice", on: first)
                let reader = pair.device("alice", on: second)
                let name = "photo-\(first)"
                let targets = try await writer.requestAssetUploads(
                    [AssetUploadRequest(recordName: name, recordType: "Photo", fieldName: "image")],
                    zoneID: .defaultZone)
                // The upload URL one server gave works on the other.
                let bytes = AssetHTTP.randomBytes(1_500_000)
                let uploaded = try await AssetHTTP.upload(
                    bytes, to: try #require(targets.first?.url), on: pair.servers[second].baseURL)
                let asset = try #require(uploaded.uploadedAsset, "\(uploaded.status)")
                let record = Record(
                    recordType: "Photo", recordName: name, zoneID: .defaultZone, fields: ["image": .asset(asset)])
                _ = try await writer.modifyRecords(
                    [RecordOperation(.create, record)], zoneID: .defaultZone, atomic: true)
                // The download URL either server signs works on both.
                for device in [writer, reader] {
                    let found = try await device.lookupRecords([name], zoneID: .defaultZone, desiredKeys: nil)
                    let url = try #require(AssetHTTP.downloadURL(of: found.first?.record))
                    for server in pair.servers {
                        let downloaded = try await AssetHTTP.download(url, on: server.baseURL, range: "bytes=-1000000")
                        #expect(downloaded.status == 206)
                        #expect(downloaded.body == Array(bytes.suffix(1_000_000)))
                    }
                }
            }
        }
    }

    @Test("the same change tag sent through both servers at once wins exactly once")
    func sameChangeTagWinsOnce() async throws {
        try await Self.with { pair in
            let devices = [pair.device("alice", on: 0), pair.device("alice", on: 1)]
            let zone = ZoneID(zoneName: "Race")
            _ = try await devices[0].modifyZones([.create(zone)])
            var current = try #require(
                try await devices[0].modifyRecords(
                    [RecordOperation(.create, Record(recordType: "Counter", recordName: "c", zoneID: zone))],
                    zoneID: zone, atomic: true)[0].record)
            for round in 0..<25 {
                let base = current
                let results = try await withThrowingTaskGroup(of: (Int, RecordResult).self) { group in
                    for (index, device) in devices.enumerated() {
                        var edited = base
                        edited["writer"] = .string("server-\(index)-round-\(round)")
                        group.addTask {
                            (
                                index,
                                try await device.modifyRecords(
                                    [RecordOperation(.update, edited)], zoneID: zone, atomic: true)[0]
                            )
                        }
                    }
                    var results: [(Int, RecordResult)] = []
                    for try await result in group { results.append(result) }
                    return results.sorted { $0.0 < $1.0 }
                }
                let winners = results.filter { $0.1.record != nil }
                let losers = results.filter { $0.1.error?.code == .conflict }
                try #require(winners.count == 1 && losers.count == 1, "round \(round): \(results)")
                let winner = try #require(winners[0].1.record)
                #expect(winner["writer"] == .string("server-\(winners[0].0)-round-\(round)"))
                // The loser learns the winner's version, as a merge needs.
                #expect(losers[0].1.error?.serverRecord?.metadata?.changeTag == winner.metadata?.changeTag)
                let stored = try await devices[1 - winners[0].0].lookupRecords(["c"], zoneID: zone, desiredKeys: nil)
                #expect(stored[0].record == winner)
                current = winner
            }
        }
    }

    @Test("a zone's change feed read through both servers neither skips nor repeats a change")
    func feedIsExact() async throws {
        try await Self.with { pair in
            let zone = ZoneID(zoneName: "Feed")
            _ = try await pair.device("alice", on: 0).modifyZones([.create(zone)])
            let acknowledged = LockedBox<[String: String]>([:])
            let readers = [pair.device("alice", on: 0), pair.device("alice", on: 1)]
            let seen = LockedBox<[String: String]>([:])
            let repeats = LockedBox<[String]>([])

            @Sendable func pull(_ token: SyncToken?, from device: RemoteCloudDatabase) async throws -> SyncToken? {
                var token = token
                var more = true
                while more {
                    let page = try await device.fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: token)])[
                        0
                    ]
                    .get()
                    for case .record(let record) in page.records {
                        let tag = record.metadata?.changeTag ?? ""
                        seen.withLock { seen in
                            if seen[record.recordName] == tag {
                                repeats.withLock { $0.append("\(record.recordName)@\(tag)") }
                            }
                            seen[record.recordName] = tag
                        }
                    }
                    token = page.syncToken
                    more = page.moreComing
                }
                return token
            }

            // Four writers, two per server, each creating then updating its own records.
            let finished = LockedBox(0)
            let writers = (0..<4).map { writer in
                Task {
                    defer { finished.withLock { $0 += 1 } }
                    let device = pair.device("alice", on: writer % 2)
                    for batch in 0..<12 {
                        let names = (0..<5).map { "w\(writer)-r\((batch * 5 + $0) % 20)" }
                        let current = try await device.lookupRecords(names, zoneID: zone, desiredKeys: nil)
                        let operations = zip(names, current).map { name, result in
                            var record = result.record ?? Record(recordType: "Entry", recordName: name, zoneID: zone)
                            record["batch"] = .int64(Int64(batch))
                            return RecordOperation(result.record == nil ? .create : .update, record)
                        }
                        let results = try await device.modifyRecords(operations, zoneID: zone, atomic: true)
                        acknowledged.withLock { acknowledged in
                            for case .record(let record) in results {
                                acknowledged[record.recordName] = record.metadata?.changeTag
                            }
                        }
                    }
                }
            }
            // Meanwhile a reader follows the feed, alternating between the servers.
            var token: SyncToken?
            var turn = 0
            while finished.withLock({ $0 }) < writers.count {
                token = try await pull(token, from: readers[turn % 2])
                turn += 1
            }
            for writer in writers { try await writer.value }
            token = try await pull(token, from: readers[turn % 2])
            #expect(repeats.withLock { $0 }.isEmpty, "changes delivered twice: \(repeats.withLock { $0 })")
            #expect(seen.withLock { $0 } == acknowledged.withLock { $0 })
            #expect(acknowledged.withLock { $0.count } == 80)
        }
    }

    @Test("a share made through one server is accepted, read, written and heard through the other")
    func sharingAcrossServers() async throws {
        try await Self.with { pair in
            let owner = pair.device("alice", on: 0)
            let zone = ZoneID(zoneName: "Albums")
            _ = try await owner.modifyZones([.create(zone)])
            var album = Record(recordType: "Album", recordName: "a1", zoneID: zone)
            album.share = "share-a1"
            var photo = Record(recordType: "Photo", recordName: "p1", zoneID: zone, fields: ["n": .int64(1)])
            photo.parent = "a1"
            let bobName = try await pair.device("bob", on: 1).currentUser().userRecordName
            var share = Record(recordType: ShareDetails.recordType, recordName: "share-a1", zoneID: zone)
            share.shareDetails = ShareDetails(
                participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readWrite)])
            let saved = try await owner.modifyRecords(
                [RecordOperation(.create, album), RecordOperation(.create, photo), RecordOperation(.create, share)],
                zoneID: zone, atomic: true)
            let shortGUID = try #require(saved[2].record?.shareDetails?.shortGUID)

            // Bob accepts through the other server and listens there.
            let accepted = try await pair.device("bob", on: 1, scope: .public).accept(
                try await pair.device("bob", on: 1, scope: .public).shareMetadata(shortGUID: shortGUID))
            let shared = pair.device("bob", on: 1, scope: .shared)
            let notifications = shared.notifications()
            _ = await shared.notificationChannelsOpened()
            let heard = Task {
                for await notification in notifications where notification == .databaseChanged { return true }
                return false
            }
            let seen = try await shared.lookupRecords(["p1"], zoneID: accepted.zoneID, desiredKeys: nil)
            var edit = try #require(seen[0].record)
            #expect(edit.zoneID == accepted.zoneID)

            // Alice's write through server 0 reaches bob's poll on server 1.
            var aliceEdit = try #require(saved[1].record)
            aliceEdit["n"] = .int64(2)
            _ = try await owner.modifyRecords([RecordOperation(.update, aliceEdit)], zoneID: zone, atomic: true)
            let timeout = Task {
                try? await Task.sleep(for: .seconds(20))
                heard.cancel()
            }
            #expect(await heard.value, "bob's poll on server 1 did not hear alice's write through server 0")
            timeout.cancel()

            // Bob's write through server 1 is alice's through server 0.
            edit = try #require(
                try await shared.lookupRecords(["p1"], zoneID: accepted.zoneID, desiredKeys: nil)[0].record)
            edit["n"] = .int64(3)
            _ = try await shared.modifyRecords(
                [RecordOperation(.update, edit)], zoneID: accepted.zoneID, atomic: true)
            let read = try await owner.lookupRecords(["p1"], zoneID: zone, desiredKeys: nil)
            #expect(read[0].record?["n"] == .int64(3))
        }
    }

    /// An album of the engine test across servers.
    struct Album: CloudCodable, Identifiable {
        var id: String
        var cloudMetadata: RecordMetadata?
    }

    /// A photo of an album, with its picture as an asset.
    struct Photo: CloudCodable, Identifiable {
        var id: String
        var albumID: String
        var picture: CloudAsset
        var cloudMetadata: RecordMetadata?
        var cloudParentIdentifier: String? { albumID }
    }

    @Test("an owner's photo with a 5 MB picture, shared through one server, downloads on demand through the other")
    func sharedPictureAcrossServers() async throws {
        try await Self.with { pair in
            let folder = CumulusCommandTests.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: folder) }
            func engine<Model: CloudCodable>(
                _ type: Model.Type, _ name: String, _ database: RemoteCloudDatabase, zone: ZoneID? = nil
            ) async throws -> SyncEngine<Model> {
                var configuration = zone.map { SyncConfiguration(sharedZone: $0) } ?? SyncConfiguration()
                configuration.zoneName = "Albums"
                configuration.automaticSync = false
                return try await SyncEngine<Model>(
                    database: database, directory: folder.appendingPathComponent(name), configuration: configuration)
            }
            var generator = SystemRandomNumberGenerator()
            let bytes = Data((0..<5_000_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let albums = try await engine(Album.self, "albums", pair.device("alice", on: 0))
            let photos = try await engine(Photo.self, "photos", pair.device("alice", on: 0))
            let album = Album(id: "a1")
            try await albums.upload(album)
            try await photos.upload(Photo(id: "p1", albumID: "a1", picture: CloudAsset(data: bytes)))
            try await albums.sync()
            try await photos.sync()
            let bobName = try await pair.device("bob", on: 1).currentUser().userRecordName
            let share = try await albums.share(
                album, participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readOnly)])
            let shortGUID = try #require(share.shortGUID)

            let lobby = pair.device("bob", on: 1, scope: .public)
            let accepted = try await lobby.accept(try await lobby.shareMetadata(shortGUID: shortGUID))
            let bob = try await engine(
                Photo.self, "bob", pair.device("bob", on: 1, scope: .shared), zone: accepted.zoneID)
            try await bob.sync()
            let picture = try #require(await bob.model(withIdentifier: "p1")?.picture)
            #expect(await !bob.hasContents(of: picture), "the picture was downloaded before it was asked for")
            var progress: [Int64] = []
            var file: URL?
            for try await update in bob.download(picture) {
                switch update {
                case .progress(let completed, let total):
                    #expect(total == 5_000_000)
                    progress.append(completed)
                case .finished(let url): file = url
                }
            }
            #expect(progress.count > 1 && progress == progress.sorted() && progress.last == 5_000_000)
            #expect(try Data(contentsOf: try #require(file)) == bytes)
            await bob.close()
            await photos.close()
            await albums.close()
        }
    }

    @Test("a long poll on one server wakes for a write through the other")
    func longPollWakesAcrossServers() async throws {
        try await Self.with { pair in
            let listener = pair.device("alice", on: 0)
            let writer = pair.device("alice", on: 1)
            let notifications = listener.notifications()
            _ = await listener.notificationChannelsOpened()
            let heard = Task {
                for await notification in notifications where notification == .databaseChanged { return true }
                return false
            }
            _ = try await writer.modifyRecords(
                [RecordOperation(.create, Record(recordType: "Note", recordName: "ping", zoneID: .defaultZone))],
                zoneID: .defaultZone, atomic: true)
            // The poll itself answers empty after 25 s, so only a notification
            // from the other server can end this wait early.
            let timeout = Task {
                try? await Task.sleep(for: .seconds(20))
                heard.cancel()
            }
            #expect(await heard.value, "the poll on server 1 did not hear the write through server 2")
            timeout.cancel()
        }
    }

    @Test("a query subscription heard on one server fires for a public write through the other")
    func querySubscriptionAcrossServers() async throws {
        try await Self.with { pair in
            let listener = pair.device("bob", on: 0, scope: .public)
            let writer = pair.device("alice", on: 1, scope: .public)
            let subscription = Subscription(
                subscriptionID: "posts", query: RecordQuery(recordType: "Post"), firesOn: [.created])
            _ = try await listener.modifySubscriptions([.save(subscription)])
            let notifications = listener.notifications()
            _ = await listener.notificationChannelsOpened()
            let heard = Task { () -> CloudNotification? in
                for await notification in notifications {
                    if case .queryChanged = notification { return notification }
                }
                return nil
            }
            for (type, name) in [("Note", "skipped"), ("Post", "p1")] {
                _ = try await writer.modifyRecords(
                    [RecordOperation(.create, Record(recordType: type, recordName: name, zoneID: .defaultZone))],
                    zoneID: .defaultZone, atomic: false)
            }
            let timeout = Task {
                try? await Task.sleep(for: .seconds(20))
                heard.cancel()
            }
            let expected = CloudNotification.queryChanged(
                QueryNotification(subscriptionID: "posts", recordName: "p1", zoneID: .defaultZone, reason: .created))
            #expect(await heard.value == expected)
            timeout.cancel()
        }
    }
}
