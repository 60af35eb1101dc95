import Cumulus
import CumulusTesting
import Foundation
import Testing

/// ``InMemoryCloudServer/deleteData(ofUser:)``: the record server's
/// `cumulus user remove --delete-data`, by the same rules, in memory.
@Suite("Deleting a user's data in memory")
struct InMemoryUserDeletionTests {
    @Test("zones, owned shares, public records and the place in others' shares go; others' data stays")
    func deleteData() async throws {
        let server = InMemoryCloudServer()
        let alice = server.database(signedInAs: "alice")
        let albums = ZoneID(zoneName: "Albums")
        _ = try await alice.modifyZones([.create(albums)])
        var share = Record(recordType: ShareDetails.recordType, recordName: ShareDetails.zoneShareName, zoneID: albums)
        share.shareDetails = ShareDetails(publicPermission: .readOnly, participants: [])
        let photo = Record(recordType: "Photo", recordName: "p1", zoneID: albums)
        let saved = try await alice.modifyRecords(
            [RecordOperation(.create, photo), RecordOperation(.create, share)], zoneID: albums, atomic: true)
        let albumsShare = saved.compactMap { $0.record?.shareDetails?.shortGUID }.first
        let albumsGUID = try #require(albumsShare)
        _ = try await server.database(scope: .public, signedInAs: "bob").acceptShares([
            ShareLookup(shortGUID: albumsGUID)
        ])
        let bobShared = server.database(scope: .shared, signedInAs: "bob")
        #expect(try await bobShared.listZones().map(\.zoneID.zoneName) == ["Albums"])

        // Carol shares Trips; Alice takes part.
        let carol = server.database(signedInAs: "carol")
        let trips = ZoneID(zoneName: "Trips")
        _ = try await carol.modifyZones([.create(trips)])
        var tripsShare = Record(
            recordType: ShareDetails.recordType, recordName: ShareDetails.zoneShareName, zoneID: trips)
        tripsShare.shareDetails = ShareDetails(publicPermission: .readOnly, participants: [])
        let tripsSaved = try await carol.modifyRecords(
            [RecordOperation(.create, tripsShare)], zoneID: trips, atomic: true)
        let tripsHandle = tripsSaved.first?.record?.shareDetails?.shortGUID
        let tripsGUID = try #require(tripsHandle)
        _ = try await server.database(scope: .public, signedInAs: "alice").acceptShares([
            ShareLookup(shortGUID: tripsGUID)
        ])
        let aliceShared = server.database(scope: .shared, signedInAs: "alice")
        #expect(try await aliceShared.listZones().map(\.zoneID.zoneName) == ["Trips"])

        let alicePublic = server.database(scope: .public, signedInAs: "alice")
        let bobPublic = server.database(scope: .public, signedInAs: "bob")
        _ = try await alicePublic.modifyRecords(
            [RecordOperation(.create, Record(recordType: "Post", recordName: "poster", zoneID: .defaultZone))],
            zoneID: .defaultZone, atomic: false)
        _ = try await bobPublic.modifyRecords(
            [RecordOperation(.create, Record(recordType: "Post", recordName: "reply", zoneID: .defaultZone))],
            zoneID: .defaultZone, atomic: false)

        try await server.deleteData(ofUser: "alice")

        #expect(try await bobShared.listZones().isEmpty)
        #expect(try await aliceShared.listZones().isEmpty)
        #expect(try await alice.listZones().map(\.zoneID) == [.defaultZone])
        let posts = try await bobPublic.lookupRecords(["poster", "reply"], zoneID: .defaultZone, desiredKeys: nil)
        #expect(posts[0].error?.code == .notFound)
        #expect(posts[1].record != nil)
        // Carol's zone is hers, untouched.
        #expect(try await carol.listZones().map(\.zoneID.zoneName).contains("Trips"))
    }
}
