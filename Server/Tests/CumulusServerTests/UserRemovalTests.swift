import Cumulus
import CumulusServer
import Foundation
import Testing

/// `cumulus user remove`: the user's credentials go at once, and their data
/// is kept or deleted by the protocol's rules, on SQLite and PostgreSQL.
@Suite("Removing a user")
struct UserRemovalTests {
    static let container = "iCloud.removal"
    static let albums = ZoneID(zoneName: "Albums")
    static let trips = ZoneID(zoneName: "Trips")

    static func who(_ user: String, _ scope: DatabaseScope = .private) -> Caller {
        Caller(container: container, environment: .development, scope: scope, user: user)
    }

    /// Runs `body` on a fresh store with a container and three users.
    static func with(
        _ store: TestStore, _ body: (CloudService, _ alice: String, _ bob: String, _ carol: String) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-removal-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let services = try await store.makeServices(directory: directory)
        do {
            let service = services.services[0]
            _ = try await service.addContainer(named: container)
            let alice = try await service.addUser(named: "alice", container: container).userRecordName
            let bob = try await service.addUser(named: "bob", container: container).userRecordName
            let carol = try await service.addUser(named: "carol", container: container).userRecordName
            try await body(service, alice, bob, carol)
        } catch {
            await services.close()
            throw error
        }
        await services.close()
    }

    /// Shares `zone` of `owner` with anyone holding its link, and returns the shortGUID.
    static func shareZone(_ zone: ZoneID, of owner: String, _ service: CloudService) async throws -> String {
        _ = try await service.perform(.modifyZones([.create(zone)]), as: who(owner))
        var share = Record(recordType: ShareDetails.recordType, recordName: ShareDetails.zoneShareName, zoneID: zone)
        share.shareDetails = ShareDetails(publicPermission: .readOnly, participants: [])
        let saved = try await service.modify(
            [RecordOperation(.create, note("in-\(zone.zoneName)", zone: zone)), RecordOperation(.create, share)],
            zone: zone, as: who(owner))
        let shortGUID = saved.compactMap { $0.record?.shareDetails?.shortGUID }.first
        return try #require(shortGUID)
    }

    static func accept(_ shortGUID: String, as user: String, _ service: CloudService) async throws {
        guard
            case .shares(let results) = try await service.perform(
                .acceptShares([ShareLookup(shortGUID: shortGUID)]), as: who(user, .public))
        else { throw CloudError(.internalError, reason: "not shares") }
        guard case .share = try #require(results.first) else {
            throw CloudError(.internalError, reason: "accepting failed: \(results)")
        }
    }

    static func sharedZones(of user: String, _ service: CloudService) async throws -> [ZoneID] {
        guard case .zones(let zones) = try await service.perform(.listZones, as: who(user, .shared)) else {
            throw CloudError(.internalError, reason: "not zones")
        }
        return zones.map(\.zoneID)
    }

    @Test(
        "--delete-data deletes the user's zones, owned shares, public records and place in shares",
        arguments: TestStore.single)
    func deleteData(_ store: TestStore) async throws {
        try await Self.with(store) { service, alice, bob, carol in
            // Alice shares Albums with Bob, takes part in Carol's Trips, and publishes a poster.
            let albumsShare = try await Self.shareZone(Self.albums, of: alice, service)
            try await Self.accept(albumsShare, as: bob, service)
            let tripsShare = try await Self.shareZone(Self.trips, of: carol, service)
            try await Self.accept(tripsShare, as: alice, service)
            #expect(try await Self.sharedZones(of: bob, service).map(\.zoneName) == ["Albums"])
            _ = try await service.modify(
                [RecordOperation(.create, note("diary", zone: .defaultZone))], zone: .defaultZone, as: Self.who(alice))
            _ = try await service.modify(
                [RecordOperation(.create, note("poster", zone: .defaultZone))], zone: .defaultZone,
                as: Self.who(alice, .public))
            _ = try await service.modify(
                [RecordOperation(.create, note("reply", zone: .defaultZone))], zone: .defaultZone,
                as: Self.who(bob, .public))

            let removed = try await service.removeUser(named: "alice", container: Self.container, deletingData: true)
            #expect(removed.recordName == alice && removed.revokedTokens == 1)
            let deletion = try #require(removed.deletion)
            #expect(deletion.zones == 2 && deletion.publicRecords == 1 && deletion.sharesLeft == 1)

            // Bob lost the shared zone; Carol's share no longer counts Alice.
            #expect(try await Self.sharedZones(of: bob, service).isEmpty)
            let held = try await service.storage.read { transaction async throws in
                try await transaction.shares(acceptedBy: alice, container: Self.container, environment: .development)
            }
            #expect(held.isEmpty)
            // Her public record went; Bob's stayed.
            let publicRecords = try await service.lookup(
                ["poster", "reply"], zone: .defaultZone, as: Self.who(bob, .public))
            #expect(publicRecords[0].error?.code == .notFound)
            #expect(publicRecords[1].record != nil)
            // Her private database holds an empty default zone, and no other history.
            let privateKey = DatabaseKey(
                container: Self.container, environment: .development, scope: .private, owner: alice)
            try await service.storage.read { transaction async throws in
                let database = try #require(try await transaction.database(privateKey))
                let zones = try await transaction.zones(inDatabase: database.id, named: nil)
                #expect(zones.map(\.name) == [ZoneID.defaultZone.zoneName])
                let log = try await transaction.zoneLog(inDatabase: database.id, after: 0, limit: 10)
                #expect(log.map(\.zoneName) == [ZoneID.defaultZone.zoneName] && log.allSatisfy { !$0.deleted })
            }
            let diary = try await service.lookup(["diary"], zone: .defaultZone, as: Self.who(alice))
            #expect(diary[0].error?.code == .notFound)
            // She is gone from the accounts.
            let users = try await service.users(container: Self.container)
            #expect(users.map(\.name) == ["bob", "carol"])
            await #expect(throws: CloudError.self) {
                try await service.removeUser(named: "alice", container: Self.container, deletingData: true)
            }
        }
    }

    @Test("--keep-data keeps the user's data: their shares go on working for participants", arguments: TestStore.single)
    func keepData(_ store: TestStore) async throws {
        try await Self.with(store) { service, alice, bob, _ in
            let albumsShare = try await Self.shareZone(Self.albums, of: alice, service)
            try await Self.accept(albumsShare, as: bob, service)
            let token = try await service.addWebAuthToken(forUser: "alice", container: Self.container, lifetime: nil)
            let removed = try await service.removeUser(named: "alice", container: Self.container, deletingData: false)
            #expect(removed.deletion == nil && removed.revokedTokens == 2)
            guard
                case .unknown = try await service.authenticateWebAuthToken(
                    token.webAuthToken, container: Self.container)
            else {
                Issue.record("a removed user's token still works")
                return
            }
            #expect(try await Self.sharedZones(of: bob, service).map(\.zoneName) == ["Albums"])
            #expect(try await service.users(container: Self.container).map(\.name) == ["bob", "carol"])
        }
    }
}
