import Cumulus
import CumulusTesting
import Testing

/// The zone the sharing checks keep albums in.
let albumsZone = ZoneID(zoneName: "Albums")

/// An album, or a photo under `parent`.
func album(_ name: String, parent: String? = nil, _ fields: [String: FieldValue] = [:]) -> Record {
    var record = Record(
        recordType: parent == nil ? "Album" : "Photo", recordName: name, zoneID: albumsZone, fields: fields)
    record.parent = parent
    return record
}

/// A share record, named `name`, with these participants.
func shareRecord(
    _ name: String, in zone: ZoneID = albumsZone, title: String? = nil, participants: [ShareParticipant] = [],
    publicPermission: SharePermission = .none
) -> Record {
    var record = Record(recordType: ShareDetails.recordType, recordName: name, zoneID: zone)
    if let title { record[ShareDetails.titleField] = .string(title) }
    record.shareDetails = ShareDetails(publicPermission: publicPermission, participants: participants)
    return record
}

/// One participant's view of a shared zone: its devices and the zone as it names it.
struct SharedSide {
    let user: String
    let shared: any CloudDatabase
    let zone: ZoneID
}

extension CloudDatabaseConformance {
    static let sharingChecks: [Check] = [
        Check("an invited participant resolves, accepts and reads exactly the shared hierarchy") {
            try await $0.participantReadsTheHierarchy()
        },
        Check("a read-write participant writes inside the share and nowhere else") {
            try await $0.readWriteParticipantWritesInsideOnly()
        },
        Check("a read-only participant's writes are refused and change nothing") {
            try await $0.readOnlyParticipantIsRefused()
        },
        Check("a non-participant and a pending participant reach nothing") {
            try await $0.outsidersReachNothing()
        },
        Check("removing a participant, leaving and stopping the share take the zone away") {
            try await $0.losingAccessTakesTheZoneAway()
        },
        Check("a record belongs to one share at most") { try await $0.oneSharePerRecord() },
        Check("a participant who gains or loses one of two shares of a zone fetches the zone again") {
            try await $0.secondShareExpiresTokens()
        },
        Check("an administrator manages the participants, not the public permission or the administrators") {
            try await $0.administratorManagesParticipants()
        },
        Check("a zone share with public permission lets anyone with the handle in") {
            try await $0.publicZoneShare()
        },
        Check("a record moved out of a shared hierarchy reads as deleted to participants") {
            try await $0.movingOutReadsAsDeletion()
        },
        Check("user lookup answers discoverable users, an address only to who asked by it") {
            try await $0.userLookup()
        },
        Check("email addresses and user names are compared as exact bytes") { try await $0.invitationsAreExact() },
        Check("a change in a shared zone reaches the participants' shared database channels") {
            try await $0.sharedChangesAreNotified()
        },
    ]

    // MARK: Setup

    /// Alice's albums: `a1` with photos `p1` and `p2`, `a2` with `p3`, and a
    /// loose record `x`.
    func alicesAlbums() async throws -> any CloudDatabase {
        let alice = try await device("alice")
        try await alice.makeZone(albumsZone)
        try await alice.create(
            [
                album("a1", ["title": .string("Holidays")]), album("p1", parent: "a1", ["n": .int64(1)]),
                album("p2", parent: "a1", ["n": .int64(2)]), album("a2", ["title": .string("Private")]),
                album("p3", parent: "a2"), Record(recordType: "Note", recordName: "x", zoneID: albumsZone),
            ], in: albumsZone)
        return alice
    }

