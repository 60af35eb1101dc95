import Cumulus
import CumulusConformance
import Foundation
import Synchronization
import Testing

/// What an engine over HTTP hears of changes written while its notification
/// channel was still opening.
@Suite("SyncEngine notifications over HTTP")
struct EngineNotificationTests {
    @Test("a change written before the engine's channel opened is fetched once it opens")
    func changeBeforeTheChannelOpened() async throws {
        let server = try await RunningServer.start()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-engine-notify-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let gate = TokenGate()
            let device = try await server.database(signedInAs: "alice", transport: gate)
            // Only notifications bring changes: no polling within the test's time.
            let configuration = SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600))
            let engine = try await SyncEngine<ConformanceNote>(
                database: device, directory: directory, configuration: configuration)
            let arrivals = engine.changes
            try await engine.sync()

            // Another device writes while the engine's channel waits to open.
            let other = try await server.database(signedInAs: "alice")
            let zone = ZoneID(zoneName: ConformanceNote.cloudRecordType)
            let record = try RecordEncoder(zoneID: zone).encode(ConformanceNote(id: "early", title: "written early"))
            let saved = try await other.modifyRecords([RecordOperation(.create, record)], zoneID: zone, atomic: true)
            #expect(saved[0].record != nil)

            gate.open()
            let heard = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    for await change in arrivals {
                        if case .updated(let notes) = change, notes.contains(where: { $0.id == "early" }) {
                            return true
                        }
                    }
                    return false
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(10))
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(heard)
            await engine.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

/// A transport that holds `tokens/create` until ``open()``: a notification
/// channel that opens late.
final class TokenGate: CloudTransport {
    private let base = URLSessionTransport()
    private let isOpen = Mutex(false)

    func open() { isOpen.withLock { $0 = true } }

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        if request.url.path.hasSuffix("/tokens/create") {
            while !isOpen.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        }
        return try await base.send(request)
    }
}
