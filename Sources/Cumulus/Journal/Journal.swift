import CloudCodable
import CloudProtocol
import Foundation

/// Changes to commit to a ``Journal`` together: all of them are durable, or none.
struct JournalBatch: Sendable {
    /// The final state of each touched key: a JSON document, or `nil` for removed.
    private(set) var changes: [String: [UInt8]?] = [:]

    var isEmpty: Bool { changes.isEmpty }

    /// Sets `key` to a JSON document (bytes of one JSON value).
    mutating func set(_ key: String, _ json: [UInt8]) { changes[key] = .some(json) }

    /// Removes `key`.
    mutating func remove(_ key: String) { changes[key] = .some(nil) }

    /// Adds another batch's changes after this one's.
    mutating func merge(_ other: JournalBatch) {
        for (key, value) in other.changes { changes[key] = .some(value) }
    }

    /// The batch as one line of the log: `{"set":{…},"del":[…]}` and a newline.
    func line() -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.appendRaw("{\"set\":{")
        var first = true
        for (key, value) in changes {
            guard let value else { continue }
            if !first { writer.append(byte: UInt8(ascii: ",")) }
            first = false
            writer.appendString(key)
            writer.append(byte: UInt8(ascii: ":"))
            writer.appendRaw(value)
        }
        writer.appendRaw("},\"del\":[")
        first = true
        for (key, value) in changes where value == nil {
            if !first { writer.append(byte: UInt8(ascii: ",")) }
            first = false
            writer.appendString(key)
        }
        writer.appendRaw("]}\n")
        return writer.bytes
    }
}

/// A crash-safe map from keys to JSON documents, kept in a directory as a
/// snapshot and a log of changes, both JSON Lines a person can read.
///
/// - ``enqueue(_:)`` puts a batch in line, in the caller's order, and the
///   returned ticket's ``JournalTicket/durable()`` returns once the batch is
///   on disk (`fsync`ed). Batches enqueued while a write is under way are
///   written together by the next one, so a burst costs a few `fsync`s, not
///   one each.
/// - Killing the process at any instant loses no batch whose ticket
///   returned; a batch being written when it died is either whole or a torn
///   last line, which opening leaves out.
/// - Any other damage that can be seen makes opening fail with
///   ``JournalError`` (code ``JournalError/Code/corrupted``, naming the
///   file) and leaves the files as they were. Each generation's log is
///   created, and the directory synced, before its snapshot is renamed into
///   place, and the snapshot's header says so (`"log":true`); so a missing
///   log beside such a snapshot is damage, and so are a log without its
///   snapshot and a non-empty log newer than the newest snapshot. An empty
///   log one generation newer is what a crash in the middle of a compaction
///   leaves, and is removed like the older generation's files. A snapshot
///   written before the header had `"log"` may have no log.
/// - What cannot be seen: a log cut short exactly at a line boundary looks
///   like a crash before the lost entries were written, and is read as such.
/// - Opening changes no file: the torn line is cut from the log, and files
///   that a crash during compaction left behind are removed, only by
///   ``finishOpening()`` (which the owner calls once it has accepted the
///   documents) or by the first write.
/// - When the log outgrows the snapshot, the journal writes a new snapshot
///   of the live documents and starts a new log, so the files stay
///   proportional to the data, not to its history.
/// - One directory has at most one open journal: opening takes an advisory
///   lock (`flock` on the file `lock` in the directory) before it reads
///   anything, and a second open fails with ``JournalError/Code/inUse``:
///   within a tenth of a second when the holder is another process, after
///   waiting a while for it to let go when it is this one. The lock is held until
///   ``close()`` or until the journal is deinitialised, and the system
///   releases it when the process dies, so a crash never leaves the
///   directory locked.
final class Journal: @unchecked Sendable {
    // Safety: `lock` guards `queued`, `flushScheduled` and `failure`;
    // `documents`, `loadedDocuments`, `files`, `isClosed` and `directoryLock`
    // are touched only on `ioQueue` (or in `init` and `deinit`), one block
    // at a time.
    static let format = "cumulus.journal"
    static let version = 1

