import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    func currentUserIsSignedInUser() async throws {
        let phone = try await device("alice")
        let laptop = try await device("alice")
        let bob = try await device("bob")
        let alice = try await phone.currentUser()
        #expect(!alice.userRecordName.isEmpty)
        #expect(try await laptop.currentUser() == alice)
        #expect(try await bob.currentUser() != alice)
        #expect(await phone.accountStatus() == .available)
        // The public database knows the same user.
        let publicDatabase = try await backend.database(signedInAs: "alice", scope: .public)
        #expect(try await publicDatabase.currentUser() == alice)
    }

    func privateDatabasesAreIsolated() async throws {
        let alice = try await deviceWithZone("alice")
        let bob = try await device("bob")
        try await alice.create([note("secret", ["v": .int64(1)])])
        try await alice.create([note("d", in: .defaultZone)], in: .defaultZone)

        // Bob has no Notes zone, and his default zone is his own.
        #expect(try await bob.listZones().map(\.zoneID) == [.defaultZone])
        let lookup = try await bob.lookupRecords(["secret"], zoneID: notesZone, desiredKeys: nil)
        expectFailure(lookup[0], .zoneNotFound)
        #expect(try await bob.fetch("d", in: .defaultZone) == nil)
        try await bob.makeZone()
        #expect(try await bob.fetch("secret") == nil)
        #expect(try await bob.zoneChanges(since: nil).records.isEmpty)

        // The same names live side by side.
        try await bob.create([note("secret", ["v": .int64(2)])])
        #expect(try await alice.fetch("secret")?.fields == ["v": .int64(1)])
        #expect(try await bob.fetch("secret")?.fields == ["v": .int64(2)])

        // Zone IDs naming another owner do not reach that owner's zones.
        let aliceName = try await alice.currentUser().userRecordName
        let foreign = ZoneID(zoneName: notesZone.zoneName, ownerRecordName: aliceName)
        let foreignLookup = try await bob.lookupRecords(["secret"], zoneID: foreign, desiredKeys: nil)
        #expect(foreignLookup[0].record == nil)
    }

    func publicDatabaseIsShared() async throws {
        let alice = try await backend.database(signedInAs: "alice", scope: .public)
        let bob = try await backend.database(signedInAs: "bob", scope: .public)
        let zone = ZoneID.defaultZone
        _ = try await bob.modifySubscriptions([.save(Subscription(subscriptionID: "public", zoneID: zone))])
        let bobHears = NotificationRecorder(bob)
        await listening(bobHears)
        let saved = try #require(try await alice.create([note("pinned", in: zone, ["v": .int64(1)])], in: zone).first)
        #expect(try await bob.fetch("pinned", in: zone) == saved)
        // Bob's subscription fires; the public database has no database changes to announce.
        #expect(await bobHears.wait { !$0.isEmpty } == [.zoneChanged(zone, subscriptionID: "public")])

        var edit = saved
        edit["v"] = .int64(2)
        expectFailure(try await bob.modify(RecordOperation(.update, edit), in: zone), .accessDenied)
        expectFailure(try await bob.modify(RecordOperation(.forceDelete, edit), in: zone), .accessDenied)
        #expect(try await alice.modify(RecordOperation(.update, edit), in: zone).record != nil)

        // Public records are not in anyone's private database.
        let alicePrivate = try await device("alice")
        #expect(try await alicePrivate.fetch("pinned", in: zone) == nil)
    }

    func sharedDatabaseIsEmpty() async throws {
        let shared = try await backend.database(signedInAs: "alice", scope: .shared)
        #expect(try await shared.listZones().isEmpty)
        let changes = try await shared.fetchDatabaseChanges(since: nil, resultsLimit: nil)
        #expect(changes.changedZones.isEmpty && changes.deletedZones.isEmpty && !changes.moreComing)
        let results = try await shared.modifyRecords(
            [RecordOperation(.create, note("a", in: .defaultZone))], zoneID: .defaultZone, atomic: false)
        expectFailure(results[0], .zoneNotFound)
        let zoneChanges = try await shared.fetchZoneChanges([ZoneChangesRequest(zoneID: .defaultZone)])
        #expect(zoneChanges[0].failureCode == .zoneNotFound)
    }
}
