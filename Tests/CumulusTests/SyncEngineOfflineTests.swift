import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// What an app sees offline: how long a sync waits, and when the first
/// fetch is done.
@Suite("SyncEngine offline", .timeLimit(.minutes(1)))
struct SyncEngineOfflineTests {
    /// How `task` ended, or `nil` (and the task is cancelled) when it has not
    /// ended within a few seconds: a broken wait fails instead of hanging.
    func outcome<Value: Sendable>(of task: Task<Value, any Error>) async -> Result<Value, any Error>? {
        await withTaskGroup(of: Result<Value, any Error>?.self) { group in
            group.addTask { await task.result }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return nil
            }
            let first = await group.next() ?? nil
            if case .none = first { task.cancel() }
            group.cancelAll()
            return first
        }
    }

    @Test("sync(.singleAttempt) offline throws the network failure without waiting; the change stays queued")
    func singleAttempt() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (engine, database, _) = try await devices.engine()
        try await engine.upload(Note(id: "n", title: "t"))
        database.inject(.networkFailure(), count: 1_000)

        let outcome = await outcome(of: Task { try await engine.sync(.singleAttempt) })
        #expect((outcome?.failure as? CloudError)?.code == .networkFailure)
        #expect(clock.sleeperCount == 0)
        #expect(await engine.pendingChangeCount == 1)

        database.removeInjectedFaults()
        try await engine.sync()
        #expect(await engine.pendingChangeCount == 0)
        await engine.close()
    }

    @Test("sync(.singleAttempt) while an automatic run waits to retry throws at once; that run goes on")
    func whileAutomaticRunRetries() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (engine, database, _) = try await devices.engine { $0.automaticSync = true }
        let events = Collected(engine.events)
        database.inject(.networkFailure(), count: 1_000)
        try await engine.upload(Note(id: "n", title: "t"))
        #expect(await events.waitUntil { $0.contains { if case .retryScheduled = $0 { true } else { false } } })

        let outcome = await outcome(of: Task { try await engine.sync(.singleAttempt) })
        #expect((outcome?.failure as? CloudError)?.code == .networkFailure)
        #expect(await engine.pendingChangeCount == 1)

        // The automatic run still retries, and sends the change once the server is back.
        database.removeInjectedFaults()
        clock.advance(by: .seconds(1))
        #expect(await events.waitUntil { $0.contains(.syncFinished(pending: 0)) })
        #expect(await engine.pendingChangeCount == 0)
        await engine.close()
    }

    @Test("sync with a timeout throws timedOut on the engine's clock and stops the run it started")
    func timeout() async throws {
        let clock = ManualClock()
        let devices = Devices(clock: clock)
        let (engine, database, _) = try await devices.engine()
        try await engine.upload(Note(id: "n", title: "t"))
        database.inject(.networkFailure(), count: 1_000)

        let sync = Task { try await engine.sync(SyncOptions(timeout: .seconds(10))) }
        // The timeout and the run's first backoff.
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))
        #expect((await outcome(of: sync)?.failure as? SyncEngineError)?.code == .timedOut)
        #expect(await engine.pendingChangeCount == 1)
        await engine.close()
        #expect(clock.sleeperCount == 0)
    }

    @Test("waitForFirstFetch returns once the server's records are visible; a reopened engine returns at once")
    func firstFetch() async throws {
        let devices = Devices()
        let (writer, _, _) = try await devices.engine()
        try await writer.upload((1...5).map { Note(id: "n\($0)", title: "t\($0)") })
        try await writer.sync()

        let directory = temporaryDirectory("reader")
        let (reader, _, _) = try await devices.engine(directory: directory) { $0.fetchResultsLimit = 2 }
        let events = Collected(reader.events)
        #expect(await !reader.hasCompletedFirstFetch)
        let waiter = Task {
            try await reader.waitForFirstFetch()
            return await reader.models.count
        }
        try await reader.sync()
        #expect(try await outcome(of: waiter)?.get() == 5)
        #expect(await reader.hasCompletedFirstFetch)
        #expect(events.values.filter { $0 == .firstFetchCompleted }.count == 1)
        try await reader.sync()
        #expect(events.values.filter { $0 == .firstFetchCompleted }.count == 1)
        await reader.close()

        // The journal keeps the fact: no sync needed.
        let (reopened, _, _) = try await devices.engine(directory: directory)
        #expect(await reopened.hasCompletedFirstFetch)
        try #require(await outcome(of: Task { try await reopened.waitForFirstFetch() })).get()
        #expect(await reopened.models.count == 5)
        await reopened.close()
    }

    @Test("closing the engine ends a wait for the first fetch with SyncEngineError.closed")
    func firstFetchClosed() async throws {
        let devices = Devices()
        let (engine, _, _) = try await devices.engine()
        let waiter = Task { () -> SyncEngineError.Code? in
            do {
                try await engine.waitForFirstFetch()
                return nil
            } catch let error as SyncEngineError {
                return error.code
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        await engine.close()
        #expect(try await waiter.value == .closed)
        await #expect(throws: SyncEngineError.self) { try await engine.waitForFirstFetch() }
    }

    @Test("a cancelled wait for the first fetch throws CancellationError")
    func firstFetchCancelled() async throws {
        let devices = Devices()
        let (engine, _, _) = try await devices.engine()
        let waiter = Task { try await engine.waitForFirstFetch() }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        await engine.close()
    }
}

extension Result {
    /// The error, if this is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