    private let lock = NSLock()
    private let ioQueue = DispatchQueue(label: "cumulus.journal.io")
    private var queued: [(batch: JournalBatch, ticket: JournalTicket)] = []
    private var flushScheduled = false
    private var failure: JournalError?
    private var documents: [String: [UInt8]]
    private let files: JournalFiles
    /// Held from `init` until ``close()`` or `deinit`.
    private let directoryLock: JournalLock
    /// Set by ``close()``: the files are no longer the journal's to touch.
    private var isClosed = false
    /// What opening left to do to the files (see ``finishOpening()``).
    private var tidying: JournalLoader.Tidying?
    /// The log may grow to this size, or to the snapshot's size if larger,
    /// before it is folded into a new snapshot.
    let compactionThreshold: Int
    /// The documents as they were on disk when the journal was opened,
    /// until ``takeLoadedDocuments()`` hands them over.
    private(set) var loadedDocuments: [String: [UInt8]]

    /// How long opening waits, by default, for an open journal of this
    /// process that holds the directory to let go.
    static let releaseWait: Duration = .seconds(5)

    /// Opens the journal in `directory`, creating it if needed. When an open
    /// journal of this process holds the directory, waits up to `wait` for
    /// it to write its last batch and let go: an engine let go without
    /// ``close()`` keeps its journal until its work in flight ends.
    ///
    /// - Throws: ``JournalError``: ``JournalError/Code/inUse`` at once when
    ///   a journal of another process holds the directory, or when one of
    ///   this process still does after `wait`; ``JournalError/Code/corrupted``
    ///   for damage; either way no journal file is changed.
    ///   `CancellationError` when the task is cancelled while waiting.
    static func open(directory: URL, compactionThreshold: Int = 1 << 20, waitingUpTo wait: Duration = releaseWait)
        async throws -> Journal
    {
        // Locked before anything is read or created; if loading fails,
        // dropping `lock` releases it.
        let lock = try await JournalLock.acquire(directory: directory, waitingUpTo: wait)
        return try Journal(directory: directory, lock: lock, compactionThreshold: compactionThreshold)
    }

    /// Loads the journal in `directory`, which `directoryLock` holds.
    private init(directory: URL, lock directoryLock: JournalLock, compactionThreshold: Int) throws {
        let loaded = try JournalLoader.load(directory: directory)
        documents = loaded.documents
        loadedDocuments = loaded.documents
        files = loaded.files
        tidying = loaded.tidying
        self.directoryLock = directoryLock
        self.compactionThreshold = compactionThreshold
    }

    deinit {
        // Every block on `ioQueue` holds the journal, so none is queued or
        // running now: no write can follow the release.
        files.closeLog()
        directoryLock.release()
    }

    /// Writes everything enqueued before it, compacts if the log is over
    /// the threshold, and lets go of the files and the directory's lock, so
    /// that the directory can be opened again at once. Later batches fail
    /// with ``JournalError/Code/closed``. Closing again does nothing.
    func close() async {
        lock.withLock {
            if failure == nil { failure = JournalError(.closed, "the journal is closed") }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            ioQueue.async {
                // Batches enqueued before `failure` was set are written
                // first; `enqueue` queues its flush after unlocking, so it
                // may come after this block, and this flush writes them.
                self.flush()
                self.closeNow()
                continuation.resume()
            }
        }
    }

    /// Carries out ``close()``, on the I/O queue.
    private func closeNow() {
        guard !isClosed else { return }
        if files.logSize > max(compactionThreshold, files.snapshotSize) { compactNow() }
        isClosed = true
        files.closeLog()
        directoryLock.release()
    }

