import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    static let displayNameChecks: [Check] = [
        Check("lookups answer a discoverable user's name, and never a hidden user's") {
            try await $0.lookupsAnswerNames()
        },
        Check("a share shows its owner's name to invitees, and its participants' names to each other") {
            try await $0.sharesShowNames()
        },
        Check("a name a client writes into a share's participants is not kept") {
            try await $0.sentNamesAreDropped()
        },
    ]

    static let aliceName = UserNameComponents(givenName: "Alice", familyName: "Example")
    static let bobName = UserNameComponents(givenName: "Bob", familyName: "Builder")

    func lookupsAnswerNames() async throws {
        try await backend.setEmailAddress("bob@example.com", discoverable: true, forUser: "bob")
        try await backend.setName(Self.bobName, forUser: "bob")
        try await backend.setEmailAddress("carol@example.com", discoverable: false, forUser: "carol")
        try await backend.setName(UserNameComponents(givenName: "Carol"), forUser: "carol")
        let bob = try await recordName(of: "bob")
        let carol = try await recordName(of: "carol")
        let alice = try await device("alice")
        let byEmail = try await alice.lookupUsers(emailAddresses: ["bob@example.com", "carol@example.com"])
        #expect(byEmail.map(\.userRecordName) == [bob])
        #expect(byEmail.first?.nameComponents == Self.bobName)
        let byName = try await alice.lookupUsers(userRecordNames: [bob, carol])
        #expect(byName.map(\.userRecordName) == [bob])
        #expect(byName.first?.nameComponents == Self.bobName)
        let discovered = try await alice.discoverUsers([.user(bob), .email("carol@example.com")])
        #expect(discovered.map(\.nameComponents) == [Self.bobName])

        // A new name shows at once; no name, none.
        try await backend.setName(UserNameComponents(givenName: "Robert"), forUser: "bob")
        #expect(try await alice.lookupUsers(userRecordNames: [bob]).first?.nameComponents?.displayName == "Robert")
        try await backend.setName(nil, forUser: "bob")
        let unnamed = try await alice.lookupUsers(userRecordNames: [bob])
        #expect(unnamed.map(\.userRecordName) == [bob] && unnamed.first?.nameComponents == nil)
    }

    func sharesShowNames() async throws {
        try await backend.setName(Self.aliceName, forUser: "alice")
        try await backend.setName(Self.bobName, forUser: "bob")
        try await backend.setName(UserNameComponents(givenName: "Carol"), forUser: "carol")
        try await backend.setName(UserNameComponents(givenName: "Dave"), forUser: "dave")
        let bob = try await recordName(of: "bob")
        let carol = try await recordName(of: "carol")
        let alice = try await alicesAlbums()
        let saved = try await shareAlbum(
            alice,
            participants: [
                ShareParticipant(lookupInfo: .user(bob), permission: .readOnly),
                ShareParticipant(lookupInfo: .user(carol), permission: .readOnly),
            ], publicPermission: .readOnly)
        let guid = try shortGUID(saved)
        // Invited, not joined: the owner learns no name by inviting a user.
        let owned = try #require(Share(saved))
        #expect(owned.ownerName == Self.aliceName)
        #expect(owned.participants.filter { $0.role != .owner }.allSatisfy { $0.nameComponents == nil })

        // Before accepting, bob sees the owner's name, and nobody else's.
        let bobPublic = try await backend.database(signedInAs: "bob", scope: .public)
        let invitation = try await bobPublic.shareMetadata(shortGUID: guid)
        #expect(invitation.ownerName == Self.aliceName)
        #expect(invitation.ownerIdentity.nameComponents?.displayName == "Alice Example")
        #expect(Share(invitation.share)?.ownerName == Self.aliceName)

        let bobSide = try await accept(guid, as: "bob")
        _ = try await accept(guid, as: "carol")
        // The owner sees who joined, and so do the participants, by every read.
        let ownersShare = try #require(try await alice.fetch("share-a1", in: albumsZone).flatMap(Share.init))
        #expect(Self.names(ownersShare) == ["Alice Example", "Bob Builder", "Carol"])
        let ownersChanges = try await alice.allZoneChanges(albumsZone, since: nil).pages.flatMap(\.records)
        let changedShare = try #require(
            ownersChanges.compactMap { $0.record }.first { $0.recordType == ShareDetails.recordType }.flatMap(
                Share.init))
        #expect(Self.names(changedShare) == ["Alice Example", "Bob Builder", "Carol"])
        let bobsShare = try #require(try await bobSide.shared.fetch("share-a1", in: bobSide.zone).flatMap(Share.init))
        #expect(bobsShare.ownerName == Self.aliceName)
        #expect(Self.names(bobsShare) == ["Alice Example", "Bob Builder", "Carol"])
        #expect(bobsShare.currentUserParticipant?.nameComponents == Self.bobName)
        let bobsChanges = try await bobSide.shared.allZoneChanges(bobSide.zone, since: nil).pages.flatMap(\.records)
        let bobsChangedShare = try #require(
            bobsChanges.compactMap { $0.record }.first { $0.recordType == ShareDetails.recordType }.flatMap(Share.init))
        #expect(Self.names(bobsChangedShare) == ["Alice Example", "Bob Builder", "Carol"])

        // Dave holds the URL of the public share and has not accepted: the owner's name alone.
        let davePublic = try await backend.database(signedInAs: "dave", scope: .public)
        let davesView = try await davePublic.shareMetadata(shortGUID: guid)
        #expect(davesView.ownerName == Self.aliceName)
        #expect(Self.names(try #require(Share(davesView.share))) == ["Alice Example"])

        // A new name shows in the shares at once.
        try await backend.setName(UserNameComponents(givenName: "Bobby"), forUser: "bob")
        let renamed = try #require(try await alice.fetch("share-a1", in: albumsZone).flatMap(Share.init))
        #expect(Self.names(renamed) == ["Alice Example", "Bobby", "Carol"])
    }

    func sentNamesAreDropped() async throws {
        let bob = try await recordName(of: "bob")
        let alice = try await alicesAlbums()
        let forged = UserNameComponents(givenName: "Not", familyName: "Bob")
        let saved = try await shareAlbum(
            alice,
            participants: [ShareParticipant(lookupInfo: .user(bob), nameComponents: forged, permission: .readOnly)])
        #expect(saved.shareDetails?.participants.allSatisfy { $0.nameComponents == nil } == true)
        let bobSide = try await accept(try shortGUID(saved), as: "bob")
        var share = try #require(try await alice.fetch("share-a1", in: albumsZone).flatMap(Share.init))
        share.participants = share.participants.map { participant in
            var participant = participant
            participant.nameComponents = forged
            return participant
        }
        _ = try await alice.saveShare(share)
        let bobsShare = try #require(try await bobSide.shared.fetch("share-a1", in: bobSide.zone).flatMap(Share.init))
        #expect(bobsShare.participants.allSatisfy { $0.nameComponents == nil }, "\(bobsShare.participants)")
    }

    /// The names a share shows, in its participants' order.
    static func names(_ share: Share) -> [String] {
        share.participants.compactMap { $0.nameComponents?.displayName }
    }
}
