import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// An upload equal to what the engine holds is no change: it is not sent,
/// and other devices do not see one.
@Suite("Uploading an unchanged model", .timeLimit(.minutes(1)))
struct UnchangedUploadTests {
    @Test("an upload equal to the server's version queues and sends nothing")
    func unchangedUploadSendsNothing() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let (laptop, _, _) = try await devices.engine()
        try await phone.upload(Note(id: "n", title: "Groceries"))
        try await phone.sync()
        try await laptop.sync()
        let tag = try #require(await phone.model(withIdentifier: "n")?.cloudMetadata?.changeTag)

        let unchanged = try #require(await phone.model(withIdentifier: "n"))
        try await phone.upload(unchanged)
        #expect(await phone.pendingChangeCount == 0)
        try await phone.sync()

        let changes = laptop.changes
        try await laptop.sync()
        #expect(await laptop.model(withIdentifier: "n")?.cloudMetadata?.changeTag == tag)
        #expect(await phone.model(withIdentifier: "n")?.cloudMetadata?.changeTag == tag)
        await laptop.close()
        #expect(await Array(changes).isEmpty)
        await phone.close()
    }
}
