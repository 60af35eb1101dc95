import CumulusTesting
import Foundation
import Testing

@_spi(Testing) @testable import Cumulus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Who may open an engine's directory, and when.
@Suite("SyncEngine directory")
struct SyncEngineDirectoryTests {
    let manual = SyncConfiguration(automaticSync: false)

    @Test("an engine let go while its send is under way hands the directory to the next engine of this process")
    func letGoDuringSend() async throws {
        let server = InMemoryCloudServer()
        let directory = temporaryDirectory("letGo")
        let (arrivals, arrived) = AsyncStream<Void>.makeStream()
        let (held, release) = AsyncStream<Void>.makeStream()
        let database = InterposedDatabase(server.database(signedInAs: "alice")) { _, _ in
            arrived.yield()
            for await _ in held {}
        }
        do {
            let engine = try await SyncEngine<Note>(database: database, directory: directory)
            try await engine.upload(Note(id: "n", title: "t"))
            var iterator = arrivals.makeAsyncIterator()
            await iterator.next()  // the send holds the engine, and so its journal, until it is answered
        }
        let opening = Task {
            try await SyncEngine<Note>(
                database: server.database(signedInAs: "alice"), directory: directory, configuration: manual)
        }
        try await Task.sleep(for: .milliseconds(100))
        release.finish()
        let reopened = try await opening.value
        #expect(await reopened.model(withIdentifier: "n")?.title == "t")
        await reopened.close()
    }

    @Test("upload, let go, open again at once: each new engine opens and sees every upload")
    func reopenAtOnce() async throws {
        let server = InMemoryCloudServer()
        let directory = temporaryDirectory("atOnce")
        for round in 0..<20 {
            let engine = try await SyncEngine<Note>(
                database: server.database(signedInAs: "alice"), directory: directory)
            #expect(await engine.models.map(\.id) == (0..<round).map { "n\($0)" }.sorted())
            try await engine.upload(Note(id: "n\(round)", title: "t"))
        }
    }

    @Test("an engine of another process refuses the directory at once")
    func otherProcessRefusesAtOnce() async throws {
        let directory = temporaryDirectory("otherProcess")
        let process = try holdInChildProcess(directory)
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        // An engine of this process would be waited for, up to a minute here.
        var patient = manual
        patient.directoryWait = .seconds(60)
        let start = ContinuousClock.now
        do {
            _ = try await SyncEngine<Note>(
                database: InMemoryCloudServer().database(signedInAs: "alice"), directory: directory,
                configuration: patient)
            Issue.record("the directory of another process's engine should be refused")
        } catch let error as JournalError {
            #expect(error.code == .inUse)
            #expect(error.message.contains(directory.path))
        }
        #expect(ContinuousClock.now - start < .seconds(30))
    }

    @Test("an engine of this process still open refuses the directory once the wait is over")
    func openEngineRefusesAfterTheWait() async throws {
        let server = InMemoryCloudServer()
        let directory = temporaryDirectory("open")
        let first = try await SyncEngine<Note>(
            database: server.database(signedInAs: "alice"), directory: directory, configuration: manual)
        var waiting = manual
        waiting.directoryWait = .milliseconds(200)
        let start = ContinuousClock.now
        do {
            _ = try await SyncEngine<Note>(
                database: server.database(signedInAs: "alice"), directory: directory, configuration: waiting)
            Issue.record("a second engine on an open directory should be refused")
        } catch let error as JournalError {
            #expect(error.code == .inUse)
            #expect(error.message.contains(directory.path))
        }
        #expect(ContinuousClock.now - start >= .milliseconds(200))

        // Closing releases the directory to an engine that is waiting for it.
        let opening = Task {
            try await SyncEngine<Note>(
                database: server.database(signedInAs: "alice"), directory: directory, configuration: manual)
        }
        try await Task.sleep(for: .milliseconds(50))
        await first.close()
        try await opening.value.close()
    }

    @Test("an engine that is cancelled while it waits for the directory stops waiting")
    func cancelledWhileWaiting() async throws {
        let server = InMemoryCloudServer()
        let directory = temporaryDirectory("cancelled")
        let first = try await SyncEngine<Note>(
            database: server.database(signedInAs: "alice"), directory: directory, configuration: manual)
        var patient = manual
        patient.directoryWait = .seconds(60)
        let start = ContinuousClock.now
        let opening = Task {
            try await SyncEngine<Note>(
                database: server.database(signedInAs: "alice"), directory: directory, configuration: patient)
        }
        try await Task.sleep(for: .milliseconds(50))
        opening.cancel()
        await #expect(throws: CancellationError.self) { try await opening.value }
        #expect(ContinuousClock.now - start < .seconds(30))
        await first.close()
    }
}
