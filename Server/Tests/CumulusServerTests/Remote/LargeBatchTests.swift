import Cumulus
import CumulusConformance
import Foundation
import Testing

@Suite("Large batches over HTTP")
struct LargeBatchTests {
    @Test("a batch larger than the server's body cap is answered 413 and sent again in halves")
    func batchOverTheBodyCap() async throws {
        // 24 notes of 900 KB: about 22 MB in one request, over the 16 MiB cap.
        let server = try await RunningServer.start()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-large-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let phone = try await SyncEngine<ConformanceNote>(
                database: try await server.database(signedInAs: "alice"),
                directory: directory.appendingPathComponent("phone"),
                configuration: SyncConfiguration(automaticSync: false))
            let body = String(repeating: "a", count: 900 * 1024)
            let notes = (0..<24).map { ConformanceNote(id: String(format: "big%02d", $0), title: "\($0)", body: body) }
            try await phone.upload(notes)
            try await phone.sync()
            #expect(await phone.pendingChangeCount == 0)

            let laptop = try await SyncEngine<ConformanceNote>(
                database: try await server.database(signedInAs: "alice"),
                directory: directory.appendingPathComponent("laptop"),
                configuration: SyncConfiguration(automaticSync: false))
            try await laptop.sync()
            let received = await laptop.models
            #expect(received.map(\.id) == notes.map(\.id))
            #expect(received.allSatisfy { $0.body == body })
            await phone.close()
            await laptop.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
