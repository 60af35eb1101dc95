import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// Every fault the in-memory server can inject, survived with nothing lost.
@Suite("SyncEngine under faults")
struct SyncEngineFaultTests {
    let zone = ZoneID(zoneName: "Note")

    @Test("throttling waits the server's retry-after on the engine's clock, then succeeds")
    func throttled() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, database, _) = try await devices.engine()
        let events = Collected(phone.events)
        try await phone.upload(Note(id: "n", title: "t"))
        database.inject(.throttled(retryAfter: .seconds(30)), count: 2, on: [.modifyRecords])

        let sync = Task { try await phone.sync() }
        await clock.waitForSleepers(count: 1)
        #expect(clock.pendingDeadlines == [clock.now.advanced(by: .seconds(30))])
        clock.advance(by: .seconds(30))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(30))
        try await sync.value

        #expect(await phone.pendingChangeCount == 0)
        let retries = events.values.compactMap { event -> Duration? in
            if case .retryScheduled(let delay, let error) = event, error.code == .throttled { return delay }
            return nil
        }
        #expect(retries == [.seconds(30), .seconds(30)])
        #expect(await devices.server.storedRecords(in: zone, of: "alice").count == 1)
    }

    @Test(
        "backoff grows exponentially without a retry-after, and gives up after the policy's attempts, the first included"
    )
    func backoffAndGivingUp() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, database, _) = try await devices.engine {
            $0.retryPolicy = RetryPolicy(initialDelay: .seconds(1), jitter: 0, maximumAttempts: 3)
        }
        try await phone.upload(Note(id: "n", title: "t"))
        database.inject(.tryAgainLater(), count: 10, on: [.modifyRecords])
        devices.server.resetRequestCounts()
        let sync = Task { try await phone.sync() }
        // Three attempts: the first try and two retries, after 1 s and 2 s.
        for expected in [1, 2] {
            await clock.waitForSleepers(count: 1)
            #expect(clock.pendingDeadlines == [clock.now.advanced(by: .seconds(expected))])
            clock.advance(by: .seconds(expected))
        }
        await #expect(throws: CloudError.self) { try await sync.value }
        #expect(devices.server.requestCount(of: .modifyRecords) == 3)
        // Nothing was dropped: the change waits for the next sync.
        #expect(await phone.pendingChangeCount == 1)
        database.removeInjectedFaults()
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
    }

    @Test("a lost acknowledgement is resent and settles without duplicates")
    func lostAcknowledgement() async throws {
        let devices = Devices()
        let (phone, database, _) = try await devices.engine { $0.retryPolicy = fastRetries }
        try await phone.upload(Note(id: "n", title: "t", body: "b"))
        database.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        let stored = await devices.server.storedRecords(in: zone, of: "alice")
        #expect(stored.count == 1)
        #expect(stored.first?["title"] == .string("t"))
        #expect(await phone.model(withIdentifier: "n")?.cloudMetadata?.changeTag == stored.first?.changeTag)
    }

    @Test("transient failures of fetches and of the account check are retried")
    func transientReads() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let (laptop, laptopDatabase, _) = try await devices.engine { $0.retryPolicy = fastRetries }
        try await phone.upload(Note(id: "n", title: "t"))
        try await phone.sync()
        laptopDatabase.inject(.networkFailure(), count: 2, on: [.fetchZoneChanges, .currentUser])
        laptopDatabase.inject(.internalError(), count: 1, on: [.fetchZoneChanges])
        try await laptop.sync()
        #expect(await laptop.model(withIdentifier: "n")?.title == "t")
    }

    @Test("a zone deleted behind the engine's back is created again with every local record")
    func zoneDeleted() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let events = Collected(phone.events)
        try await phone.upload([Note(id: "a", title: "a"), Note(id: "b", title: "b")])
        try await phone.sync()
        _ = await devices.server.deleteZone(zone, ownedBy: "alice")
        try await phone.upload(Note(id: "c", title: "c"))
        try await phone.sync()
        let stored = await devices.server.storedRecords(in: zone, of: "alice")
        #expect(Set(stored.map(\.recordName)) == ["a", "b", "c"])
        #expect(await phone.pendingChangeCount == 0)
        #expect(await events.waitUntil { $0.contains(.zoneRecreated) })
    }

    @Test("an expired sync token refetches the zone and removes what the server no longer has")
    func tokenExpired() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let (laptop, _, _) = try await devices.engine()
        let events = Collected(laptop.events)
        try await phone.upload([Note(id: "keep", title: "k"), Note(id: "gone", title: "g")])
        try await phone.sync()
        try await laptop.sync()
        try await phone.delete(identifiers: ["gone"])
        try await phone.upload(Note(id: "new", title: "n"))
        try await phone.sync()
        _ = await devices.server.expireChangeTokens(in: zone, ownedBy: "alice")
        try await laptop.sync()
        #expect(await laptop.models.map(\.id) == ["keep", "new"])
        #expect(await events.waitUntil { $0.contains(.fullRefetch) })
    }

    @Test("signing out stops syncing but not local changes; the status stream follows")
    func signOut() async throws {
        let devices = Devices()
        let (phone, database, _) = try await devices.engine()
        let statuses = Collected(phone.accountStatus)
        try await phone.sync()
        database.signOut()
        await #expect(throws: CloudError.self) { try await phone.sync() }
        try await phone.upload(Note(id: "offline", title: "written while signed out"))
        #expect(await phone.pendingChangeCount == 1)
        database.signIn(as: "alice")
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        #expect(await statuses.waitUntil { $0 == [.couldNotDetermine, .available, .noAccount, .available] })
    }

    @Test("another user signing in clears the previous user's data after reporting it")
    func switchUser() async throws {
        let devices = Devices()
        let (phone, database, _) = try await devices.engine()
        let events = Collected(phone.events)
        let changes = Collected(phone.changes)
        try await phone.upload(Note(id: "alice-1", title: "mine"))
        try await phone.sync()
        try await phone.upload(Note(id: "alice-2", title: "not sent yet"))
        database.signIn(as: "bob")
        try await phone.sync()
        #expect(await phone.models.isEmpty)
        #expect(await phone.pendingChangeCount == 0)
        let reported = await events.waitUntil {
            $0.contains(.accountChanged(previousUser: "alice", newUser: "bob", discardedChanges: ["alice-2"]))
        }
        #expect(reported)
        let removed = await changes.waitUntil { values in
            values.contains { if case .deleted(let ids) = $0 { Set(ids) == ["alice-1", "alice-2"] } else { false } }
        }
        #expect(removed)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").count == 1)
        try await phone.upload(Note(id: "bob-1", title: "his"))
        try await phone.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "bob").map(\.recordName) == ["bob-1"])
    }

    @Test("a record the server refuses for good stays in the journal and is reported")
    func quotaExceeded() async throws {
        let devices = Devices()
        let directory = temporaryDirectory("quota")
        // The engine holds its journal's lock: it goes before the restart.
        do {
            let (phone, _, _) = try await devices.engine(directory: directory)
            let events = Collected(phone.events)
            devices.server.setQuotaExceeded(true, forUser: "alice")
            try await phone.upload(Note(id: "n", title: "t"))
            try await phone.sync()
            #expect(await phone.pendingChangeCount == 1)
            #expect(await phone.refusedChanges["n"]?.code == .quotaExceeded)
            let reported = await events.waitUntil { values in
                values.contains {
                    if case .recordFailed("n", let error) = $0 { error.code == .quotaExceeded } else { false }
                }
            }
            #expect(reported)
        }

        // Restarting keeps it; once the quota is lifted it goes out.
        let (again, _, _) = try await devices.engine(directory: directory)
        #expect(await again.pendingChangeCount == 1)
        devices.server.setQuotaExceeded(false, forUser: "alice")
        try await again.sync()
        #expect(await again.pendingChangeCount == 0)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").count == 1)
    }

    @Test("a batch refused as too large is split")
    func batchSplit() async throws {
        let devices = Devices()
        let (phone, database, _) = try await devices.engine()
        try await phone.upload((0..<40).map { Note(id: "n\($0)", title: "t") })
        database.inject(
            InjectedFault(error: CloudError(.badRequest, reason: "request too large")), count: 1, on: [.modifyRecords])
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").count == 40)
    }

    @Test("a record that does not decode is reported and kept, never skipped silently")
    func undecodable() async throws {
        let devices = Devices()
        let directory: URL
        // The engine holds its journal's lock: it goes before the journal is read again.
        do {
            let (phone, _, phoneDirectory) = try await devices.engine()
            directory = phoneDirectory
            try await phone.sync()
            let writer = devices.server.database(signedInAs: "alice")
            let broken = Record(recordType: "Note", recordName: "broken", zoneID: zone, fields: ["title": .int64(5)])
            let good = Record(
                recordType: "Note", recordName: "good", zoneID: zone,
                fields: ["id": .string("good"), "title": .string("fine"), "body": .string("")])
            _ = try await writer.modifyRecords(
                [RecordOperation(.create, broken), RecordOperation(.create, good)], zoneID: zone, atomic: false)
            let events = Collected(phone.events)
            try await phone.sync()
            #expect(await phone.models.map(\.id) == ["good"])
            let reported = await events.waitUntil { values in
                values.contains { if case .undecodableRecord("broken", _) = $0 { true } else { false } }
            }
            #expect(reported)
        }
        // Kept in the journal: a restarted engine still has it and does not fail.
        let journal = try await Journal.open(directory: directory)
        #expect(journal.loadedDocuments[JournalKeys.server("broken")] != nil)
    }
}

/// Retries that do not slow the tests down on the real clock.
let fastRetries = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(5), jitter: 0)
