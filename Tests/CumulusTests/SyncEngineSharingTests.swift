import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

@Suite("SyncEngine sharing")
struct SyncEngineSharingTests {
    let server = InMemoryCloudServer()

    func engine(_ user: String, scope: DatabaseScope = .private, sharedZone: ZoneID? = nil) async throws
        -> SyncEngine<Note>
    {
        var configuration = sharedZone.map { SyncConfiguration(sharedZone: $0) } ?? SyncConfiguration()
        configuration.zoneName = configuration.zoneName ?? "Notes"
        configuration.automaticSync = false
        configuration.retryPolicy = RetryPolicy(jitter: 0)
        return try await SyncEngine<Note>(
            database: server.database(scope: scope, signedInAs: user), directory: temporaryDirectory(user),
            configuration: configuration)
    }

    /// The owner's engine with two notes on the server, and the zone shared with these participants.
    func sharedNotes(_ participants: [ShareParticipant]) async throws -> (SyncEngine<Note>, Share) {
        let alice = try await engine("alice")
        try await alice.upload([Note(id: "n1", title: "Groceries"), Note(id: "n2", title: "Trip")])
        try await alice.sync()
        let share = try await alice.shareZone(title: "Alice's notes", participants: participants)
        return (alice, share)
    }

    /// `user` accepts the share and opens an engine on its zone.
    func participant(_ user: String, _ share: Share) async throws -> SyncEngine<Note> {
        let publicDatabase = server.database(scope: .public, signedInAs: user)
        let invitation = try await publicDatabase.shareMetadata(shortGUID: try #require(share.shortGUID))
        #expect(invitation.title == "Alice's notes")
        let accepted = try await publicDatabase.accept(invitation)
        return try await engine(user, scope: .shared, sharedZone: accepted.zoneID)
    }

    @Test("sharing a model or a zone shared already is ALREADY_SHARED, naming the share to fetch")
    func sharingTwice() async throws {
        let alice = try await engine("alice")
        try await alice.upload([Note(id: "n1", title: "Groceries")])
        try await alice.sync()
        let note = try #require(await alice.model(withIdentifier: "n1"))
        let share = try await alice.share(note, title: "Groceries")
        let error = await #expect(throws: CloudError.self) { try await alice.share(note, title: "Again") }
        #expect(error?.code == .alreadyShared)
        #expect(error?.reason.contains(share.record.recordName) == true)
        #expect(try await alice.fetchShare(of: note)?.record.recordName == share.record.recordName)

        let other = try await engine("bob")
        try await other.upload([Note(id: "b1", title: "Bob's")])
        try await other.sync()
        _ = try await other.shareZone(title: "Bob's notes")
        let zoneError = await #expect(throws: CloudError.self) { try await other.shareZone(title: "Again") }
        #expect(zoneError?.code == .alreadyShared)
        #expect(try await other.fetchZoneShare() != nil)
    }

    @Test(
        "a shared engine whose device switches user keeps nothing of the first user's, and writes nothing as the second"
    )
    func accountSwitchOnSharedEngine() async throws {
        let (alice, share) = try await sharedNotes([ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite)])
        let publicDatabase = server.database(scope: .public, signedInAs: "bob")
        let accepted = try await publicDatabase.accept(
            try await publicDatabase.shareMetadata(shortGUID: try #require(share.shortGUID)))
        let device = server.database(scope: .shared, signedInAs: "bob")
        var configuration = SyncConfiguration(sharedZone: accepted.zoneID)
        configuration.automaticSync = false
        let bob = try await SyncEngine<Note>(
            database: device, directory: temporaryDirectory("switch"), configuration: configuration)
        try await bob.sync()
        #expect(await bob.models.count == 2)
        try await bob.upload(Note(id: "n7", title: "Bob's, unsent"))
        device.signIn(as: "dave")
        try await bob.sync()
        #expect(await bob.models.isEmpty)
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "n7") == nil)
        #expect(Set(await alice.models.map(\.id)) == ["n1", "n2"])
    }

