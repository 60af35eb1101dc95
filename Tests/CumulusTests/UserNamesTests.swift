import Cumulus
import CumulusServerCore
import CumulusTesting
import Testing

/// The one rule of what a user's name may hold (`UserNames`), and the names
/// the in-memory server shows through its handles.
@Suite("User names")
struct UserNamesTests {
    @Test("a token's given and family names win over its name; a name alone is given whole")
    func claims() {
        #expect(
            UserNames.fromClaims(name: "Ignored Whole", givenName: "Alice", familyName: "Example")
                == UserNameComponents(givenName: "Alice", familyName: "Example"))
        #expect(
            UserNames.fromClaims(name: nil, givenName: nil, familyName: "Example")
                == UserNameComponents(familyName: "Example"))
        #expect(
            UserNames.fromClaims(name: "Alice Example", givenName: nil, familyName: nil)
                == UserNameComponents(givenName: "Alice Example"))
        #expect(UserNames.fromClaims(name: nil, givenName: nil, familyName: nil) == nil)
        #expect(UserNames.fromClaims(name: " \n\t", givenName: "\u{202E}", familyName: "") == nil)
    }

    @Test("a token's name is cleaned: line breaks are spaces, controls and reordering characters go")
    func cleaning() throws {
        let cleaned = UserNames.fromClaims(
            name: "  Alice\n\n  Example\u{7}\u{202E}gnp.exe\u{202C}\u{200F}\u{0}  ", givenName: nil, familyName: nil)
        #expect(cleaned?.givenName == "Alice Example" + "gnp.exe")
        // Joiners stay: they make one emoji or one word of some scripts.
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"
        #expect(UserNames.fromClaims(name: nil, givenName: nil, familyName: family)?.familyName == family)
    }

    @Test("a token's long name is cut at a character boundary within the limit")
    func cutting() throws {
        let long = String(repeating: "é", count: UserNames.maximumLength)  // two bytes each
        let cut = try #require(UserNames.fromClaims(name: long, givenName: nil, familyName: nil)?.givenName)
        #expect(cut.utf8.count == UserNames.maximumLength)
        #expect(cut.allSatisfy { $0 == "é" })
        let flags = String(repeating: "\u{1F1EB}\u{1F1F7}", count: 100)  // 8 bytes a character
        let cutFlags = try #require(UserNames.fromClaims(name: nil, givenName: flags, familyName: nil)?.givenName)
        #expect(cutFlags.utf8.count <= UserNames.maximumLength && cutFlags.count == UserNames.maximumLength / 8)
    }

    @Test("a name the operator gives is trimmed, and refused when it holds a control or is too long")
    func checked() throws {
        #expect(
            try UserNames.checked(UserNameComponents(givenName: " Alice ", familyName: ""))
                == UserNameComponents(givenName: "Alice"))
        #expect(try UserNames.checked(UserNameComponents(givenName: "  ")) == nil)
        for bad in ["Alice\nExample", "Alice\u{202E}", "A\u{0}", "\u{85}x", String(repeating: "a", count: 257)] {
            #expect(throws: CloudError.self, "\(bad.debugDescription)") {
                try UserNames.checked(UserNameComponents(givenName: bad))
            }
        }
    }

    @Test("displayName joins the parts that are set")
    func displayName() {
        #expect(UserNameComponents(givenName: "Alice", familyName: "Example").displayName == "Alice Example")
        #expect(UserNameComponents(givenName: "", familyName: "Example").displayName == "Example")
        #expect(UserNameComponents().displayName == nil)
    }

    @Test("the in-memory server refuses a name with a control character, and keeps the one it had")
    func inMemoryRefusal() async throws {
        let server = InMemoryCloudServer()
        try await server.setEmailAddress("bob@example.com", forUser: "bob")
        try await server.setName(UserNameComponents(givenName: "Bob"), forUser: "bob")
        await #expect(throws: CloudError.self) {
            try await server.setName(UserNameComponents(givenName: "Bob\r\nAdmin"), forUser: "bob")
        }
        let found = try await server.database(signedInAs: "alice").lookupUsers(userRecordNames: ["bob"])
        #expect(found.first?.nameComponents == UserNameComponents(givenName: "Bob"))
    }

    @Test("an invitation names its owner; the share names its owner and who joined")
    func invitationOwnerName() async throws {
        let server = InMemoryCloudServer()
        try await server.setName(UserNameComponents(givenName: "Alice", familyName: "Example"), forUser: "alice")
        try await server.setName(UserNameComponents(givenName: "Bob"), forUser: "bob")
        let alice = server.database(signedInAs: "alice")
        let zone = ZoneID(zoneName: "Trips")
        _ = try await alice.modifyZones([.create(zone)])
        _ = try await alice.modifyRecords(
            [RecordOperation(.create, Record(recordType: "Trip", recordName: "rome", zoneID: zone))], zoneID: zone,
            atomic: true)
        let share = try await alice.shareRecord(
            named: "rome", in: zone, title: "Rome",
            participants: [ShareParticipant(lookupInfo: .user("bob"), permission: .readOnly)])
        #expect(share.ownerName?.displayName == "Alice Example")
        let bob = server.database(scope: .public, signedInAs: "bob")
        let invitation = try await bob.shareMetadata(shortGUID: try #require(share.shortGUID))
        #expect(invitation.ownerName?.displayName == "Alice Example")
        #expect(invitation.title == "Rome")
        let accepted = try await bob.accept(invitation)
        #expect(
            Share(accepted.share)?.participants.compactMap(\.nameComponents?.displayName) == ["Alice Example", "Bob"])
    }
}
