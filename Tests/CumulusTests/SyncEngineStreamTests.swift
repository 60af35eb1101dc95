import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

@Suite("SyncEngine streams")
struct SyncEngineStreamTests {
    @Test("a loop over changes that breaks leaves no subscriber behind")
    func changesLoopBreaks() async throws {
        let (phone, _, _) = try await Devices().engine()
        let reader = Task {
            for await change in phone.changes {
                if case .updated = change { break }
            }
        }
        // The reader subscribes when its task reads `changes`.
        while await phone.changeBroadcaster.subscriberCount == 0 { await Task.yield() }
        try await phone.upload(Note(id: "n", title: "t"))
        try await phone.sync()
        await reader.value
        #expect(await phone.changeBroadcaster.subscriberCount == 0)
        await phone.close()
    }

    @Test("a reader of events whose task is cancelled leaves no subscriber behind")
    func eventsReaderCancelled() async throws {
        let (phone, _, _) = try await Devices().engine()
        let events = phone.events
        #expect(await phone.eventBroadcaster.subscriberCount == 1)
        let reader = Task {
            var count = 0
            for await _ in events { count += 1 }
            return count
        }
        try await phone.upload(Note(id: "n", title: "t"))
        try await phone.sync()
        reader.cancel()
        _ = await reader.value
        #expect(await phone.eventBroadcaster.subscriberCount == 0)
        await phone.close()
    }

    @Test("an iterator of account statuses that is dropped leaves no subscriber behind")
    func statusIteratorDropped() async throws {
        let (phone, _, _) = try await Devices().engine()
        try await phone.sync()
        do {
            var iterator = phone.accountStatus.makeAsyncIterator()
            #expect(await iterator.next() == .available)
            #expect(await phone.statusBroadcaster.subscriberCount == 1)
        }
        #expect(await phone.statusBroadcaster.subscriberCount == 0)
        await phone.close()
    }

    @Test("changes a reader has not read all wait for it, in order")
    func changesKeepEverything() async throws {
        let (phone, _, _) = try await Devices().engine()
        let changes = phone.changes
        for index in 0..<5 {
            try await phone.upload(Note(id: "n\(index)", title: "t"))
            try await phone.sync()
        }
        try await phone.delete(identifiers: ["n0"])
        try await phone.sync()
        await phone.close()
        let received = await Array(changes)
        let updated = received.compactMap { if case .updated(let notes) = $0 { notes.map(\.id) } else { nil } }
        #expect(updated == [["n0"], ["n1"], ["n2"], ["n3"], ["n4"]])
        #expect(received.count == 6)
        if case .deleted(let identifiers) = received.last { #expect(identifiers == ["n0"]) } else { Issue.record() }
    }

    @Test("a reader of the account status that is behind reads the current one")
    func statusKeepsTheNewest() async throws {
        let (phone, database, _) = try await Devices().engine()
        let statuses = phone.accountStatus
        try await phone.sync()
        database.signOut()
        await #expect(throws: CloudError.self) { try await phone.sync() }
        database.signIn(as: "alice")
        try await phone.sync()
        // available, noAccount, available: only the last one waited.
        var iterator = statuses.makeAsyncIterator()
        #expect(await iterator.next() == .available)
        await phone.close()
        #expect(await iterator.next() == nil)
    }

    @Test(
        "a reader of an engine that has not checked the account yet reads couldNotDetermine at once",
        .timeLimit(.minutes(1)))
    func statusBeforeTheFirstCheck() async throws {
        let (phone, _, _) = try await Devices().engine()
        var iterator = phone.accountStatus.makeAsyncIterator()
        #expect(await iterator.next() == .couldNotDetermine)
        try await phone.sync()
        #expect(await iterator.next() == .available)
        await phone.close()
        #expect(await iterator.next() == nil)
    }

    @Test("a late reader of the account status first reads the current one")
    func lateStatusReader() async throws {
        let (phone, database, _) = try await Devices().engine()
        try await phone.sync()
        database.signOut()
        await #expect(throws: CloudError.self) { try await phone.sync() }
        var iterator = phone.accountStatus.makeAsyncIterator()
        #expect(await iterator.next() == .noAccount)
        await phone.close()
    }
}
