import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A write that may have reached the server is settled as in doubt after a
/// restart, though sending it wrote nothing to the journal.
@Suite("Writes in doubt in the journal")
struct InDoubtJournalTests {
    let zone = ZoneID(zoneName: "Note")

    /// An engine that gives up after its first failure.
    func engine(_ devices: Devices, _ directory: URL) async throws -> (SyncEngine<Note>, InMemoryCloudDatabase) {
        let (engine, database, _) = try await devices.engine(directory: directory) {
            $0.retryPolicy = RetryPolicy(jitter: 0, maximumAttempts: 1)
        }
        return (engine, database)
    }

    /// Syncs and returns the events of the run.
    func syncEvents(_ engine: SyncEngine<Note>) async throws -> [SyncEvent] {
        var iterator = engine.events.makeAsyncIterator()
        try await engine.sync()
        var events: [SyncEvent] = []
        while let event = await iterator.next() {
            events.append(event)
            if case .syncFinished = event { break }
        }
        return events
    }

    func isConflict(_ event: SyncEvent) -> Bool {
        switch event {
        case .conflict, .mergedWithoutAncestor: true
        default: false
        }
    }

    /// Sends the pending changes; the server applies them and the answer is lost.
    func sendAndLoseTheAnswer(_ engine: SyncEngine<Note>, _ database: InMemoryCloudDatabase) async {
        database.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
        await #expect(throws: CloudError.self) { try await engine.sync() }
    }

    @Test("a create whose answer was lost is in doubt after a restart: deleting it deletes it on the server")
    func queuedSaveIsInDoubt() async throws {
        let devices = Devices()
        let directory = temporaryDirectory("in-doubt-queued")
        do {
            let (phone, database) = try await engine(devices, directory)
            try await phone.sync()
            try await phone.upload(Note(id: "n", title: "A"))
            await sendAndLoseTheAnswer(phone, database)
            await phone.close()
        }
        #expect(await devices.server.storedRecords(in: zone, of: "alice").count == 1)
        let (again, _) = try await engine(devices, directory)
        // Not cancelled locally as a create that never left: it may be on the server.
        try await again.delete(identifiers: ["n"])
        #expect(await again.pendingChangeCount == 1)
        try await again.sync()
        #expect(await again.pendingChangeCount == 0)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").isEmpty)
    }

    @Test("a create whose answer was lost is recognised after a restart when it is sent again")
    func queuedSaveIsRecognised() async throws {
        let devices = Devices()
        let directory = temporaryDirectory("in-doubt-resent")
        do {
            let (phone, database) = try await engine(devices, directory)
            try await phone.sync()
            try await phone.upload(Note(id: "n", title: "A"))
            await sendAndLoseTheAnswer(phone, database)
            await phone.close()
        }
        let (again, _) = try await engine(devices, directory)
        let events = try await syncEvents(again)
        #expect(!events.contains(where: isConflict), "\(events)")
        #expect(await again.pendingChangeCount == 0)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").map { $0["title"] } == [.string("A")])
    }

    @Test("a save in doubt that a later edit replaced stays in doubt in the journal")
    func replacedSaveStaysInDoubt() async throws {
        let devices = Devices()
        let directory = temporaryDirectory("in-doubt-replaced")
        do {
            let (phone, database) = try await engine(devices, directory)
            try await phone.sync()
            try await phone.upload(Note(id: "n", title: "A", body: "kept"))
            await sendAndLoseTheAnswer(phone, database)
            try await phone.upload(Note(id: "n", title: "B", body: ""))
            await phone.close()
        }
        let (again, _) = try await engine(devices, directory)
        let events = try await syncEvents(again)
        // Recognised as its own write, A is the base of B: B replaces it whole.
        #expect(!events.contains(where: isConflict), "\(events)")
        let stored = await devices.server.storedRecords(in: zone, of: "alice")
        #expect(stored.map { $0["title"] } == [.string("B")])
        #expect(stored.map { $0["body"] } == [.string("")])
    }

    @Test("a format 2 journal loads: its pending save is stamped before it is sent, its write in doubt recognised")
    func formatTwoJournal() async throws {
        let devices = Devices()
        let directory = temporaryDirectory("in-doubt-format-2")
        let database: InMemoryCloudDatabase
        do {
            let (phone, phoneDatabase) = try await engine(devices, directory)
            try await phone.sync()
            await phone.close()
            database = phoneDatabase
        }
        // What a format 2 engine left: a pending save without an identifier,
        // and the same save, stamped, sent and in doubt. It arrived.
        let record = try RecordEncoder(zoneID: zone).encode(Note(id: "n", title: "A"))
        let sent = WriteLineage.stamped(record, identifier: "feedface", basedOn: [])
        _ = try await database.modifyRecords([RecordOperation(.create, sent)], zoneID: zone, atomic: false)
        let log = directory.appendingPathComponent("log-1.jsonl")
        var text = String(decoding: try Data(contentsOf: log), as: UTF8.self)
        #expect(text.contains(#""format":3"#))
        text = text.replacingOccurrences(of: #""format":3"#, with: #""format":2"#)
        let save = String(decoding: try WireFormat.encode(record), as: UTF8.self)
        let inDoubt = String(decoding: try WireFormat.encode(sent), as: UTF8.self)
        text += #"{"set":{"save/n":\#(save),"sent/n":[\#(inDoubt)]}}"# + "\n"
        try Data(text.utf8).write(to: log)

        let (again, _) = try await engine(devices, directory)
        #expect(await again.pendingChangeCount == 1)
        #expect(await again.model(withIdentifier: "n")?.title == "A")
        let events = try await syncEvents(again)
        #expect(!events.contains(where: isConflict), "\(events)")
        #expect(await again.pendingChangeCount == 0)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").count == 1)
        await again.close()
        let after = String(decoding: try Data(contentsOf: log), as: UTF8.self)
        #expect(after.contains(#""write/n":"#), "stamped and written again before it was sent")
        #expect(after.contains(#""format":3"#))
    }
}
