import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

@testable import CumulusTesting

@Suite("Console shares, subscriptions and channels")
struct ConsoleSharingTests {
    static let hostileTitle =
        "<script>alert(1)</script>\"onmouseover=x javascript:alert(2) "
        + String(
            repeating: "Ünïcødé ✓ ", count: 40)
    static let hostileEmail = "\"onmouseover=<script>carol@example.com"

    /// Alice shares her album root with bob (who accepts) and carol (who
    /// does not, invited by address too), beside a photo outside the album.
    static func seedAlbum(_ server: ConsoleTestServer) async throws -> (
        alice: String, bob: String, carol: String, shortGUID: String
    ) {
        let alice = try await server.server.user("alice").recordName
        let bob = try await server.server.user("bob").recordName
        let carol = try await server.server.user("carol").recordName
        _ = try await server.server.user("dave")
        let zone = ZoneID(zoneName: "Albums")
        var root = Record(recordType: "Album", recordName: "album", zoneID: zone, fields: ["t": .string("a")])
        root.share = "album-share"
        var photo = Record(recordType: "Photo", recordName: "photo", zoneID: zone, fields: ["t": .string("p")])
        photo.parent = "album"
        let outside = Record(recordType: "Photo", recordName: "outside", zoneID: zone, fields: ["t": .string("o")])
        var share = Record(recordType: ShareDetails.recordType, recordName: "album-share", zoneID: zone)
        share.fields[ShareDetails.titleField] = .string(hostileTitle)
        share.shareDetails = ShareDetails(
            publicPermission: .none,
            participants: [
                ShareParticipant(lookupInfo: .user(bob), permission: .readWrite),
                ShareParticipant(lookupInfo: .user(carol), permission: .readOnly),
                ShareParticipant(lookupInfo: .email(hostileEmail), permission: .readOnly),
            ])
        let saved = try await server.seed(user: "alice", zone: "Albums", records: [root, photo, outside, share])
        let handles = saved.compactMap { record in record.shareDetails?.shortGUID }
        let shortGUID = try #require(handles.first)
        let bobPublic = Caller(container: server.container, environment: .development, scope: .public, user: bob)
        guard
            case .shares(let results) = try await server.service.perform(
                .acceptShares([ShareLookup(shortGUID: shortGUID)]), as: bobPublic),
            case .share = results.first
        else { throw CloudError(.internalError, reason: "bob could not accept") }
        return (alice, bob, carol, shortGUID)
    }

    /// Whether `user`'s own lookup in their shared database finds the record.
    static func sees(_ name: String, user: String, owner: String, _ server: ConsoleTestServer) async throws -> Bool {
        let caller = Caller(container: server.container, environment: .development, scope: .shared, user: user)
        let request = CloudRequest.lookupRecords(
            recordNames: [name], zoneID: ZoneID(zoneName: "Albums", ownerRecordName: owner), desiredKeys: nil)
        guard case .records(let results) = try? await server.service.perform(request, as: caller) else {
            return false
        }
        return results.first?.record != nil
    }

