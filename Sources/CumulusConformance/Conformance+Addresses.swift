import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    static let addressChecks: [Check] = [
        Check("an address stays with its first holder; a later claim neither takes nor shares it") {
            try await $0.addressStaysWithItsHolder()
        },
        Check("an invitation by address binds to the address's holder when the owner invited") {
            try await $0.invitationBindsToTheHolder()
        },
    ]

    /// Claims of vic's address by users whose names sort before and after
    /// vic's are refused, and lookups keep answering vic; once vic's
    /// address is taken away, the next claim gets it.
    func addressStaysWithItsHolder() async throws {
        try await backend.setEmailAddress("vic@example.com", discoverable: true, forUser: "vic")
        let vicName = try await recordName(of: "vic")
        for claimer in ["aaron", "mallory", "zz-mallory"] {
            await #expect(throws: CloudError.self, "\(claimer) took vic's address") {
                try await backend.setEmailAddress("VIC@example.com", discoverable: true, forUser: claimer)
            }
        }
        let alice = try await device("alice")
        #expect(try await alice.lookupUsers(emailAddresses: ["vic@example.com"]).map(\.userRecordName) == [vicName])
        #expect(try await alice.discoverUsers([.email("vic@example.com")]).map(\.userRecordName) == [vicName])
        // Keeping it out of lookups keeps it held.
        try await backend.setEmailAddress("vic@example.com", discoverable: false, forUser: "vic")
        await #expect(throws: CloudError.self) {
            try await backend.setEmailAddress("vic@example.com", discoverable: true, forUser: "mallory")
        }
        #expect(try await alice.lookupUsers(emailAddresses: ["vic@example.com"]).isEmpty)

        try await backend.setEmailAddress(nil, discoverable: true, forUser: "vic")
        try await backend.setEmailAddress("vic@example.com", discoverable: true, forUser: "mallory")
        let malloryName = try await recordName(of: "mallory")
        #expect(
            try await alice.lookupUsers(emailAddresses: ["vic@example.com"]).map(\.userRecordName) == [malloryName])
    }

    /// An invitation of an address vic held is vic's even after the address
    /// moves to mallory; one of an address nobody held is for whoever holds
    /// it when accepting.
    func invitationBindsToTheHolder() async throws {
        let alice = try await alicesAlbums()
        try await backend.setEmailAddress("vic@example.com", discoverable: false, forUser: "vic")
        let share = try await shareAlbum(
            alice, participants: [ShareParticipant(lookupInfo: .email("vic@example.com"), permission: .readOnly)])
        // The owner sees the address invited, not whom it binds to, by every read.
        let invited = try #require(share.shareDetails?.participants.last)
        #expect(invited.lookupInfo == .email("vic@example.com") && invited.userRecordName == nil)
        let fed = try await alice.allZoneChanges(albumsZone, since: nil).pages.flatMap(\.records).compactMap(\.record)
        let fedShare = try #require(fed.first { $0.recordType == ShareDetails.recordType })
        #expect(fedShare.shareDetails?.participants.last?.lookupInfo == .email("vic@example.com"))
        try await backend.setEmailAddress(nil, discoverable: true, forUser: "vic")
        try await backend.setEmailAddress("vic@example.com", discoverable: true, forUser: "mallory")
        let guid = try shortGUID(share)
        let mallory = try await backend.database(signedInAs: "mallory", scope: .public)
        let refused = try #require(try await mallory.acceptShares([ShareLookup(shortGUID: guid)]).first)
        guard case .failure(_, let error) = refused else {
            Issue.record("the address's later holder accepted vic's invitation: \(refused)")
            return
        }
        #expect(error.code == .accessDenied)
        let vic = try await accept(guid, as: "vic")
        #expect(try await sharedNames(vic) == ["a1", "p1", "p2", "share-a1"])

        // Nobody held carol's address when alice invited it: carol, holding it later, accepts.
        var a2 = try #require(try await alice.fetch("a2", in: albumsZone))
        a2.share = "share-a2"
        try await alice.apply(
            [
                RecordOperation(
                    .create,
                    shareRecord(
                        "share-a2",
                        participants: [ShareParticipant(lookupInfo: .email("carol@example.com"), permission: .readOnly)]
                    )),
                RecordOperation(.update, a2),
            ], in: albumsZone)
        try await backend.setEmailAddress("carol@example.com", discoverable: false, forUser: "carol")
        let guid2 = try #require(try await alice.fetch("share-a2", in: albumsZone)?.shareDetails?.shortGUID)
        _ = try await accept(guid2, as: "carol")
    }
}