    /// Makes the changes to the files that opening found due: cuts a torn
    /// last entry from the log and removes the files of older generations.
    /// The owner calls this once it has accepted the loaded documents, so
    /// that refusing them leaves the files as they were; the first write
    /// does it otherwise, before it appends anything.
    func finishOpening() throws(JournalError) {
        let result: Result<Void, JournalError> = ioQueue.sync {
            do throws(JournalError) {
                try tidy()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// Carries out ``tidying``, on the I/O queue.
    private func tidy() throws(JournalError) {
        guard !isClosed else { throw JournalError(.closed, "the journal is closed") }
        guard let pending = tidying else { return }
        if let length = pending.logLength { try files.truncateLog(to: length) }
        for file in pending.staleFiles { try? FileManager.default.removeItem(at: file) }
        tidying = nil
    }

    /// Returns the documents as they were on disk when the journal was
    /// opened, and lets go of the journal's second reference to them, so
    /// that its first write does not copy the whole table.
    func takeLoadedDocuments() -> [String: [UInt8]] {
        ioQueue.sync {
            defer { loadedDocuments = [:] }
            return loadedDocuments
        }
    }

    /// The number of `fsync` calls made since the journal was opened.
    var syncCount: Int { ioQueue.sync { files.syncCount } }

    /// The current generation of the snapshot and log.
    var generation: Int { ioQueue.sync { files.generation } }

    /// Puts `batch` in line to be written. Batches are written in the order
    /// they are enqueued.
    func enqueue(_ batch: JournalBatch) -> JournalTicket {
        let ticket = JournalTicket()
        lock.lock()
        if let failure {
            lock.unlock()
            ticket.complete(.failure(failure))
            return ticket
        }
        queued.append((batch, ticket))
        let schedule = !flushScheduled
        flushScheduled = true
        lock.unlock()
        if schedule { ioQueue.async { self.flush() } }
        return ticket
    }

    /// Writes everything queued, on the I/O queue.
    private func flush() {
        while true {
            lock.lock()
            let group = queued
            queued.removeAll()
            if group.isEmpty { flushScheduled = false }
            lock.unlock()
            if group.isEmpty { return }

            var bytes: [UInt8] = []
            for item in group where !item.batch.isEmpty { bytes.append(contentsOf: item.batch.line()) }
            do {
                // Never append after a torn entry.
                try tidy()
                if !bytes.isEmpty { try files.append(bytes) }
            } catch {
                // The log's tail is unknown now: refuse further writes rather
                // than append after a partial entry.
                let closed = JournalError(.closed, "an earlier write failed: \(error)")
                lock.lock()
                failure = closed
                let rest = queued
                queued.removeAll()
                flushScheduled = false
                lock.unlock()
                for item in group { item.ticket.complete(.failure(error)) }
                for item in rest { item.ticket.complete(.failure(closed)) }
                return
            }
            for item in group { apply(item.batch) }
            for item in group { item.ticket.complete(.success(())) }
            if files.logSize > max(compactionThreshold, files.snapshotSize) { compactNow() }
        }
    }

    private func apply(_ batch: JournalBatch) {
        for (key, value) in batch.changes {
            if let value { documents[key] = value } else { documents.removeValue(forKey: key) }
        }
    }

    /// Folds the log into a new snapshot now (normally done on its own when the log grows).
    func compact() {
        ioQueue.sync { compactNow() }
    }

    private func compactNow() {
        // The tidying names this generation's files: it comes first. On
        // failure the old generation is still whole and in use; the next
        // flush tries again, and a failing disk fails the next append.
        guard (try? tidy()) != nil else { return }
        try? files.writeSnapshot(of: documents)
    }
}

/// The promise of one enqueued batch: wait on it for durability.
final class JournalTicket: @unchecked Sendable {
    // Safety: every field is guarded by `lock`.
    private let lock = NSLock()
    private var result: Result<Void, JournalError>?
    private var waiters: [CheckedContinuation<Void, any Error>] = []

    func complete(_ result: Result<Void, JournalError>) {
        lock.lock()
        self.result = result
        let waiting = waiters
        waiters.removeAll()
        lock.unlock()
        for waiter in waiting { waiter.resume(with: result.mapError { $0 as any Error }) }
    }

    /// Returns once the batch is on disk; throws ``JournalError`` if writing it failed.
    func durable() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            lock.lock()
            if let result {
                lock.unlock()
                continuation.resume(with: result.mapError { $0 as any Error })
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }
}
