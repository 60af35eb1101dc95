import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A participant's device learns which shared zones its user accepted,
/// and hears when one appears or goes.
@Suite("Listing the accepted shared zones", .timeLimit(.minutes(1)))
struct SharedZoneListTests {
    let server = InMemoryCloudServer()

    /// Alice's zone "Notes" with a note, shared with bob, and the share.
    func alicesSharedNotes() async throws -> Share {
        let alice = try await SyncEngine<Note>(
            database: server.database(signedInAs: "alice"), directory: temporaryDirectory("alice"),
            configuration: SyncConfiguration(zoneName: "Notes", automaticSync: false))
        try await alice.upload(Note(id: "n1", title: "Groceries"))
        try await alice.sync()
        let share = try await alice.shareZone(
            title: "Alice's notes", participants: [ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite)])
        await alice.close()
        return share
    }

    @Test("the shared database lists the zones its user accepted; another database refuses")
    func listsAcceptedZones() async throws {
        let share = try await alicesSharedNotes()
        let bobShared = server.database(scope: .shared, signedInAs: "bob")
        #expect(try await bobShared.acceptedSharedZones().isEmpty)
        let bobPublic = server.database(scope: .public, signedInAs: "bob")
        let accepted = try await bobPublic.accept(
            try await bobPublic.shareMetadata(shortGUID: try #require(share.shortGUID)))
        // Another device of bob's, which did not accept, lists it too.
        let secondDevice = server.database(scope: .shared, signedInAs: "bob")
        #expect(try await secondDevice.acceptedSharedZones() == [accepted.zoneID])
        #expect(accepted.zoneID.ownerRecordName != nil)
        let error = await #expect(throws: CloudError.self) {
            try await server.database(signedInAs: "bob").acceptedSharedZones()
        }
        #expect(error?.code == .badRequest)
    }

    @Test("updates yield the list at once, when a share is accepted elsewhere, and when it ends")
    func updatesFollowAcceptAndStop() async throws {
        let share = try await alicesSharedNotes()
        let clock = ManualClock()
        let secondDevice = server.database(scope: .shared, signedInAs: "bob")
        var updates = secondDevice.sharedZoneUpdates(pollInterval: .seconds(3600), clock: clock).makeAsyncIterator()
        #expect(await updates.next() == [])

        let bobPublic = server.database(scope: .public, signedInAs: "bob")
        let accepted = try await bobPublic.accept(
            try await bobPublic.shareMetadata(shortGUID: try #require(share.shortGUID)))
        // Heard through a notification: the clock never reaches the poll.
        #expect(await updates.next() == [accepted.zoneID])

        try await server.database(signedInAs: "alice").stopSharing(share)
        #expect(await updates.next() == [])
    }
}