    @Test("a refused change stays refused across a restart: not sent again until the share allows it")
    func refusalSurvivesRestart() async throws {
        let (alice, share) = try await sharedNotes([ShareParticipant(lookupInfo: .user("carol"), permission: .readOnly)]
        )
        let publicDatabase = server.database(scope: .public, signedInAs: "carol")
        let accepted = try await publicDatabase.accept(
            try await publicDatabase.shareMetadata(shortGUID: try #require(share.shortGUID)))
        var configuration = SyncConfiguration(sharedZone: accepted.zoneID)
        configuration.automaticSync = false
        let directory = temporaryDirectory("restart")
        var carol: SyncEngine<Note>? = try await SyncEngine<Note>(
            database: server.database(scope: .shared, signedInAs: "carol"), directory: directory,
            configuration: configuration)
        try await carol!.sync()
        try await carol!.delete(identifiers: ["n1"])
        try await carol!.sync()
        #expect(await carol!.refusedChanges["n1"]?.code == .accessDenied)
        await carol!.close()
        carol = nil

        let reopened = try await SyncEngine<Note>(
            database: server.database(scope: .shared, signedInAs: "carol"), directory: directory,
            configuration: configuration)
        #expect(await reopened.refusedChanges["n1"]?.code == .accessDenied)
        server.resetRequestCounts()
        try await reopened.sync()
        #expect(server.requestCount(of: .modifyRecords) == 0)
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "n1") != nil)

        var current = try #require(try await alice.fetchZoneShare())
        current.setPermission(.readWrite) { $0.isUser("carol") }
        _ = try await alice.saveShare(current)
        try await reopened.sync()
        #expect(await reopened.refusedChanges.isEmpty)
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "n1") == nil)
    }

    @Test("a read-write participant syncs the shared zone; edits meet through the resolver")
    func readWriteParticipant() async throws {
        let (alice, share) = try await sharedNotes([ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite)])
        #expect(share.participants.map(\.acceptanceStatus) == [.accepted, .pending])
        let bob = try await participant("bob", share)
        try await bob.sync()
        #expect(Set(await bob.models.map(\.id)) == ["n1", "n2"])

        var edit = try #require(await bob.model(withIdentifier: "n1"))
        edit.body = "milk"
        try await bob.upload(edit)
        try await bob.upload(Note(id: "n3", title: "From bob"))
        var aliceEdit = try #require(await alice.model(withIdentifier: "n1"))
        aliceEdit.tag = "home"
        try await alice.upload(aliceEdit)
        try await bob.sync()
        try await alice.sync()
        try await bob.sync()
        let merged = try #require(await alice.model(withIdentifier: "n1"))
        #expect(merged.body == "milk")
        #expect(merged.tag == "home")
        #expect(await alice.model(withIdentifier: "n3")?.title == "From bob")
        #expect(await bob.model(withIdentifier: "n1")?.content == merged.content)
        #expect(await bob.pendingChangeCount == 0)
    }

    @Test("a read-only participant's edit is refused, reported, kept until discarded, and sent when allowed")
    func readOnlyParticipant() async throws {
        let (alice, share) = try await sharedNotes([ShareParticipant(lookupInfo: .user("carol"), permission: .readOnly)]
        )
        let carol = try await participant("carol", share)
        let events = Collected(carol.events)
        try await carol.sync()
        var edit = try #require(await carol.model(withIdentifier: "n2"))
        edit.title = "Carol's trip"
        try await carol.upload(edit)
        try await carol.sync()
        let reported = await events.waitUntil { values in
            values.contains {
                if case .recordFailed("n2", let error) = $0 { error.code == .accessDenied } else { false }
            }
        }
        #expect(reported)
        #expect(await carol.refusedChanges["n2"]?.code == .accessDenied)
        #expect(await carol.model(withIdentifier: "n2")?.title == "Carol's trip")
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "n2")?.title == "Trip")

        // Discarding goes back to the server's version.
        try await carol.discardChanges(identifiers: ["n2"])
        #expect(await carol.model(withIdentifier: "n2")?.title == "Trip")
        #expect(await carol.pendingChangeCount == 0)

        // A refused edit waits; once the owner allows writes, the next sync sends it.
        try await carol.upload(edit)
        try await carol.sync()
        #expect(await carol.refusedChanges["n2"]?.code == .accessDenied)
        var current = try #require(try await alice.fetchZoneShare())
        current.setPermission(.readWrite) { $0.isUser("carol") }
        _ = try await alice.saveShare(current)
        try await carol.sync()
        #expect(await carol.refusedChanges.isEmpty)
        #expect(await carol.pendingChangeCount == 0)
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "n2")?.title == "Carol's trip")
    }

    @Test(
        "a removed participant, one who leaves, and all when sharing stops lose the shared models; the owner keeps them"
    )
    func losingAccess() async throws {
        let (alice, share) = try await sharedNotes([
            ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite),
            ShareParticipant(lookupInfo: .user("carol"), permission: .readOnly),
        ])
        let bob = try await participant("bob", share)
        let carol = try await participant("carol", share)
        try await bob.sync()
        try await carol.sync()
        let carolChanges = Collected(carol.changes)
        let carolEvents = Collected(carol.events)

        var current = try #require(try await alice.fetchZoneShare())
        current.removeParticipants { $0.isUser("carol") }
        _ = try await alice.saveShare(current)
        try await carol.sync()
        #expect(await carol.models.isEmpty)
        #expect(
            await carolChanges.waitUntil { values in
                values.contains { if case .deleted(let names) = $0 { Set(names) == ["n1", "n2"] } else { false } }
            })
        #expect(
            await carolEvents.waitUntil { $0.contains { if case .shareLost = $0 { true } else { false } } })

        // Bob has an edit waiting when he leaves: it is reported as discarded.
        try await bob.upload(Note(id: "n9", title: "Unsent"))
        let bobEvents = Collected(bob.events)
        let stored = await server.storedRecords(in: share.zoneID, of: "alice")
        let shareRecord = try #require(stored.first { $0.recordType == ShareDetails.recordType })
        let shareSeen = try #require(Share(shareRecord))
        try await bob.leave(shareSeen)
        try await bob.sync()
        #expect(await bob.models.isEmpty)
        #expect(
            await bobEvents.waitUntil { values in
                values.contains { if case .shareLost(let discarded) = $0 { discarded == ["n9"] } else { false } }
            })
        try await alice.sync()
        #expect(Set(await alice.models.map(\.id)) == ["n1", "n2"])
        let after = try #require(try await alice.fetchZoneShare())
        #expect(after.participants.first { $0.isUser("bob") }?.acceptanceStatus == .removed)

        // Stopping the share: a participant who comes back first, then loses it with everyone.
        let again = try await participant("bob", share)
        try await again.sync()
        #expect(await again.models.count == 2)
        try await alice.stopSharing(after)
        try await again.sync()
        #expect(await again.models.isEmpty)
        #expect(await alice.models.count == 2)
    }
}

@Suite("Share values")
struct ShareValueTests {
    @Test("a participant is matched by exact name bytes, and by address with only ASCII letters folded")
    func participantMatching() {
        let byName = ShareParticipant(lookupInfo: .user("caf\u{E9}"), permission: .readOnly)
        #expect(byName.isUser("caf\u{E9}"))
        #expect(!byName.isUser("cafe\u{301}"))
        let byAddress = ShareParticipant(lookupInfo: .email("Bob@Example.com"), permission: .readOnly)
        #expect(byAddress.isUser(emailAddress: "bob@example.COM"))
        let accented = ShareParticipant(lookupInfo: .email("\u{C9}lise@example.com"), permission: .readOnly)
        #expect(!accented.isUser(emailAddress: "\u{E9}lise@example.com"))
        #expect(!accented.isUser(emailAddress: "E\u{301}lise@example.com"))
    }
}