    /// Saves a share of `a1` (named `share-a1`) with these participants.
    @discardableResult
    func shareAlbum(
        _ alice: any CloudDatabase, participants: [ShareParticipant], publicPermission: SharePermission = .none,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Record {
        var root = try #require(try await alice.fetch("a1", in: albumsZone), sourceLocation: sourceLocation)
        root.share = "share-a1"
        let saved = try await alice.apply(
            [
                RecordOperation(
                    .create,
                    shareRecord(
                        "share-a1", title: "Holidays", participants: participants, publicPermission: publicPermission)),
                RecordOperation(.update, root),
            ], in: albumsZone, sourceLocation: sourceLocation)
        return try #require(saved.first, sourceLocation: sourceLocation)
    }

    /// `user` accepts the share and gets its shared database's view of the zone.
    func accept(_ shortGUID: String, as user: String, sourceLocation: SourceLocation = #_sourceLocation)
        async throws -> SharedSide
    {
        let publicDatabase = try await backend.database(signedInAs: user, scope: .public)
        let results = try await publicDatabase.acceptShares([ShareLookup(shortGUID: shortGUID)])
        guard case .share(let metadata) = try #require(results.first, sourceLocation: sourceLocation) else {
            Issue.record("accepting failed: \(results)", sourceLocation: sourceLocation)
            throw CloudError(.internalError, reason: "accepting failed")
        }
        #expect(metadata.participantStatus == .accepted, sourceLocation: sourceLocation)
        return SharedSide(
            user: user, shared: try await backend.database(signedInAs: user, scope: .shared), zone: metadata.zoneID)
    }

    /// The names of the records a participant's full fetch of the zone holds.
    func sharedNames(_ side: SharedSide) async throws -> Set<String> {
        let (pages, _) = try await side.shared.allZoneChanges(side.zone, since: nil)
        var names = Set<String>()
        for page in pages {
            for result in page.records {
                switch result {
                case .record(let record): names.insert(record.recordName)
                case .deleted(let name, _): names.remove(name)
                case .failure(let error): Issue.record("a change failed: \(error)")
                }
            }
        }
        return names
    }

    func recordName(of user: String) async throws -> String {
        try await device(user).currentUser().userRecordName
    }

    func shortGUID(_ share: Record, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(share.shareDetails?.shortGUID, sourceLocation: sourceLocation)
    }

    // MARK: Checks

    func participantReadsTheHierarchy() async throws {
        let alice = try await alicesAlbums()
        try await backend.setEmailAddress("bob@example.com", discoverable: true, forUser: "bob")
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .email("Bob@Example.com"), permission: .readWrite)])
        let guid = try shortGUID(share)
        let aliceName = try await alice.currentUser().userRecordName
        let details = try #require(share.shareDetails)
        #expect(details.participants.count == 2)
        #expect(details.participants.first?.role == .owner)
        #expect(details.participants.last?.acceptanceStatus == .pending)
        #expect(details.owner?.userRecordName == aliceName)
        #expect(try await alice.fetch("a1", in: albumsZone)?.share == "share-a1")

        // Before accepting, bob sees what an invitation shows, and no zone.
        let bobPublic = try await backend.database(signedInAs: "bob", scope: .public)
        let resolved = try await bobPublic.resolveShares([ShareLookup(shortGUID: guid, fetchRootRecord: true)])
        guard case .share(let metadata) = try #require(resolved.first) else {
            Issue.record("resolving failed: \(resolved)")
            return
        }
        #expect(metadata.participantStatus == .pending)
        #expect(metadata.participantPermission == .readWrite)
        #expect(metadata.participantRole == .user)
        #expect(metadata.ownerIdentity.userRecordName == aliceName)
        #expect(metadata.zoneID == ZoneID(zoneName: albumsZone.zoneName, ownerRecordName: aliceName))
        #expect(metadata.share[ShareDetails.titleField] == .string("Holidays"))
        #expect(metadata.rootRecord?.recordName == "a1")
        let bobShared = try await backend.database(signedInAs: "bob", scope: .shared)
        #expect(try await bobShared.listZones().isEmpty)

        let bob = try await accept(guid, as: "bob")
        #expect(bob.zone.ownerRecordName == aliceName)
        let changes = try await bob.shared.fetchDatabaseChanges(since: nil, resultsLimit: nil)
        #expect(changes.changedZones == [bob.zone])
        #expect(try await bob.shared.listZones().map(\.zoneID) == [bob.zone])
        #expect(try await sharedNames(bob) == ["a1", "p1", "p2", "share-a1"])
        let photo = try #require(try await bob.shared.fetch("p1", in: bob.zone))
        #expect(photo.zoneID == bob.zone)
        #expect(photo.parent == "a1")
        #expect(try await bob.shared.fetch("x", in: bob.zone) == nil)
        #expect(try await bob.shared.fetch("p3", in: bob.zone) == nil)
        let photos = try await bob.shared.queryRecords(
            RecordQuery(recordType: "Photo"), zoneID: bob.zone, resultsLimit: nil, continuationMarker: nil,
            desiredKeys: nil)
        #expect(Set(photos.records.map(\.recordName)) == ["p1", "p2"])
        // The share record tells bob who he is in it, and hides the others' addresses.
        let bobName = try await recordName(of: "bob")
        let seen = try #require(try await bob.shared.fetch("share-a1", in: bob.zone)?.shareDetails)
        #expect(seen.currentUserParticipant?.userRecordName == bobName)
        #expect(seen.participants.allSatisfy { $0.lookupInfo?.emailAddress == nil || $0.userRecordName == bobName })

        // The owner sees the participant's acceptance.
        let after = try #require(try await alice.fetch("share-a1", in: albumsZone)?.shareDetails)
        #expect(after.participants.last?.acceptanceStatus == .accepted)
        #expect(after.participants.last?.userRecordName == bobName)
    }

    func readWriteParticipantWritesInsideOnly() async throws {
        let alice = try await alicesAlbums()
        let bobName = try await recordName(of: "bob")
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readWrite)])
        let bob = try await accept(try shortGUID(share), as: "bob")
        let inShare = { (record: Record) -> Record in
            var moved = record
            moved.zoneID = bob.zone
            return moved
        }

        var p1 = try #require(try await bob.shared.fetch("p1", in: bob.zone))
        p1["n"] = .int64(10)
        try await bob.shared.apply([RecordOperation(.update, p1)], in: bob.zone)
        try await bob.shared.apply([RecordOperation(.create, inShare(album("p4", parent: "a1")))], in: bob.zone)
        #expect(try await alice.fetch("p1", in: albumsZone)?["n"] == .int64(10))
        let p4 = try #require(try await alice.fetch("p4", in: albumsZone))
        #expect(p4.parent == "a1")
        #expect(p4.metadata?.created?.userRecordName == bobName)

        let refused = try await bob.shared.modifyRecords(
            [
                RecordOperation(.create, inShare(album("p5"))),
                RecordOperation(.create, inShare(album("p6", parent: "a2"))),
                RecordOperation(.forceUpdate, inShare(Record(recordType: "Note", recordName: "x", zoneID: albumsZone))),
                RecordOperation(.forceDelete, inShare(album("a1"))),
                RecordOperation(.forceUpdate, inShare(shareRecord("share-a1"))),
                RecordOperation(.create, inShare(shareRecord("share-p1"))),
                RecordOperation(.forceUpdate, inShare(album("p2", parent: "a2"))),
                RecordOperation(.forceDelete, inShare(album("p3"))),
            ], zoneID: bob.zone, atomic: false)
        #expect(refused.count == 8)
        for result in refused { expectFailure(result, .accessDenied) }
        #expect(try await alice.fetch("p5", in: albumsZone) == nil)
        #expect(try await alice.fetch("p6", in: albumsZone) == nil)
        #expect(try await alice.fetch("x", in: albumsZone)?.fields.isEmpty == true)
        #expect(try await alice.fetch("p2", in: albumsZone)?.parent == "a1")
        #expect(try await alice.fetch("p3", in: albumsZone) != nil)
        #expect(try await alice.fetch("a1", in: albumsZone) != nil)

        try await bob.shared.apply([RecordOperation(.forceDelete, inShare(album("p2")))], in: bob.zone)
        #expect(try await alice.fetch("p2", in: albumsZone) == nil)
    }

    func readOnlyParticipantIsRefused() async throws {
        let alice = try await alicesAlbums()
        let carolName = try await recordName(of: "carol")
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .user(carolName), permission: .readOnly)])
        let carol = try await accept(try shortGUID(share), as: "carol")
        var p1 = try #require(try await carol.shared.fetch("p1", in: carol.zone))
        p1["n"] = .int64(99)
        var new = album("p9", parent: "a1")
        new.zoneID = carol.zone
        var p2 = try #require(try await carol.shared.fetch("p2", in: carol.zone))
        p2.fields = [:]
        let results = try await carol.shared.modifyRecords(
            [
                RecordOperation(.update, p1), RecordOperation(.create, new),
                RecordOperation(.forceDelete, p2),
            ], zoneID: carol.zone, atomic: false)
        #expect(results.count == 3)
        for result in results { expectFailure(result, .accessDenied) }
        #expect(try await alice.fetch("p1", in: albumsZone)?["n"] == .int64(1))
        #expect(try await alice.fetch("p9", in: albumsZone) == nil)
        #expect(try await alice.fetch("p2", in: albumsZone) != nil)
    }

    func outsidersReachNothing() async throws {
        let alice = try await alicesAlbums()
        let aliceName = try await alice.currentUser().userRecordName
        let bobName = try await recordName(of: "bob")
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readWrite)])
        let guid = try shortGUID(share)
        let zone = ZoneID(zoneName: albumsZone.zoneName, ownerRecordName: aliceName)

        for user in ["dave", "bob"] {
            // Dave was never invited; bob has not accepted yet.
            let shared = try await backend.database(signedInAs: user, scope: .shared)
            expectFailure(try await shared.lookupRecords(["p1"], zoneID: zone, desiredKeys: nil)[0], .zoneNotFound)
            let changes = try await shared.fetchZoneChanges([ZoneChangesRequest(zoneID: zone)])
            #expect((try? changes[0].get()) == nil)
            var write = album("p7", parent: "a1")
            write.zoneID = zone
            expectFailure(
                try await shared.modifyRecords([RecordOperation(.create, write)], zoneID: zone, atomic: false)[0],
                .zoneNotFound)
            #expect(try await shared.listZones().isEmpty)
        }
        let dave = try await backend.database(signedInAs: "dave", scope: .public)
        for results in [
            try await dave.resolveShares([ShareLookup(shortGUID: guid)]),
            try await dave.acceptShares([ShareLookup(shortGUID: guid)]),
        ] {
            guard case .failure(_, let error) = try #require(results.first) else {
                Issue.record("a non-participant reached a private share: \(results)")
                continue
            }
            #expect(error.code == .accessDenied)
        }
        let unknown = try await dave.resolveShares([ShareLookup(shortGUID: "no-such-share")])
        if case .failure(_, let error) = try #require(unknown.first) {
            #expect(error.code == .notFound)
        } else {
            Issue.record("an unknown handle resolved: \(unknown)")
        }
        // Another owner's zone named from the private database stays out of reach too.
        let davePrivate = try await device("dave")
        expectFailure(try await davePrivate.lookupRecords(["p1"], zoneID: zone, desiredKeys: nil)[0], .zoneNotFound)
    }

    func losingAccessTakesTheZoneAway() async throws {
        let alice = try await alicesAlbums()
        let bobName = try await recordName(of: "bob")
        let carolName = try await recordName(of: "carol")
        let share = try await shareAlbum(
            alice,
            participants: [
                ShareParticipant(lookupInfo: .user(bobName), permission: .readWrite),
                ShareParticipant(lookupInfo: .user(carolName), permission: .readOnly),
            ])
        let guid = try shortGUID(share)
        let bob = try await accept(guid, as: "bob")
        let carol = try await accept(guid, as: "carol")
        let carolToken = try await carol.shared.fetchDatabaseChanges(since: nil, resultsLimit: nil).syncToken
        let bobToken = try await bob.shared.fetchDatabaseChanges(since: nil, resultsLimit: nil).syncToken

        // Alice removes carol.
        var current = try #require(try await alice.fetch("share-a1", in: albumsZone))
        current.shareDetails?.participants.removeAll { $0.userRecordName == carolName }
        try await alice.apply([RecordOperation(.update, current)], in: albumsZone)
        let carolChanges = try await carol.shared.fetchDatabaseChanges(since: carolToken, resultsLimit: nil)
        #expect(carolChanges.deletedZones == [carol.zone])
        expectFailure(
            try await carol.shared.lookupRecords(["p1"], zoneID: carol.zone, desiredKeys: nil)[0], .zoneNotFound)
        let carolPublic = try await backend.database(signedInAs: "carol", scope: .public)
        if case .share = try #require(try await carolPublic.acceptShares([ShareLookup(shortGUID: guid)]).first) {
            Issue.record("a removed participant accepted again")
        }
        #expect(try await sharedNames(bob).contains("p1"))

        // Bob leaves by deleting the share from his shared database.
        let shareSeen = try #require(try await bob.shared.fetch("share-a1", in: bob.zone))
        let left = try await bob.shared.modifyRecords(
            [RecordOperation(.forceDelete, shareSeen)], zoneID: bob.zone, atomic: false)
        #expect(left.deletedNames == ["share-a1"])
        #expect(
            try await bob.shared.fetchDatabaseChanges(since: bobToken, resultsLimit: nil).deletedZones == [bob.zone])
        expectFailure(try await bob.shared.lookupRecords(["p1"], zoneID: bob.zone, desiredKeys: nil)[0], .zoneNotFound)
        let details = try #require(try await alice.fetch("share-a1", in: albumsZone)?.shareDetails)
        #expect(details.participants.first { $0.userRecordName == bobName }?.acceptanceStatus == .removed)
        #expect(try await alice.fetch("p1", in: albumsZone) != nil)

        // Bob comes back; alice stops sharing; the root forgets its share.
        let again = try await accept(guid, as: "bob")
        #expect(try await sharedNames(again).contains("p1"))
        let token = try await again.shared.fetchDatabaseChanges(since: nil, resultsLimit: nil).syncToken
        try await alice.apply([RecordOperation(.forceDelete, current)], in: albumsZone)
        #expect(
            try await again.shared.fetchDatabaseChanges(since: token, resultsLimit: nil).deletedZones == [again.zone])
        expectFailure(
            try await again.shared.lookupRecords(["a1"], zoneID: again.zone, desiredKeys: nil)[0], .zoneNotFound)
        let root = try #require(try await alice.fetch("a1", in: albumsZone))
        #expect(root.share == nil)
        #expect(try await alice.fetch("p2", in: albumsZone) != nil)
    }

    func oneSharePerRecord() async throws {
        let alice = try await alicesAlbums()
        try await shareAlbum(alice, participants: [])
        var photo = try #require(try await alice.fetch("p1", in: albumsZone))
        photo.share = "share-p1"
        let results = try await alice.modifyRecords(
            [RecordOperation(.create, shareRecord("share-p1")), RecordOperation(.update, photo)], zoneID: albumsZone,
            atomic: false)
        expectFailure(results[0], .alreadyShared)
        #expect(results[1].error != nil)
        #expect(try await alice.fetch("share-p1", in: albumsZone) == nil)
        #expect(try await alice.fetch("p1", in: albumsZone)?.share == nil)
        let zoneShare = try await alice.modifyRecords(
            [RecordOperation(.create, shareRecord(ShareDetails.zoneShareName))], zoneID: albumsZone, atomic: false)
        expectFailure(zoneShare[0], .alreadyShared)
        // A share needs a custom zone, and a root that names it.
        let inDefault = try await alice.modifyRecords(
            [RecordOperation(.create, shareRecord("s", in: .defaultZone))], zoneID: .defaultZone, atomic: false)
        expectFailure(inDefault[0], .badRequest)
        let rootless = try await alice.modifyRecords(
            [RecordOperation(.create, shareRecord("s2"))], zoneID: albumsZone, atomic: false)
        expectFailure(rootless[0], .badRequest)
    }

    func secondShareExpiresTokens() async throws {
        let alice = try await alicesAlbums()
        let bobName = try await recordName(of: "bob")
        let first = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readOnly)])
        let bob = try await accept(try shortGUID(first), as: "bob")
        let (_, token) = try await bob.shared.allZoneChanges(bob.zone, since: nil)

        // A second share of the same zone: bob's old token expires, and the zone read again shows both.
        var a2 = try #require(try await alice.fetch("a2", in: albumsZone))
        a2.share = "share-a2"
        let saved = try await alice.apply(
            [
                RecordOperation(
                    .create,
                    shareRecord(
                        "share-a2", participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readOnly)])
                ),
                RecordOperation(.update, a2),
            ], in: albumsZone)
        _ = try await accept(try shortGUID(try #require(saved.first)), as: "bob")
        let expired = try await bob.shared.fetchZoneChanges([ZoneChangesRequest(zoneID: bob.zone, syncToken: token)])
        #expect((try? expired[0].get()) == nil)
        if case .failure(let error) = expired[0] { #expect(error.code == .changeTokenExpired) }
        #expect(try await sharedNames(bob) == ["a1", "p1", "p2", "share-a1", "a2", "p3", "share-a2"])

        // Losing one of the two: the zone stays, the lost share's records go.
        let (_, later) = try await bob.shared.allZoneChanges(bob.zone, since: nil)
        var current = try #require(try await alice.fetch("share-a2", in: albumsZone))
        current.shareDetails?.participants.removeAll { $0.userRecordName == bobName }
        try await alice.apply([RecordOperation(.update, current)], in: albumsZone)
        let stale = try await bob.shared.fetchZoneChanges([ZoneChangesRequest(zoneID: bob.zone, syncToken: later)])
        if case .failure(let error) = stale[0] {
            #expect(error.code == .changeTokenExpired)
        } else {
            Issue.record("a token from before losing a share still answers")
        }
        #expect(try await sharedNames(bob) == ["a1", "p1", "p2", "share-a1"])
    }

    func administratorManagesParticipants() async throws {
        let alice = try await alicesAlbums()
        let bobName = try await recordName(of: "bob")
        let carolName = try await recordName(of: "carol")
        let daveName = try await recordName(of: "dave")
        let share = try await shareAlbum(
            alice,
            participants: [
                ShareParticipant(lookupInfo: .user(bobName), role: .administrator, permission: .readOnly),
                ShareParticipant(lookupInfo: .user(carolName), permission: .readOnly),
            ])
        let guid = try shortGUID(share)
        let bob = try await accept(guid, as: "bob")
        let carol = try await accept(guid, as: "carol")

        // Bob adds dave and lets carol write.
        var seen = try #require(try await bob.shared.fetch("share-a1", in: bob.zone))
        seen.shareDetails?.participants.append(ShareParticipant(lookupInfo: .user(daveName), permission: .readOnly))
        for index in seen.shareDetails!.participants.indices
        where seen.shareDetails!.participants[index].userRecordName == carolName {
            seen.shareDetails!.participants[index].permission = .readWrite
        }
        let saved = try await bob.shared.apply([RecordOperation(.update, seen)], in: bob.zone)
        let details = try #require(saved.first?.shareDetails)
        #expect(details.participants.count == 4)
        #expect(details.participants.first { $0.userRecordName == carolName }?.permission == .readWrite)
        var p1 = try #require(try await carol.shared.fetch("p1", in: carol.zone))
        p1["n"] = .int64(7)
        try await carol.shared.apply([RecordOperation(.update, p1)], in: carol.zone)
        #expect(try await alice.fetch("p1", in: albumsZone)?["n"] == .int64(7))
        // Bob's own records are still read-only.
        var p2 = try #require(try await bob.shared.fetch("p2", in: bob.zone))
        p2["n"] = .int64(8)
        expectFailure(
            try await bob.shared.modifyRecords([RecordOperation(.update, p2)], zoneID: bob.zone, atomic: false)[0],
            .accessDenied)

        // The public permission and the administrators are the owner's.
        var opened = try #require(try await bob.shared.fetch("share-a1", in: bob.zone))
        opened.shareDetails?.publicPermission = .readWrite
        expectFailure(
            try await bob.shared.modifyRecords([RecordOperation(.update, opened)], zoneID: bob.zone, atomic: false)[0],
            .accessDenied)
        var promoted = try #require(try await bob.shared.fetch("share-a1", in: bob.zone))
        for index in promoted.shareDetails!.participants.indices
        where promoted.shareDetails!.participants[index].userRecordName == carolName {
            promoted.shareDetails!.participants[index].role = .administrator
        }
        expectFailure(
            try await bob.shared.modifyRecords([RecordOperation(.update, promoted)], zoneID: bob.zone, atomic: false)[
                0], .accessDenied)
        // A participant who is not an administrator changes nothing of the share.
        var carolSees = try #require(try await carol.shared.fetch("share-a1", in: carol.zone))
        carolSees.shareDetails?.participants.removeAll { $0.userRecordName == bobName }
        expectFailure(
            try await carol.shared.modifyRecords(
                [RecordOperation(.update, carolSees)], zoneID: carol.zone, atomic: false)[
                    0], .accessDenied)
        #expect(
            try await alice.fetch("share-a1", in: albumsZone)?.shareDetails?.publicPermission == SharePermission.none)
    }

    func publicZoneShare() async throws {
        let alice = try await alicesAlbums()
        let saved = try await alice.apply(
            [RecordOperation(.create, shareRecord(ShareDetails.zoneShareName, publicPermission: .readOnly))],
            in: albumsZone)
        let share = try #require(saved.first)
        let guid = try shortGUID(share)
        let davePublic = try await backend.database(signedInAs: "dave", scope: .public)
        let resolved = try await davePublic.resolveShares([ShareLookup(shortGUID: guid)])
        guard case .share(let metadata) = try #require(resolved.first) else {
            Issue.record("resolving a public share failed: \(resolved)")
            return
        }
        #expect(metadata.participantRole == .publicUser)
        #expect(metadata.participantPermission == .readOnly)
        let dave = try await accept(guid, as: "dave")
        #expect(try await sharedNames(dave) == ["a1", "a2", "p1", "p2", "p3", "x", ShareDetails.zoneShareName])
        var x = try #require(try await dave.shared.fetch("x", in: dave.zone))
        x["v"] = .int64(1)
        expectFailure(
            try await dave.shared.modifyRecords([RecordOperation(.update, x)], zoneID: dave.zone, atomic: false)[0],
            .accessDenied)

        // Taking public access away removes the public participants.
        let token = try await dave.shared.fetchDatabaseChanges(since: nil, resultsLimit: nil).syncToken
        var current = try #require(try await alice.fetch(ShareDetails.zoneShareName, in: albumsZone))
        current.shareDetails?.publicPermission = .none
        try await alice.apply([RecordOperation(.update, current)], in: albumsZone)
        #expect(try await dave.shared.fetchDatabaseChanges(since: token, resultsLimit: nil).deletedZones == [dave.zone])
        #expect(
            try await alice.fetch(ShareDetails.zoneShareName, in: albumsZone)?.shareDetails?.participants.count == 1)
    }

    func movingOutReadsAsDeletion() async throws {
        let alice = try await alicesAlbums()
        let bobName = try await recordName(of: "bob")
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readOnly)])
        let bob = try await accept(try shortGUID(share), as: "bob")
        let (_, token) = try await bob.shared.allZoneChanges(bob.zone, since: nil)
        var p1 = try #require(try await alice.fetch("p1", in: albumsZone))
        p1.parent = "a2"
        try await alice.apply([RecordOperation(.replace, p1)], in: albumsZone)
        let (pages, next) = try await bob.shared.allZoneChanges(bob.zone, since: token)
        #expect(pages.flatMap(\.records).deletedNames == ["p1"])
        #expect(pages.flatMap(\.records).savedNames.isEmpty)
        // A later edit outside the share stays out of sight; moving back brings it in.
        p1 = try #require(try await alice.fetch("p1", in: albumsZone))
        p1["n"] = .int64(5)
        try await alice.apply([RecordOperation(.update, p1)], in: albumsZone)
        #expect(try await sharedNames(bob) == ["a1", "p2", "share-a1"])
        p1 = try #require(try await alice.fetch("p1", in: albumsZone))
        p1.parent = "a1"
        try await alice.apply([RecordOperation(.replace, p1)], in: albumsZone)
        let (back, _) = try await bob.shared.allZoneChanges(bob.zone, since: next)
        #expect(back.flatMap(\.records).savedNames.contains("p1"))
        // Sharing a parent later covers the children saved before it.
        try await alice.create([album("p8", parent: "a3"), album("a3")], in: albumsZone)
        var a3 = try #require(try await alice.fetch("a3", in: albumsZone))
        a3.share = "share-a3"
        try await alice.apply(
            [
                RecordOperation(
                    .create,
                    shareRecord(
                        "share-a3", participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readOnly)]
                    )),
                RecordOperation(.update, a3),
            ], in: albumsZone)
        let guid3 = try #require(try await alice.fetch("share-a3", in: albumsZone)?.shareDetails?.shortGUID)
        let bobAgain = try await accept(guid3, as: "bob")
        #expect(try await sharedNames(bobAgain).isSuperset(of: ["a3", "p8", "share-a3", "a1", "p1", "p2"]))
    }

    func userLookup() async throws {
        try await backend.setEmailAddress("bob@example.com", discoverable: true, forUser: "bob")
        try await backend.setEmailAddress("carol@example.com", discoverable: false, forUser: "carol")
        let bobName = try await recordName(of: "bob")
        let carolName = try await recordName(of: "carol")
        let daveName = try await recordName(of: "dave")
        let alice = try await device("alice")
        let byEmail = try await alice.lookupUsers(
            emailAddresses: ["BOB@example.com", "carol@example.com", "nobody@example.com"])
        #expect(byEmail.map(\.userRecordName) == [bobName])
        #expect(byEmail.first?.lookupInfo?.emailAddress == "bob@example.com")
        let byName = try await alice.lookupUsers(userRecordNames: [bobName, carolName, daveName])
        #expect(byName.map(\.userRecordName) == [bobName])
        #expect(byName.first?.lookupInfo?.emailAddress == nil)
        let discovered = try await alice.discoverUsers([.email("carol@example.com"), .user(bobName)])
        #expect(discovered.map(\.userRecordName) == [bobName])
        // Opting back in makes carol findable.
        try await backend.setEmailAddress("carol@example.com", discoverable: true, forUser: "carol")
        #expect(try await alice.lookupUsers(emailAddresses: ["carol@example.com"]).map(\.userRecordName) == [carolName])
    }

    func invitationsAreExact() async throws {
        let alice = try await alicesAlbums()
        // Two spellings of one name that Swift's == takes for equal.
        try await backend.setEmailAddress("jos\u{E9}@example.com", discoverable: true, forUser: "bob")
        let share = try await shareAlbum(
            alice,
            participants: [ShareParticipant(lookupInfo: .email("jose\u{301}@example.com"), permission: .readOnly)])
        let guid = try shortGUID(share)
        let bobPublic = try await backend.database(signedInAs: "bob", scope: .public)
        guard
            case .failure(_, let error) = try #require(
                try await bobPublic.acceptShares([ShareLookup(shortGUID: guid)]).first)
        else {
            Issue.record("an address of other bytes accepted the invitation")
            return
        }
        #expect(error.code == .accessDenied)
        #expect(try await alice.lookupUsers(emailAddresses: ["jose\u{301}@example.com"]).isEmpty)
        #expect(try await alice.lookupUsers(emailAddresses: ["jos\u{E9}@example.com"]).count == 1)
    }

    func sharedChangesAreNotified() async throws {
        let alice = try await alicesAlbums()
        let bobName = try await recordName(of: "bob")
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readWrite)])
        let bob = try await accept(try shortGUID(share), as: "bob")
        let hears = NotificationRecorder(bob.shared)
        await listening(hears)
        var p1 = try #require(try await alice.fetch("p1", in: albumsZone))
        p1["n"] = .int64(3)
        try await alice.apply([RecordOperation(.update, p1)], in: albumsZone)
        await hears.wait(for: .databaseChanged)
    }
}
