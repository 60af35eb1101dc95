import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// Giving up a change the server refused brings back what the server holds.
@Suite("SyncEngine discarding changes")
struct SyncEngineDiscardTests {
    @Test("a read-only participant who discards a refused edit gets the owner's later edits")
    func discardedRefusalCatchesUp() async throws {
        let devices = Devices()
        let (owner, _, _) = try await devices.engine()
        try await owner.upload(Note(id: "n", title: "first"))
        try await owner.sync()
        let share = try await owner.shareZone(participants: [
            ShareParticipant(lookupInfo: .user("bob"), permission: .readOnly)
        ])
        let publicDatabase = devices.server.database(scope: .public, signedInAs: "bob")
        let metadata = try await publicDatabase.accept(
            try await publicDatabase.shareMetadata(shortGUID: try #require(share.shortGUID)))
        var configuration = SyncConfiguration(sharedZone: metadata.zoneID)
        configuration.automaticSync = false
        let participant = try await SyncEngine<Note>(
            database: devices.server.database(scope: .shared, signedInAs: "bob"),
            directory: temporaryDirectory("participant"), configuration: configuration)
        try await participant.sync()

        var edited = try #require(await participant.model(withIdentifier: "n"))
        edited.title = "bob's"
        try await participant.upload(edited)
        try await participant.sync()
        #expect(await participant.refusedChanges["n"]?.code == .accessDenied)

        var renamed = try #require(await owner.model(withIdentifier: "n"))
        renamed.title = "second"
        try await owner.upload(renamed)
        try await owner.sync()
        // The refused change is still waiting: this fetch leaves the record to it.
        try await participant.sync()

        try await participant.discardChanges(identifiers: ["n"])
        try await participant.sync()
        #expect(await participant.pendingChangeCount == 0)
        #expect(await participant.model(withIdentifier: "n")?.title == "second")
        let ownerTag = await owner.model(withIdentifier: "n")?.cloudMetadata?.changeTag
        #expect(await participant.model(withIdentifier: "n")?.cloudMetadata?.changeTag == ownerTag)
    }
}
