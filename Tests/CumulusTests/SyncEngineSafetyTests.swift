import CumulusTesting
import Foundation
import Testing

@_spi(Testing) @testable import Cumulus

/// The cases in which a sync framework must never lose an edit or move
/// data between accounts, each forced on the manual clock.
@Suite("SyncEngine safety")
struct SyncEngineSafetyTests {
    let zone = ZoneID(zoneName: "Note")

    /// The phone's engine, its handle and the sync task, with the sync
    /// stopped in its first retry wait.
    func syncWaitingForRetry(
        _ engine: SyncEngine<Note>, clock: ManualClock
    ) async -> Task<Void, any Error> {
        let sync = Task { try await engine.sync() }
        await clock.waitForSleepers(count: 1)
        return sync
    }

    /// A device of alice on a manual clock, with `notes` uploaded and synced.
    func syncedDevice(
        _ notes: [Note]
    ) async throws -> (clock: ManualClock, devices: Devices, phone: SyncEngine<Note>, database: InMemoryCloudDatabase) {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, database, _) = try await devices.engine()
        try await phone.upload(notes)
        try await phone.sync()
        return (clock, devices, phone, database)
    }

    // MARK: The ancestor of a merge

    @Test("an edit of a copy kept from before another device's edit keeps that edit")
    func staleCopyKeepsOtherDevicesEdit() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let (laptop, _, _) = try await devices.engine()
        try await phone.upload(Note(id: "n", title: "Eiffel", body: "1"))
        try await phone.sync()
        try await laptop.sync()
        let kept = try #require(await laptop.model(withIdentifier: "n"))  // a detail screen's copy

        var renamed = try #require(await phone.model(withIdentifier: "n"))
        renamed.title = "Tour Eiffel"
        try await phone.upload(renamed)
        try await phone.sync()
        try await laptop.sync()  // the laptop's replica now holds the rename

        let events = Collected(laptop.events)
        var edited = kept
        edited.body = "99"
        try await laptop.upload(edited)
        try await laptop.sync()
        try await phone.sync()

        let expected = ["n", "Tour Eiffel", "99", nil]
        #expect(await phone.model(withIdentifier: "n")?.content == expected)
        #expect(await laptop.model(withIdentifier: "n")?.content == expected)
        #expect(await events.waitUntil { $0.contains(.conflict(recordName: "n", resolution: .resolved)) })
        #expect(!events.values.contains(.mergedWithoutAncestor(recordName: "n")))
    }

    @Test("a copy based on a version no longer kept is merged without an ancestor, and the app hears of it")
    func unknownBaseMergesWithoutAncestor() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let (laptop, _, _) = try await devices.engine { $0.earlierVersionLimit = 0 }
        try await phone.upload(Note(id: "n", title: "Eiffel", body: "1"))
        try await phone.sync()
        try await laptop.sync()
        let kept = try #require(await laptop.model(withIdentifier: "n"))
        var renamed = try #require(await phone.model(withIdentifier: "n"))
        renamed.title = "Tour Eiffel"
        try await phone.upload(renamed)
        try await phone.sync()
        try await laptop.sync()

        let events = Collected(laptop.events)
        var edited = kept
        edited.body = "99"
        try await laptop.upload(edited)
        // Without an ancestor the default merge keeps every field of the local change.
        #expect(await laptop.model(withIdentifier: "n")?.content == ["n", "Eiffel", "99", nil])
        #expect(await events.waitUntil { $0.contains(.mergedWithoutAncestor(recordName: "n")) })

        // A model without metadata for a record that exists is the same case.
        var fresh = Note(id: "n", title: "Eiffel", body: "100")
        fresh.cloudMetadata = nil
        try await phone.upload(fresh)
        let phoneEvents = Collected(phone.events)
        try await phone.upload(fresh)
        #expect(await phoneEvents.waitUntil { $0.contains(.mergedWithoutAncestor(recordName: "n")) })
    }

    // MARK: Each change once

    @Test("an acknowledged upload reaches each reader once, not again when its own write is fetched")
    func changesArriveOnce() async throws {
        let (phone, _, _) = try await Devices().engine()
        let changes = Collected(phone.changes)
        try await phone.upload(Note(id: "n", title: "t"))
        try await phone.sync()  // acknowledged, then the fetch brings the same version back
        try await phone.upload(Note(id: "sentinel", title: "s"))
        try await phone.sync()
        let sawSentinel = await changes.waitUntil { values in
            values.contains {
                if case .updated(let notes) = $0 { notes.contains { $0.id == "sentinel" } } else { false }
            }
        }
        #expect(sawSentinel)
        let deliveries = changes.values.reduce(0) { count, change in
            if case .updated(let notes) = change { return count + notes.filter { $0.id == "n" }.count }
            return count
        }
        #expect(deliveries == 1)
    }

    // MARK: Accounts

    @Test("a user switch during a retry wait sends nothing of the previous user's to the new one")
    func switchDuringRetryWait() async throws {
        let (clock, devices, phone, database) = try await syncedDevice([
            Note(id: "alice-1", title: "a"), Note(id: "alice-2", title: "b"),
        ])

        database.inject(.networkFailure(), count: 1000, on: [.modifyRecords])
        try await phone.upload(Note(id: "alice-3", title: "queued"))
        let events = Collected(phone.events)
        let sync = await syncWaitingForRetry(phone, clock: clock)
        database.signOut()
        database.signIn(as: "bob")
        database.removeInjectedFaults()
        clock.advance(by: .seconds(1))
        try await sync.value

        #expect(await devices.server.storedRecords(in: zone, of: "bob").isEmpty)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").map(\.recordName) == ["alice-1", "alice-2"])
        #expect(await phone.models.isEmpty)
        let switched = await events.waitUntil {
            $0.contains(.accountChanged(previousUser: "alice", newUser: "bob", discardedChanges: ["alice-3"]))
        }
        #expect(switched)
        #expect(!events.values.contains(.zoneRecreated))
    }

    @Test("a zone found missing because another user signed in mid-sync is not recreated with the replica")
    func zoneMissingAfterSwitchIsNotRecovery() async throws {
        let (clock, devices, _, database) = try await syncedDevice([Note(id: "alice-1", title: "a")])
        // The switch happens between the account check and the write.
        let switching = InterposedDatabase(database) { _, _ in database.signIn(as: "bob") }
        let engine = try await SyncEngine<Note>(
            database: switching, directory: temporaryDirectory("switching"),
            configuration: SyncConfiguration(automaticSync: false, retryPolicy: RetryPolicy(jitter: 0), clock: clock))
        try await engine.upload(Note(id: "alice-2", title: "b"))
        database.signIn(as: "alice")
        try await engine.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "bob").isEmpty)
    }

    @Test("another user signs in between the account check and a batch: the batch is not sent as that user")
    func switchBetweenCheckAndBatch() async throws {
        let (clock, devices, _, database) = try await syncedDevice([Note(id: "alice-1", title: "a")])
        // Bob has a zone of his own, which the batch would land in.
        let (bobs, _, _) = try await devices.engine(user: "bob")
        try await bobs.upload(Note(id: "bob-1", title: "b"))
        try await bobs.sync()
        let switched = OnceFlag()
        let switching = InterposedDatabase(database) { _, _ in
            if switched.setOnce() { database.signIn(as: "bob") }
        }
        let engine = try await SyncEngine<Note>(
            database: switching, directory: temporaryDirectory("switching"),
            configuration: SyncConfiguration(automaticSync: false, retryPolicy: RetryPolicy(jitter: 0), clock: clock))
        try await engine.sync()
        let events = Collected(engine.events)
        try await engine.upload(Note(id: "alice-2", title: "private"))
        try await engine.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "bob").map(\.recordName) == ["bob-1"])
        #expect(!(await devices.server.storedRecords(in: zone, of: "alice").map(\.recordName).contains("alice-2")))
        let discarded = await events.waitUntil {
            $0.contains(.accountChanged(previousUser: "alice", newUser: "bob", discardedChanges: ["alice-2"]))
        }
        #expect(discarded)
    }

    // MARK: Writes in doubt

    @Test(
        "a delete while a sync waits to retry is what gets sent: the model stays deleted",
        arguments: [
            // The create was refused: the retry must not send it.
            (InjectedFault.throttled(retryAfter: .seconds(30)), Duration.seconds(30)),
            // The create arrived but its answer was lost: the delete must still reach the server.
            (InjectedFault.networkFailure(afterApplying: true), Duration.seconds(1)),
        ])
    func deleteDuringRetryWait(fault: InjectedFault, wait: Duration) async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, database, _) = try await devices.engine()
        try await phone.upload(Note(id: "n", title: "t"))
        database.inject(fault, count: 1, on: [.modifyRecords])
        let sync = await syncWaitingForRetry(phone, clock: clock)
        let arrived = await devices.server.storedRecords(in: zone, of: "alice").count
        #expect(arrived == (fault.afterApplying ? 1 : 0))
        try await phone.delete(identifiers: ["n"])
        clock.advance(by: wait)
        try await sync.value

        #expect(await devices.server.storedRecords(in: zone, of: "alice").isEmpty)
        #expect(await phone.models.isEmpty)
        #expect(await phone.pendingChangeCount == 0)
    }

    @Test("a revert after a lost answer stays reverted, with no conflict reported")
    func revertAfterLostAnswer() async throws {
        let (clock, devices, phone, database) = try await syncedDevice([Note(id: "n", title: "A")])
        var note = try #require(await phone.model(withIdentifier: "n"))
        note.title = "B"
        try await phone.upload(note)
        database.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
        let events = Collected(phone.events)
        let sync = await syncWaitingForRetry(phone, clock: clock)
        #expect(await devices.server.storedRecords(in: zone, of: "alice").first?["title"] == .string("B"))
        note.title = "A"
        try await phone.upload(note)
        clock.advance(by: .seconds(1))
        try await sync.value

        #expect(await devices.server.storedRecords(in: zone, of: "alice").first?["title"] == .string("A"))
        #expect(await phone.model(withIdentifier: "n")?.title == "A")
        #expect(await phone.pendingChangeCount == 0)
        #expect(!events.values.contains { if case .conflict = $0 { true } else { false } })
    }

    @Test("a write in doubt survives a restart and is settled by the next engine")
    func inDoubtAcrossRestart() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let directory = temporaryDirectory("doubt")
        do {
            let (phone, database, _) = try await devices.engine(directory: directory)
            try await phone.upload(Note(id: "n", title: "t"))
            database.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
            let sync = await syncWaitingForRetry(phone, clock: clock)
            await phone.close()
            await #expect(throws: CancellationError.self) { try await sync.value }
        }
        let (again, _, _) = try await devices.engine(directory: directory)
        try await again.delete(identifiers: ["n"])
        try await again.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "alice").isEmpty)
    }

    @Test("a write whose answer was lost and that another device then changed is the ancestor of the merge")
    func lostAnswerThenChangedElsewhere() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (phone, database, _) = try await devices.engine()
        let (laptop, _, _) = try await devices.engine()
        try await phone.upload(Note(id: "n", title: "A"))
        try await phone.sync()
        var note = try #require(await phone.model(withIdentifier: "n"))
        note.title = "B"
        try await phone.upload(note)
        database.inject(.networkFailure(afterApplying: true), count: 1, on: [.modifyRecords])
        let sync = await syncWaitingForRetry(phone, clock: clock)

        // The laptop sees the phone's write and changes the same field again.
        try await laptop.sync()
        var seen = try #require(await laptop.model(withIdentifier: "n"))
        #expect(seen.title == "B")
        seen.title = "C"
        try await laptop.upload(seen)
        try await laptop.sync()

        clock.advance(by: .seconds(1))
        try await sync.value
        try await laptop.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "alice").first?["title"] == .string("C"))
        #expect(await phone.model(withIdentifier: "n")?.title == "C")
        #expect(await laptop.model(withIdentifier: "n")?.title == "C")
    }

    @Test("a fetch of the whole zone after it was created again removes what the zone no longer has")
    func wholeFetchRemovesWhatIsGone() async throws {
        let devices = Devices()
        let (phone, _, _) = try await devices.engine()
        let (laptop, _, _) = try await devices.engine()
        try await phone.upload(Note(id: "x", title: "x"))
        try await phone.sync()
        try await laptop.sync()
        _ = await devices.server.deleteZone(zone, ownedBy: "alice")
        try await phone.sync()  // creates the zone again, sends x again, and has no sync token yet
        try await laptop.sync()
        try await laptop.delete(identifiers: ["x"])
        try await laptop.sync()
        // Deleted again: the laptop creates it once more, empty, with no tombstone of x.
        _ = await devices.server.deleteZone(zone, ownedBy: "alice")
        try await laptop.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "alice").isEmpty)

        try await phone.sync()  // fetches the whole zone from no token
        #expect(await phone.models.isEmpty)
    }

    @Test("a record queued again after its zone vanished is deleted on the server if another device restored it")
    func deleteAfterZoneRestoredElsewhere() async throws {
        let devices = Devices()
        let (phone, phoneDatabase, _) = try await devices.engine { $0.retryPolicy = RetryPolicy(maximumAttempts: 1) }
        let (laptop, _, _) = try await devices.engine()
        try await phone.upload(Note(id: "x", title: "x"))
        try await phone.sync()
        try await laptop.sync()
        _ = await devices.server.deleteZone(zone, ownedBy: "alice")
        // The phone finds the zone missing and queues x again, but cannot create the zone yet.
        phoneDatabase.inject(.networkFailure(), count: 1, on: [.modifyZones])
        await #expect(throws: CloudError.self) { try await phone.sync() }
        try await laptop.sync()  // creates the zone again, with x
        #expect(await devices.server.storedRecords(in: zone, of: "alice").map(\.recordName) == ["x"])

        try await phone.delete(identifiers: ["x"])
        try await phone.sync()
        try await laptop.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "alice").isEmpty)
        #expect(await laptop.models.isEmpty)
    }

    // MARK: Closing and the directory

    @Test("close ends the sync under way, refuses later calls and lets the directory open again at once")
    func close() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let directory = temporaryDirectory("close")
        let (phone, database, _) = try await devices.engine(directory: directory) { $0.automaticSync = true }
        database.inject(.networkFailure(), count: 1000)
        try await phone.upload(Note(id: "n", title: "t"))
        await clock.waitForSleepers(count: 2)  // the poller and the run's retry wait
        await phone.close()
        await phone.close()
        do {
            try await phone.upload(Note(id: "m", title: "too late"))
            Issue.record("an upload to a closed engine should throw")
        } catch let error as SyncEngineError {
            #expect(error.code == .closed)
        }
        await #expect(throws: SyncEngineError.self) { try await phone.sync() }

        database.removeInjectedFaults()
        let (again, _, _) = try await devices.engine(directory: directory)
        #expect(await again.pendingChangeCount == 1)
        try await again.sync()
        #expect(await devices.server.storedRecords(in: zone, of: "alice").map(\.recordName) == ["n"])
    }

    @Test("an engine let go in a retry wait leaves nothing behind that writes its directory")
    func droppedEngineStops() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let directory = temporaryDirectory("dropped")
        let database = devices.server.database(signedInAs: "alice")
        database.inject(.networkFailure(), count: 1000)
        let configuration = SyncConfiguration(
            automaticSync: true, retryPolicy: RetryPolicy(jitter: 0), clock: clock)
        for round in 0..<10 {
            do {
                let engine = try await SyncEngine<Note>(
                    database: database, directory: directory, configuration: configuration)
                try await engine.upload(Note(id: "n\(round)", title: "t"))
                await clock.waitForSleepers(count: 2)  // the poller and the run's retry wait
            }
            // The directory is free once the journal's last write has
            // finished, which may end just after the engine went away, and
            // the new engine waits for that; an engine still held by its
            // work would keep it for good, since the manual clock does not move.
            let reopened = try await SyncEngine<Note>(
                database: database, directory: directory,
                configuration: SyncConfiguration(automaticSync: false, clock: clock))
            // Whatever the dropped engine had scheduled wakes up now, and must not touch the files.
            clock.advance(by: .seconds(600))
            #expect(await reopened.pendingChangeCount == round + 1)
            await reopened.close()
        }
    }

    @Test("a second engine on an open directory is refused with inUse")
    func oneEnginePerDirectory() async throws {
        let devices = Devices()
        let directory = temporaryDirectory("twice")
        let (first, _, _) = try await devices.engine(directory: directory)
        do {
            _ = try await devices.engine(directory: directory) { $0.directoryWait = .milliseconds(100) }
            Issue.record("a second engine on the directory should be refused")
        } catch let error as JournalError {
            #expect(error.code == .inUse)
            #expect(error.message.contains(directory.path))
        }
        await first.close()
        _ = try await devices.engine(directory: directory)
    }
}

/// A switch that turns on once.
final class OnceFlag: @unchecked Sendable {
    // Safety: `isSet` is guarded by `lock`.
    private let lock = NSLock()
    private var isSet = false

    /// Turns the flag on; `true` only the first time.
    func setOnce() -> Bool {
        lock.withLock {
            defer { isSet = true }
            return !isSet
        }
    }
}