    @Test(
        "a zone's shares show their participants, escaped, and say why each user does or does not see a record",
        arguments: TestStore.single)
    func sharesAndReach(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            let (alice, bob, carol, shortGUID) = try await Self.seedAlbum(server)
            let session = try await server.signIn()
            let zone = try await server.zoneParameters(user: "alice", zone: "Albums")

            // The records and zones pages link to the shares.
            let records = try await server.get(ConsoleTestServer.link("/console/records", zone), session: session)
            #expect(records.body.contains("href=\"/console/shares?"))

            let shares = try await server.get(ConsoleTestServer.link("/console/shares", zone), session: session)
            #expect(shares.status == 200)
            let body = shares.body
            #expect(!body.contains("<script>") && !body.contains("\"onmouseover"))
            #expect(body.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;onmouseover=x"))
            #expect(body.contains("&quot;onmouseover=&lt;script&gt;carol@example.com"))
            #expect(body.contains(">album<") && body.contains("READ_WRITE") && body.contains("OWNER"))
            // The shortGUID is the credential of a public share's URL: never shown.
            #expect(!body.contains(shortGUID))
            #expect(body.contains("<code>\(bob)</code></td><td></td><td>ACCEPTED</td><td>READ_WRITE</td>"))
            #expect(body.contains("<code>\(carol)</code></td><td></td><td>PENDING</td><td>READ_ONLY</td>"))

            // The record page names the share that covers a record under the root, and none for the other.
            let photo = try await server.get(
                ConsoleTestServer.link("/console/record", zone + [("record", "photo")]), session: session)
            #expect(photo.body.contains("The share of <code>album</code>"))
            #expect(photo.body.contains("href=\"/console/shares?"))
            #expect(photo.body.contains("older versions and their values are not kept"))
            #expect(photo.body.contains("Ancestors through"))
            #expect(!photo.body.contains(shortGUID))
            let outside = try await server.get(
                ConsoleTestServer.link("/console/record", zone + [("record", "outside")]), session: session)
            #expect(outside.body.contains("No share covers this record."))

            // Each answer is the user's own lookup, with the reason; the protocol agrees.
            let cases: [(viewer: String, record: String, reason: String, sees: Bool)] = [
                ("bob", "photo", "Visible: ", true), ("bob", "album", "Visible: ", true),
                ("carol", "photo", "Not accepted: ", false), ("bob", "outside", "Outside the share: ", false),
                ("dave", "photo", "Not a participant: ", false), (alice, "photo", "owns the zone", true),
            ]
            for item in cases {
                let reach = try await server.get(
                    ConsoleTestServer.link(
                        "/console/share-reach", zone + [("viewer", item.viewer), ("record", item.record)]),
                    session: session)
                #expect(reach.status == 200, "\(item)")
                #expect(reach.body.contains(item.reason), "\(item): \(reach.body)")
                #expect(!reach.body.contains("disagree"), "\(item)")
                #expect(!reach.body.contains(shortGUID), "\(item)")
                if item.viewer == alice { continue }
                let viewer = try await server.server.user(item.viewer).recordName
                #expect(try await Self.sees(item.record, user: viewer, owner: alice, server) == item.sees, "\(item)")
                #expect(reach.body.contains("answers the record.") == item.sees, "\(item)")
            }

            let stranger = try await server.get(
                ConsoleTestServer.link(
                    "/console/share-reach", zone + [("viewer", "<script>nobody"), ("record", "photo")]),
                session: session)
            #expect(stranger.status == 404 && !stranger.body.contains("<script>nobody"))

            // As bob, through his shared database, the record page names the same share.
            let bobShared = [
                ("container", server.container), ("environment", "development"), ("scope", "shared"), ("user", bob),
                ("zone", "Albums"), ("owner", alice), ("record", "photo"),
            ]
            let asBob = try await server.get(ConsoleTestServer.link("/console/record", bobShared), session: session)
            #expect(asBob.status == 200)
            #expect(asBob.body.contains("The share of <code>album</code>"))
            let zones = try await server.get(
                ConsoleTestServer.link("/console/zones", zone.filter { $0.0 != "zone" && $0.0 != "owner" }),
                session: session)
            #expect(zones.body.contains("href=\"/console/shares?"))
        }
    }

    @Test(
        "the user page lists subscriptions and open channels, never a channel's token or its hash",
        arguments: TestStore.single)
    func subscriptionsAndChannels(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            let alice = try await server.server.user("alice").recordName
            let caller = Caller(container: server.container, environment: .development, scope: .private, user: alice)
            _ = try await server.service.perform(.modifyZones([.create(ZoneID(zoneName: "Notes"))]), as: caller)
            let query = RecordQuery(recordType: "Note", filters: [QueryFilter("title", .beginsWith, .string("<b>x"))])
            let subscriptions = [
                Subscription(subscriptionID: "zone-sub", zoneID: ZoneID(zoneName: "Notes")),
                Subscription(
                    subscriptionID: "query-sub", query: query, firesOn: [.created, .deleted],
                    zoneID: ZoneID(zoneName: "Notes")),
            ]
            _ = try await server.service.perform(.modifySubscriptions(subscriptions.map { .save($0) }), as: caller)
            let token = try await server.service.rules.openChannel(for: caller)
            let hash = ServerSecrets.sha256Hex(token)

            let session = try await server.signIn()
            let page = try await server.get(
                ConsoleTestServer.link("/console/user", [("container", server.container), ("name", "alice")]),
                session: session)
            #expect(page.status == 200)
            #expect(page.body.contains("<code>zone-sub</code></td><td>zone</td>"))
            #expect(
                page.body.contains("<code>query-sub</code></td><td>query</td><td><code>Notes</code></td><td>Note</td>"))
            #expect(page.body.contains("title BEGINS_WITH &lt;b&gt;x"))
            #expect(page.body.contains("created, deleted"))
            #expect(page.body.contains("<td>development</td><td>private</td>"))
            #expect(!page.body.contains(token) && !page.body.contains(hash))
            #expect(!page.body.lowercased().contains(String(hash.prefix(16))))
        }
    }

    @Test("the share page's data is the owner's: another database is refused, a zone one cannot reach is not found")
    func onlyTheOwnersDatabase() async throws {
        try await ConsoleTestServer.with { server in
            let (alice, bob, _, _) = try await Self.seedAlbum(server)
            let session = try await server.signIn()
            let shared = [
                ("container", server.container), ("environment", "development"), ("scope", "shared"), ("user", bob),
                ("zone", "Albums"), ("owner", alice),
            ]
            let refused = try await server.get(ConsoleTestServer.link("/console/shares", shared), session: session)
            #expect(refused.status == 400)
            let missing = try await server.get(
                ConsoleTestServer.link("/console/shares", try await server.zoneParameters(user: "bob", zone: "Albums")),
                session: session)
            #expect(missing.status == 404)
            // Without a session, a redirect to sign in.
            let anonymous = try await server.get(
                ConsoleTestServer.link(
                    "/console/shares", try await server.zoneParameters(user: "alice", zone: "Albums")))
            #expect(anonymous.status == 303)
        }
    }

    @Test(
        "recently deleted records are the tombstones among the zone's last changes the user may see",
        arguments: TestStore.single)
    func recentlyDeleted(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            let (alice, bob, _, _) = try await Self.seedAlbum(server)
            let caller = Caller(container: server.container, environment: .development, scope: .private, user: alice)
            let zone = ZoneID(zoneName: "Albums")
            let deletions = ["photo", "outside"].map { name in
                RecordOperation(.forceDelete, Record(recordType: "Photo", recordName: name, zoneID: zone))
            }
            _ = try await server.service.perform(
                .modifyRecords(operations: deletions, zoneID: zone, atomic: true), as: caller)
            let session = try await server.signIn()
            let own = try await server.zoneParameters(user: "alice", zone: "Albums")
            let records = try await server.get(ConsoleTestServer.link("/console/records", own), session: session)
            #expect(records.body.contains("href=\"/console/deleted?"))
            let asAlice = try await server.get(ConsoleTestServer.link("/console/deleted", own), session: session)
            #expect(asAlice.status == 200)
            #expect(asAlice.body.contains("<code>photo</code>") && asAlice.body.contains("<code>outside</code>"))
            #expect(!asAlice.body.contains("<code>album</code>"), "a live record is no tombstone")
            let bobShared = [
                ("container", server.container), ("environment", "development"), ("scope", "shared"), ("user", bob),
                ("zone", "Albums"), ("owner", alice),
            ]
            let asBob = try await server.get(ConsoleTestServer.link("/console/deleted", bobShared), session: session)
            #expect(asBob.status == 200)
            #expect(asBob.body.contains("<code>photo</code>"), "the share covered it")
            #expect(!asBob.body.contains("<code>outside</code>"), "outside bob's share")
        }
    }

    @Test("the core's reads answer on the in-memory store as on the servers' stores")
    func inMemory() async throws {
        let service = RecordService(storage: InMemoryStorage(), now: { Date() }, publish: { _ in })
        let alice = Caller(container: "iCloud.test", environment: .development, scope: .private, user: "_alice")
        let bobPublic = Caller(container: "iCloud.test", environment: .development, scope: .public, user: "_bob")
        let zone = ZoneID(zoneName: "Albums")
        _ = try await service.perform(.modifyZones([.create(zone)]), as: alice)
        var root = Record(recordType: "Album", recordName: "album", zoneID: zone)
        root.share = "album-share"
        var photo = Record(recordType: "Photo", recordName: "photo", zoneID: zone)
        photo.parent = "album"
        var share = Record(recordType: ShareDetails.recordType, recordName: "album-share", zoneID: zone)
        share.fields[ShareDetails.titleField] = .string("Holidays")
        share.shareDetails = ShareDetails(
            publicPermission: .none,
            participants: [
                ShareParticipant(lookupInfo: .user("_bob"), permission: .readOnly),
                ShareParticipant(lookupInfo: .user("_carol"), permission: .readOnly),
            ])
        let operations = [root, photo, share, Record(recordType: "Photo", recordName: "outside", zoneID: zone)].map {
            RecordOperation(.create, $0)
        }
        guard
            case .records(let saved) = try await service.perform(
                .modifyRecords(operations: operations, zoneID: zone, atomic: true), as: alice)
        else { throw CloudError(.internalError, reason: "records/modify answered something else") }
        let handles = saved.compactMap { result in result.record?.shareDetails?.shortGUID }
        let shortGUID = try #require(handles.first)
        _ = try await service.perform(.acceptShares([ShareLookup(shortGUID: shortGUID)]), as: bobPublic)

        let shares = try await service.shares(in: zone, as: alice)
        #expect(shares.map(\.title) == ["Holidays"])
        let standing = try #require(try await service.recordStanding(named: "photo", in: zone, as: alice))
        #expect(standing.hierarchyShare?.recordName == "album-share" && standing.ancestors == ["album"])
        #expect(!standing.isDeleted && standing.serial <= standing.zoneSerial)
        let bob = try await service.shareReach(of: "photo", inZone: "Albums", owner: alice, viewer: "_bob")
        #expect(bob == .visible(share: "album-share", permission: .readOnly))
        let carol = try await service.shareReach(of: "photo", inZone: "Albums", owner: alice, viewer: "_carol")
        #expect(carol == .notAccepted(share: "album-share", status: .pending))
        #expect(
            try await service.shareReach(of: "outside", inZone: "Albums", owner: alice, viewer: "_bob")
                == .outsideShares)
        #expect(
            try await service.shareReach(of: "photo", inZone: "Albums", owner: alice, viewer: "_dave")
                == .notParticipant)

        _ = try await service.openChannel(for: alice)
        let channels = try await service.channels(ofUser: "_alice", container: "iCloud.test")
        #expect(channels.count == 1 && channels.first?.key.scope == .private)
        let footprint = try await service.footprint()
        #expect(footprint.databaseBytes == nil && footprint.assetCount == 0 && footprint.assetBytes == 0)
    }
}
