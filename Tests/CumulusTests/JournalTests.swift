import CloudCodable
import Foundation
import Testing

@testable import Cumulus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fresh directory under the system's temporary directory.
func temporaryDirectory(_ name: String = #function) -> URL {
    let safe = name.filter { $0.isLetter || $0.isNumber }
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("cumulus-tests-\(safe)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Starts a child process that opens an engine on `directory` and keeps
/// it open until it is killed; returns once the engine is open.
func holdInChildProcess(_ directory: URL) throws -> Process {
    let child = try #require(CrashTests.childURL, "the CumulusCrashChild executable was not built")
    let process = Process()
    process.executableURL = child
    process.arguments = ["--hold", directory.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    var said = ""
    while !said.contains("\n") {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        said += String(decoding: chunk, as: UTF8.self)
    }
    #expect(said == "ready\n")
    return process
}

/// The bytes of every journal file in `directory`, by name. The lock file
/// is left out: opening creates it empty and leaves it, and it holds no data.
func snapshotOfFiles(_ directory: URL) throws -> [String: Data] {
    var files: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name != "lock" {
        files[name] = try Data(contentsOf: directory.appendingPathComponent(name))
    }
    return files
}

extension Journal {
    /// Enqueues `batch` and waits until it is durable.
    func commit(_ batch: JournalBatch) async throws {
        try await enqueue(batch).durable()
    }
}

@Suite("Journal")
struct JournalTests {
    func json(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// `text` as a JSON string literal.
    func jsonString(_ text: String) -> String {
        var writer = JSONWriter()
        writer.appendString(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    func batch(_ sets: [String: String], removing: [String] = []) -> JournalBatch {
        var batch = JournalBatch()
        for (key, value) in sets { batch.set(key, json(value)) }
        for key in removing { batch.remove(key) }
        return batch
    }

    @Test("committed documents are there when the journal is opened again")
    func reopen() async throws {
        let directory = temporaryDirectory()
        do {
            let journal = try await Journal.open(directory: directory)
            try await journal.commit(batch(["a": #"{"x":1}"#, "b": #""two""#]))
            try await journal.commit(batch(["c": "[1,2,3]"], removing: ["a"]))
        }
        let reopened = try await Journal.open(directory: directory)
        #expect(reopened.loadedDocuments == ["b": json(#""two""#), "c": json("[1,2,3]")])
    }

    @Test("the files are JSON Lines with a format version")
    func readableFiles() async throws {
        let directory = temporaryDirectory()
        let journal = try await Journal.open(directory: directory)
        try await journal.commit(batch(["key": #"{"name":"value"}"#]))
        let files = try snapshotOfFiles(directory)
        let snapshot = try #require(files["snapshot-1.jsonl"])
        let header = try #require(String(decoding: snapshot, as: UTF8.self).split(separator: "\n").first)
        #expect(header.contains("\"format\":\"cumulus.journal\""))
        #expect(header.contains("\"version\":1"))
        let log = String(decoding: try #require(files["log-1.jsonl"]), as: UTF8.self)
        #expect(log == #"{"set":{"key":{"name":"value"}},"del":[]}"# + "\n")
    }

    /// A journal in `directory` whose log holds two entries, `a` then `b`:
    /// the log, its bytes, and where its last line starts.
    func twoEntryLog(in directory: URL) async throws -> (log: URL, whole: Data, lastLineStart: Int) {
        do {
            let journal = try await Journal.open(directory: directory)
            try await journal.commit(batch(["a": "1"]))
            try await journal.commit(batch(["b": "2"]))
        }
        let log = directory.appendingPathComponent("log-1.jsonl")
        let whole = try Data(contentsOf: log)
        return (log, whole, whole.dropLast().lastIndex(of: 0x0A)! + 1)
    }

    @Test("a torn last entry is dropped, and writing goes on after it")
    func tornLastEntry() async throws {
        let directory = temporaryDirectory()
        let (log, whole, lastLineStart) = try await twoEntryLog(in: directory)
        // Every cut inside the last line is a torn write.
        for cut in lastLineStart..<(whole.count) {
            try whole.prefix(cut).write(to: log)
            let journal = try await Journal.open(directory: directory)
            #expect(journal.loadedDocuments == ["a": json("1")], "cut at \(cut)")
            try await journal.commit(batch(["c": "3"]))
            await journal.close()
            let again = try await Journal.open(directory: directory)
            #expect(again.loadedDocuments == ["a": json("1"), "c": json("3")], "cut at \(cut)")
        }
    }

    @Test("opening changes no file: the torn entry is cut by finishOpening or by the first write")
    func openingChangesNothing() async throws {
        let directory = temporaryDirectory()
        let (log, whole, lastLineStart) = try await twoEntryLog(in: directory)
        try whole.prefix(lastLineStart + 5).write(to: log)
        let torn = try snapshotOfFiles(directory)

        let journal = try await Journal.open(directory: directory)
        #expect(journal.loadedDocuments == ["a": json("1")])
        #expect(try snapshotOfFiles(directory) == torn)
        try journal.finishOpening()
        #expect(try Data(contentsOf: log) == whole.prefix(lastLineStart))
        try journal.finishOpening()  // once is enough; again changes nothing
        #expect(try Data(contentsOf: log) == whole.prefix(lastLineStart))
        await journal.close()

        // Without finishOpening, the first write cuts it before appending.
        try whole.prefix(lastLineStart + 5).write(to: log)
        let writer = try await Journal.open(directory: directory)
        try await writer.commit(batch(["c": "3"]))
        await writer.close()
        #expect(try await Journal.open(directory: directory).loadedDocuments == ["a": json("1"), "c": json("3")])
    }

    @Test("damage before the last entry is an error that leaves the files as they were")
    func damageInTheMiddle() async throws {
        let directory = temporaryDirectory()
        do {
            let journal = try await Journal.open(directory: directory)
            try await journal.commit(batch(["a": "1"]))
            try await journal.commit(batch(["b": "2"]))
            try await journal.commit(batch(["c": "3"]))
        }
        let log = directory.appendingPathComponent("log-1.jsonl")
        var bytes = try Data(contentsOf: log)
        let secondLine = bytes.firstIndex(of: 0x0A)! + 1
        bytes[secondLine + 3] = UInt8(ascii: "#")
        try bytes.write(to: log)
        let before = try snapshotOfFiles(directory)
        do {
            _ = try await Journal.open(directory: directory)
            Issue.record("opening a damaged journal should fail")
        } catch let error as JournalError {
            #expect(error.code == .corrupted)
            #expect(error.file == "log-1.jsonl")
            #expect(error.line == 2)
        }
        #expect(try snapshotOfFiles(directory) == before)
    }

    @Test("a document that is not strict JSON is damage, named by its file and line")
    func looseJSONIsDamage() async throws {
        let directory = temporaryDirectory()
        do {
            let journal = try await Journal.open(directory: directory)
            try await journal.commit(batch(["a": "1"]))
            try await journal.commit(batch(["b": "2"]))
            await journal.close()
        }
        let log = directory.appendingPathComponent("log-1.jsonl")
        let whole = try Data(contentsOf: log)
        // Each was read as a value before the journal used the codec's reader.
        let loose = ["tru", "01", "1.", #""a\qb""#, "\"tab\t\"", "[1,]", #"{"x":1,}"#].map { Array($0.utf8) }
        for value in loose + [[0x22, 0xFF, 0x22]] {
            let line = Array(#"{"set":{"c":"#.utf8) + value + Array(#"},"del":[]}"#.utf8) + [0x0A]
            try (whole + line + Array(#"{"set":{},"del":["a"]}"#.utf8) + [0x0A]).write(to: log)
            let before = try snapshotOfFiles(directory)
            let error = try #require(await openingError(directory), "\(value) was read as a document")
            #expect(error.code == .corrupted)
            #expect(error.file == "log-1.jsonl")
            #expect(error.line == 3)
            #expect(try snapshotOfFiles(directory) == before)
        }
    }

    @Test("a damaged snapshot, a missing snapshot and a newer format are errors")
    func otherDamage() async throws {
        let directory = temporaryDirectory()
        do {
            let journal = try await Journal.open(directory: directory)
            try await journal.commit(batch(["a": "1"]))
            journal.compact()
            try await journal.commit(batch(["b": "2"]))
        }
        let snapshot = directory.appendingPathComponent("snapshot-2.jsonl")
        let good = try Data(contentsOf: snapshot)
        // The end marker is missing: a snapshot is never torn (it is renamed into place whole).
        let withoutEnd = good.prefix(good.dropLast().lastIndex(of: 0x0A)! + 1)
        try withoutEnd.write(to: snapshot)
        await #expect(throws: JournalError.self) { try await Journal.open(directory: directory) }

        let newer = String(decoding: good, as: UTF8.self).replacingOccurrences(
            of: "\"version\":1", with: "\"version\":9")
        try Data(newer.utf8).write(to: snapshot)
        do {
            _ = try await Journal.open(directory: directory)
            Issue.record("a newer format should be refused")
        } catch let error as JournalError {
            #expect(error.code == .unsupportedVersion)
        }

        try FileManager.default.removeItem(at: snapshot)
        await #expect(throws: JournalError.self) { try await Journal.open(directory: directory) }
    }

    @Test("compaction keeps the files proportional to the live data")
    func compaction() async throws {
        let directory = temporaryDirectory()
        let journal = try await Journal.open(directory: directory, compactionThreshold: 4096)
        let value = #"{"payload":"\#(String(repeating: "z", count: 100))"}"#
        for round in 0..<200 {
            // Ten live keys, rewritten over and over: history grows, data does not.
            try await journal.commit(batch(["key-\(round % 10)": value]))
        }
        #expect(journal.generation > 1)
        let total = try snapshotOfFiles(directory).values.reduce(0) { $0 + $1.count }
        #expect(total < 4096 * 3, "the journal holds \(total) bytes for 10 live documents")
        #expect(try snapshotOfFiles(directory).count == 2)
        await journal.close()
        let reopened = try await Journal.open(directory: directory)
        #expect(reopened.loadedDocuments.count == 10)
        #expect(reopened.loadedDocuments["key-3"] == json(value))
    }

    @Test("a snapshot larger than one write chunk is written whole and reads back")
    func largeSnapshot() async throws {
        let directory = temporaryDirectory()
        let journal = try await Journal.open(directory: directory, compactionThreshold: .max)
        var expected: [String: [UInt8]] = [:]
        for round in 0..<8 {
            var changes: [String: String] = [:]
            for index in 0..<100 {
                // About 5 KB a document, with characters that need escaping.
                let text = String(repeating: "line \(round)-\(index) \\ \"quoted\"\n", count: 200)
                changes["doc-\(round)-\(index)"] = #"{"text":\#(jsonString(text))}"#
            }
            try await journal.commit(batch(changes))
            for (key, value) in changes { expected[key] = json(value) }
        }
        journal.compact()
        #expect(journal.generation == 2)
        let snapshot = try #require(try snapshotOfFiles(directory)["snapshot-2.jsonl"])
        #expect(snapshot.count > 3 << 20, "the snapshot spans several chunks")
        await journal.close()
        let reopened = try await Journal.open(directory: directory)
        #expect(reopened.loadedDocuments == expected)
    }

    @Test("concurrent commits are grouped into few fsyncs")
    func groupCommit() async throws {
        let directory = temporaryDirectory()
        let journal = try await Journal.open(directory: directory)
        let before = journal.syncCount
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<1_000 {
                group.addTask { try await journal.commit(batch(["k\(i)": "\(i)"])) }
            }
            try await group.waitForAll()
        }
        let syncs = journal.syncCount - before
        #expect(syncs < 500, "\(syncs) fsyncs for 1,000 commits")
        await journal.close()
        let reopened = try await Journal.open(directory: directory)
        #expect(reopened.loadedDocuments.count == 1_000)
    }

    /// The error that opening `directory` throws, or `nil` if it opens.
    func openingError(_ directory: URL, waitingUpTo wait: Duration = Journal.releaseWait) async -> JournalError? {
        do {
            _ = try await Journal.open(directory: directory, waitingUpTo: wait)
            return nil
        } catch {
            return error as? JournalError
        }
    }

    @Test("a second journal on an open directory is refused after the wait, and opens once the first is gone")
    func secondOpenIsRefused() async throws {
        let directory = temporaryDirectory()
        let first = try await Journal.open(directory: directory)
        try await first.commit(batch(["a": "1"]))
        let before = try snapshotOfFiles(directory)

        let start = ContinuousClock.now
        let refused = try #require(await openingError(directory, waitingUpTo: .milliseconds(100)))
        #expect(ContinuousClock.now - start >= .milliseconds(100))
        #expect(refused.code == .inUse)
        #expect(refused.message.contains(directory.path))
        #expect(try snapshotOfFiles(directory) == before)
        // The refused open let go of nothing: the first still holds the lock.
        #expect(await openingError(directory, waitingUpTo: .zero)?.code == .inUse)

        // An open that waits gets the directory once the first is closed.
        let waiting = Task { try await Journal.open(directory: directory).loadedDocuments }
        try await Task.sleep(for: .milliseconds(20))
        await first.close()
        #expect(try await waiting.value == ["a": json("1")])
        do {
            let second = try await Journal.open(directory: directory)
            #expect(second.loadedDocuments == ["a": json("1")])
        }
        // Deinitialising a journal releases the lock too.
        #expect(await openingError(directory) == nil)
    }

    @Test("another live process holding the directory refuses it; a killed one holds nothing")
    func lockAcrossProcesses() async throws {
        let directory = temporaryDirectory()
        let process = try holdInChildProcess(directory)

        // Refused at once, without the wait for a journal of this process.
        let start = ContinuousClock.now
        let refused = await openingError(directory, waitingUpTo: .seconds(60))
        #expect(ContinuousClock.now - start < .seconds(30))
        #expect(refused?.code == .inUse)
        #expect(refused?.message.contains(directory.path) == true)

        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(await openingError(directory) == nil)
    }

    @Test("close writes what was enqueued before it, then refuses batches; twice is harmless")
    func closeWritesThenRefuses() async throws {
        let directory = temporaryDirectory()
        let journal = try await Journal.open(directory: directory)
        let tickets = (0..<50).map { journal.enqueue(batch(["k\($0)": "\($0)"])) }
        await journal.close()
        for ticket in tickets { try await ticket.durable() }

        do {
            try await journal.commit(batch(["late": "1"]))
            Issue.record("a batch after close should fail")
        } catch let error as JournalError {
            #expect(error.code == .closed)
            #expect(error.message == "the journal is closed")
        }
        #expect(throws: JournalError.self) { try journal.finishOpening() }
        await journal.close()

        // The directory opens at once, while the closed journal is still referenced.
        let reopened = try await Journal.open(directory: directory)
        #expect(reopened.loadedDocuments.count == 50)
        #expect(reopened.loadedDocuments["late"] == nil)
        withExtendedLifetime(journal) {}
    }

    @Test("a deleted current log is damage; a journal from before the log mark opens without one")
    func missingLog() async throws {
        let directory = temporaryDirectory()
        do {
            let journal = try await Journal.open(directory: directory)
            try await journal.commit(batch(["a": "1"]))
            try await journal.commit(batch(["b": "2"]))
        }
        let log = directory.appendingPathComponent("log-1.jsonl")
        try FileManager.default.removeItem(at: log)
        let before = try snapshotOfFiles(directory)
        let damaged = try #require(await openingError(directory))
        #expect(damaged.code == .corrupted)
        #expect(damaged.file == "log-1.jsonl")
        #expect(try snapshotOfFiles(directory) == before)

        // A compacted generation's log is required even before anything is appended to it.
        let compacted = temporaryDirectory()
        do {
            let journal = try await Journal.open(directory: compacted)
            try await journal.commit(batch(["a": "1"]))
            journal.compact()
        }
        try FileManager.default.removeItem(at: compacted.appendingPathComponent("log-2.jsonl"))
        #expect(await openingError(compacted)?.file == "log-2.jsonl")

        // Written before snapshots said whether their log exists: no log is no damage.
        let old = temporaryDirectory()
        let snapshot =
            #"{"format":"cumulus.journal","version":1,"generation":1,"entries":1}"# + "\n"
            + #"{"k":"a","v":1}"# + "\n" + #"{"end":1}"# + "\n"
        try Data(snapshot.utf8).write(to: old.appendingPathComponent("snapshot-1.jsonl"))
        do {
            let journal = try await Journal.open(directory: old)
            #expect(journal.loadedDocuments == ["a": json("1")])
            try await journal.commit(batch(["b": "2"]))
        }
        #expect(try await Journal.open(directory: old).loadedDocuments == ["a": json("1"), "b": json("2")])
    }

    @Test("an empty newer log is what a crash in compaction leaves; a non-empty one is damage")
    func newerLog() async throws {
        let directory = temporaryDirectory()
        do {
            let journal = try await Journal.open(directory: directory)
            try await journal.commit(batch(["a": "1"]))
        }
        let newer = directory.appendingPathComponent("log-2.jsonl")
        try Data().write(to: newer)
        do {
            let journal = try await Journal.open(directory: directory)
            #expect(journal.loadedDocuments == ["a": json("1")])
            try journal.finishOpening()
            #expect(!FileManager.default.fileExists(atPath: newer.path))
        }
        try Data("{}\n".utf8).write(to: newer)
        #expect(await openingError(directory)?.code == .corrupted)
        #expect(await openingError(directory)?.file == "log-2.jsonl")

        // A crash while a new journal wrote its first snapshot leaves only its empty log.
        let created = temporaryDirectory()
        try Data().write(to: created.appendingPathComponent("log-1.jsonl"))
        #expect(try await Journal.open(directory: created).loadedDocuments.isEmpty)
    }
}
