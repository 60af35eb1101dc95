import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A fetch of many pages asks for the next page while it applies the last.
@Suite("SyncEngine read-ahead")
struct SyncEngineReadAheadTests {
    /// The tokens of the pages asked for, in order.
    final class Requests: @unchecked Sendable {
        // Safety: `tokens` and `caller` are guarded by `lock`.
        private let lock = NSLock()
        private var tokens: [SyncToken?] = []
        private var caller: Task<Void, any Error>?

        /// Records the requests; returns how many were made before them.
        func record(_ requests: [ZoneChangesRequest]) -> Int {
            lock.withLock {
                defer { tokens += requests.map(\.syncToken) }
                return tokens.count
            }
        }

        var made: [SyncToken?] { lock.withLock { tokens } }

        func setCaller(_ task: Task<Void, any Error>) { lock.withLock { caller = task } }

        /// Cancels the caller, once it is known.
        func cancelCaller() async {
            while true {
                if let task = lock.withLock({ caller }) { return task.cancel() }
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    /// Writes `count` notes as another device of alice's.
    private func fill(_ server: InMemoryCloudServer, count: Int) async throws {
        let writer = server.database(signedInAs: "alice")
        let zone = ZoneID(zoneName: Note.cloudRecordType)
        _ = try await writer.modifyZones([.create(zone)])
        let encoder = RecordEncoder(zoneID: zone)
        let operations = try (0..<count).map {
            RecordOperation(.create, try encoder.encode(Note(id: "n\($0)", title: "note \($0)")))
        }
        _ = try await writer.modifyRecords(operations, zoneID: zone, atomic: false)
    }

    @Test("every page is asked for once, and the engine ends with every record and the last token")
    func everyPageOnce() async throws {
        let server = InMemoryCloudServer()
        try await fill(server, count: 9)
        let requests = Requests()
        var database = InterposedDatabase(server.database(signedInAs: "alice"))
        database.afterFetchZoneChanges = { _ = requests.record($0) }
        let directory = temporaryDirectory("read-ahead")
        let engine = try await SyncEngine<Note>(
            database: database, directory: directory,
            configuration: SyncConfiguration(automaticSync: false, fetchResultsLimit: 2))
        try await engine.sync()
        #expect(await engine.models.map(\.id).sorted() == (0..<9).map { "n\($0)" }.sorted())
        let made = requests.made
        // Five pages of two, each asked for once.
        #expect(made.count == 5)
        #expect(Set(made.compactMap { $0 }).count == 4)
        await engine.close()

        // The token saved is the last page's: a second sync asks from there and gets nothing new.
        let reopened = try await SyncEngine<Note>(
            database: database, directory: directory,
            configuration: SyncConfiguration(automaticSync: false, fetchResultsLimit: 2))
        #expect(await reopened.models.count == 9)
        try await reopened.sync()
        #expect(requests.made.count == 6)
        await reopened.close()
    }

    @Test("the next page is asked for before the last one is applied")
    func nextPageBeforeApplying() async throws {
        let server = InMemoryCloudServer()
        try await fill(server, count: 6)
        let requests = Requests()
        var database = InterposedDatabase(server.database(signedInAs: "alice"))
        // The first page's answer cancels the sync: the engine stops before
        // applying it, after asking for the second.
        database.afterFetchZoneChanges = { if requests.record($0) == 0 { await requests.cancelCaller() } }
        let engine = try await SyncEngine<Note>(
            database: database, directory: temporaryDirectory("read-ahead"),
            configuration: SyncConfiguration(automaticSync: false, fetchResultsLimit: 2))
        let caller = Task { try await engine.sync() }
        requests.setCaller(caller)
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(await engine.models.isEmpty)
        let deadline = ContinuousClock.now + .seconds(5)
        while requests.made.count < 2 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(requests.made.count == 2)
        #expect(requests.made.first == .some(nil))
        await engine.close()
    }
}
