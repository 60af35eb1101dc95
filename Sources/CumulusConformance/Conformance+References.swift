import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    static let referenceChecks: [Check] = [
        Check("DELETE_SELF cascades down a chain and from reference lists") {
            try await $0.deleteSelfCascadesThroughChainsAndLists()
        },
        Check("VALIDATE refuses a missing target, in a list too, and accepts it once it exists") {
            try await $0.validateRefusesUntilTargetExists()
        },
        Check("a reference into another zone is a BAD_REQUEST") { try await $0.crossZoneReferencesAreRefused() },
        Check("a participant's VALIDATE target outside its shares reads as missing; DELETE_SELF cascades in shares") {
            try await $0.referencesInSharedZones()
        },
    ]

    func deleteSelfCascadesThroughChainsAndLists() async throws {
        let database = try await deviceWithZone()
        func refs(_ references: Reference...) -> [String: FieldValue] { ["refs": .referenceList(references)] }
        try await database.create([
            note("root"), note("other"),
            note("child", ["up": .reference(Reference(recordName: "root", action: .deleteSelf))]),
            note("grandchild", ["up": .reference(Reference(recordName: "child", action: .deleteSelf))]),
            note(
                "listed", refs(Reference(recordName: "other"), Reference(recordName: "grandchild", action: .deleteSelf))
            ),
            note("loose", refs(Reference(recordName: "root"), Reference(recordName: "other", action: .deleteSelf))),
        ])
        let token = try await database.zoneChanges(since: nil).syncToken
        try await database.apply([RecordOperation(.forceDelete, note("root"))])
        for gone in ["root", "child", "grandchild", "listed"] { #expect(try await database.fetch(gone) == nil) }
        #expect(try await database.fetch("loose") != nil)
        #expect(try await database.fetch("other") != nil)
        let changes = try await database.allZoneChanges(since: token).pages.flatMap(\.records)
        #expect(Set(changes.deletedNames) == ["root", "child", "grandchild", "listed"])
        #expect(changes.savedNames.isEmpty)
    }

    func validateRefusesUntilTargetExists() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("present")])
        let pointing = note(
            "pointing",
            [
                "refs": .referenceList([
                    Reference(recordName: "present", action: .validate),
                    Reference(recordName: "later", action: .validate),
                ])
            ])
        let refused = try await database.modify(RecordOperation(.create, pointing))
        let error = expectFailure(refused, .validatingReferenceError)
        #expect(error?.recordName == "pointing")
        #expect(error?.httpStatus == 412)
        #expect(try await database.fetch("pointing") == nil)

        try await database.create([note("later")])
        try await database.create([pointing])
        // Deleting a target does not touch the referrer; saving it again then fails.
        try await database.apply([RecordOperation(.forceDelete, note("later"))])
        let saved = try #require(try await database.fetch("pointing"))
        expectFailure(try await database.modify(RecordOperation(.update, saved)), .validatingReferenceError)
    }

    func crossZoneReferencesAreRefused() async throws {
        let database = try await deviceWithZone()
        try await database.makeZone(ZoneID(zoneName: "Other"))
        try await database.create([note("there", in: ZoneID(zoneName: "Other"))], in: ZoneID(zoneName: "Other"))
        try await database.create([note("here")])
        func pointing(_ name: String, into zone: ZoneID?, _ action: Reference.Action = .none) -> Record {
            let target = zone == nil || zone == notesZone ? "here" : "there"
            return note(name, ["ref": .reference(Reference(recordName: target, zoneID: zone, action: action))])
        }
        let bob = try await device("bob").currentUser().userRecordName
        let results = try await database.modifyRecords(
            [
                RecordOperation(.create, pointing("a", into: ZoneID(zoneName: "Other"))),
                RecordOperation(.create, pointing("b", into: ZoneID(zoneName: "Other"), .validate)),
                RecordOperation(.create, pointing("c", into: ZoneID(zoneName: "Notes", ownerRecordName: bob))),
                RecordOperation(
                    .create,
                    note(
                        "d",
                        [
                            "refs": .referenceList([
                                Reference(recordName: "here"),
                                Reference(recordName: "there", zoneID: ZoneID(zoneName: "Other")),
                            ])
                        ])),
                RecordOperation(.create, pointing("e", into: notesZone, .validate)),
                RecordOperation(.create, pointing("f", into: nil, .deleteSelf)),
            ], zoneID: notesZone, atomic: false)
        try #require(results.count == 6)
        for result in results[0..<4] {
            let error = expectFailure(result, .badRequest)
            #expect(error?.reason.contains("zone") == true)
        }
        // The record's own zone, named or not, is fine (and a VALIDATE there is checked there).
        _ = try requireRecord(results[4])
        _ = try requireRecord(results[5])
        for name in ["a", "b", "c", "d"] { #expect(try await database.fetch(name) == nil) }
    }

    func referencesInSharedZones() async throws {
        let alice = try await alicesAlbums()
        let bobName = try await device("bob").currentUser().userRecordName
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .user(bobName), permission: .readWrite)])
        let bob = try await accept(try #require(share.shareDetails?.shortGUID), as: "bob")
        func photo(_ name: String, _ reference: Reference) -> Record {
            var record = album(name, parent: "a1", ["ref": .reference(reference)])
            record.zoneID = bob.zone
            return record
        }
        // `a2` exists outside the share: to bob, exactly as missing as `nowhere`.
        let results = try await bob.shared.modifyRecords(
            [
                RecordOperation(.create, photo("v1", Reference(recordName: "a2", action: .validate))),
                RecordOperation(.create, photo("v2", Reference(recordName: "nowhere", action: .validate))),
                RecordOperation(.create, photo("v3", Reference(recordName: "p1", action: .validate))),
                RecordOperation(
                    .create, photo("v4", Reference(recordName: "p1", zoneID: bob.zone, action: .validate))),
            ], zoneID: bob.zone, atomic: false)
        try #require(results.count == 4)
        let outside = expectFailure(results[0], .validatingReferenceError)
        let missing = expectFailure(results[1], .validatingReferenceError)
        #expect(outside?.reason.replacingOccurrences(of: "a2", with: "nowhere") == missing?.reason)
        _ = try requireRecord(results[2])
        _ = try requireRecord(results[3])
        #expect(try await alice.fetch("v1", in: albumsZone) == nil)
        // The owner's own VALIDATE reference to `a2` is fine.
        var own = album("v5", ["ref": .reference(Reference(recordName: "a2", action: .validate))])
        own.zoneID = albumsZone
        try await alice.create([own], in: albumsZone)

        // DELETE_SELF in a shared zone: bob's delete cascades, and both sides see it.
        let token = try await bob.shared.zoneChanges(bob.zone, since: nil).syncToken
        try await bob.shared.create(
            [
                photo("d1", Reference(recordName: "p1", action: .deleteSelf)),
                photo("d2", Reference(recordName: "d1", action: .deleteSelf)),
            ], in: bob.zone)
        var p1 = album("p1", parent: "a1")
        p1.zoneID = bob.zone
        try await bob.shared.apply([RecordOperation(.forceDelete, p1)], in: bob.zone)
        for name in ["p1", "d1", "d2"] {
            #expect(try await alice.fetch(name, in: albumsZone) == nil)
            #expect(try await bob.shared.fetch(name, in: bob.zone) == nil)
        }
        let changes = try await bob.shared.allZoneChanges(bob.zone, since: token).pages.flatMap(\.records)
        #expect(Set(changes.deletedNames).isSuperset(of: ["p1", "d1", "d2"]))
        // The owner's delete cascades to the participant's records too.
        try await bob.shared.create([photo("d3", Reference(recordName: "p2", action: .deleteSelf))], in: bob.zone)
        try await alice.apply([RecordOperation(.forceDelete, album("p2"))], in: albumsZone)
        #expect(try await bob.shared.fetch("d3", in: bob.zone) == nil)
        #expect(try await bob.shared.fetch("v3", in: bob.zone) != nil)
    }
}
