import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A write whose answer was lost arrived; a later send of the record is
/// refused. Found by the simulation's long mode (history 1693 with shares
/// of mixed versions).
@Suite("A refusal after a write in doubt", .timeLimit(.minutes(1)))
struct RefusedAfterDoubtTests {
    let server = InMemoryCloudServer()
    let zone = ZoneID(zoneName: "Notes")

    /// Alice's note, shared with bob (read-write) and synced by both.
    func sharedNote() async throws -> (alice: SyncEngine<NoteV1>, bob: SyncEngine<NoteV1>, InMemoryCloudDatabase) {
        var ownerConfiguration = SyncConfiguration(zoneName: "Notes")
        ownerConfiguration.automaticSync = false
        let alice = try await SyncEngine<NoteV1>(
            database: server.database(signedInAs: "alice"), directory: temporaryDirectory("alice"),
            configuration: ownerConfiguration)
        try await alice.upload(NoteV1(id: "n", title: "A", body: "a"))
        try await alice.sync()
        let share = try await alice.shareZone(
            title: "Notes", participants: [ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite)])
        let publicDatabase = server.database(scope: .public, signedInAs: "bob")
        let accepted = try await publicDatabase.accept(
            try await publicDatabase.shareMetadata(shortGUID: try #require(share.shortGUID)))
        var configuration = SyncConfiguration(sharedZone: accepted.zoneID)
        configuration.automaticSync = false
        configuration.retryPolicy = RetryPolicy(jitter: 0, maximumAttempts: 1)
        let handle = server.database(scope: .shared, signedInAs: "bob")
        let bob = try await SyncEngine<NoteV1>(
            database: handle, directory: temporaryDirectory("bob"), configuration: configuration)
        try await bob.sync()
        return (alice, bob, handle)
    }

    func setBobsPermission(_ permission: SharePermission, on alice: SyncEngine<NoteV1>) async throws {
        var share = try #require(try await alice.fetchZoneShare())
        share.setPermission(permission) { $0.isUser("bob") }
        _ = try await alice.saveShare(share)
    }

    @Test("an edit made on top of a write in doubt that arrived is not overwritten by that write sent again")
    func refusalKeepsTheWriteInDoubt() async throws {
        let (alice, bob, handle) = try await sharedNote()
        var edit = try #require(await bob.model(withIdentifier: "n"))
        edit.title = "Bob's"
        try await bob.upload(edit)
        handle.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
        await #expect(throws: CloudError.self) { try await bob.sync() }

        // Bob may only read for a while: his next send of the note is refused.
        try await setBobsPermission(.readOnly, on: alice)
        var more = try #require(await bob.model(withIdentifier: "n"))
        more.body = "bob's body"
        try await bob.upload(more)
        try await bob.sync()
        #expect(await bob.refusedChanges["n"]?.code == .accessDenied)

        let stored = try await alicesTitleOverBobs(alice, bob)
        // Bob's title arrived and alice replaced it: his change merges against it, not
        // against the version it was first based on, so alice's title stands.
        #expect(stored?.modelFields["title"] == .string("Alice's"))
        #expect(stored?.modelFields["body"] == .string("bob's body"))
    }

    /// Bob may write again; alice sees his title, which arrived, and
    /// replaces it; bob syncs. Returns the note as the server stores it.
    func alicesTitleOverBobs(_ alice: SyncEngine<NoteV1>, _ bob: SyncEngine<NoteV1>) async throws -> Record? {
        try await setBobsPermission(.readWrite, on: alice)
        try await alice.sync()
        var newer = try #require(await alice.model(withIdentifier: "n"))
        #expect(newer.title == "Bob's")
        newer.title = "Alice's"
        try await alice.upload(newer)
        try await alice.sync()
        try await bob.sync()
        return await server.storedRecords(in: zone, of: "alice").first { $0.recordName == "n" }
    }

    /// Bob's title reaches the server but its answer is lost, and alice
    /// changes the body on top of it before bob hears anything; then bob
    /// may only read, and the same write, sent again, is refused though its
    /// first send arrived.
    func bobsTitleInDoubtThenRefused(
        _ alice: SyncEngine<NoteV1>, _ bob: SyncEngine<NoteV1>, _ handle: InMemoryCloudDatabase
    ) async throws {
        var edit = try #require(await bob.model(withIdentifier: "n"))
        edit.title = "Bob's"
        try await bob.upload(edit)
        handle.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
        await #expect(throws: CloudError.self) { try await bob.sync() }
        try await alice.sync()
        var body = try #require(await alice.model(withIdentifier: "n"))
        #expect(body.title == "Bob's")
        body.body = "Alice's body"
        try await alice.upload(body)
        try await alice.sync()
        try await setBobsPermission(.readOnly, on: alice)
        try await bob.sync()
        #expect(await bob.refusedChanges["n"]?.code == .accessDenied)
    }

    @Test("a write in doubt sent again and refused is still merged against as the device's own")
    func refusedResendKeepsItsFirstSend() async throws {
        let (alice, bob, handle) = try await sharedNote()
        try await bobsTitleInDoubtThenRefused(alice, bob, handle)
        // Bob's change is his first send itself: merged against it, alice's edits stand.
        let stored = try await alicesTitleOverBobs(alice, bob)
        #expect(stored?.modelFields["title"] == .string("Alice's"))
        #expect(stored?.modelFields["body"] == .string("Alice's body"))
    }

    @Test("a refused change whose first send may have arrived can be given up: the server's version comes back")
    func refusedInDoubtCanBeDiscarded() async throws {
        let (alice, bob, handle) = try await sharedNote()
        try await bobsTitleInDoubtThenRefused(alice, bob, handle)
        try await bob.discardChanges(identifiers: ["n"])
        #expect(await bob.refusedChanges["n"] == nil)
        #expect(await bob.pendingChangeCount == 0)
        try await bob.sync()
        // The first send arrived: it is in the server's version, and now the device's.
        let note = try #require(await bob.model(withIdentifier: "n"))
        #expect(note.title == "Bob's" && note.body == "Alice's body")
    }
}
