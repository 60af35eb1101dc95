import CloudCodable
import CloudProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The journal's files on disk and the system calls that make them durable.
///
/// Only the journal's I/O queue calls into this, one call at a time, which
/// is why it can be `@unchecked Sendable`.
final class JournalFiles: @unchecked Sendable {
    let directory: URL
    private(set) var generation: Int
    private var logDescriptor: Int32 = -1
    private(set) var logSize: Int = 0
    private(set) var snapshotSize: Int = 0
    /// Calls of `fsync`, for the engine's figures.
    private(set) var syncCount = 0

    init(directory: URL, generation: Int, logSize: Int, snapshotSize: Int) {
        self.directory = directory
        self.generation = generation
        self.logSize = logSize
        self.snapshotSize = snapshotSize
    }

    deinit {
        if logDescriptor >= 0 { close(logDescriptor) }
    }

    /// Closes the log's descriptor; a later append opens it again.
    func closeLog() {
        guard logDescriptor >= 0 else { return }
        close(logDescriptor)
        logDescriptor = -1
    }

    static func snapshotName(_ generation: Int) -> String { "snapshot-\(generation).jsonl" }
    static func logName(_ generation: Int) -> String { "log-\(generation).jsonl" }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    // MARK: Appending

    /// Appends `bytes` to the log and makes them durable.
    func append(_ bytes: [UInt8]) throws(JournalError) {
        if logDescriptor < 0 {
            let name = Self.logName(generation)
            logDescriptor = open(path(name), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard logDescriptor >= 0 else { throw Self.ioError("cannot open \(name)", errno) }
        }
        try Self.writeAll(logDescriptor, bytes, name: Self.logName(generation))
        try sync(logDescriptor, name: Self.logName(generation))
        logSize += bytes.count
    }

    /// Cuts the log back to `length` bytes: drops a torn last entry before
    /// anything is appended after it.
    func truncateLog(to length: Int) throws(JournalError) {
        let name = Self.logName(generation)
        guard truncate(path(name), off_t(length)) == 0 else { throw Self.ioError("cannot truncate \(name)", errno) }
        logSize = length
    }

    // MARK: Snapshots

    /// Writes a snapshot of `documents` as the next generation, switches to
    /// a new empty log, and removes the previous generation's files. A
    /// crash at any point leaves either the old generation or the new one
    /// whole. The new log is created before the snapshot is renamed into
    /// place, so that every snapshot whose header says `"log":true` has its
    /// log beside it, and a missing one is damage. The snapshot goes out in
    /// chunks of about a megabyte, so writing it never holds a second copy
    /// of the replica in memory.
    func writeSnapshot(of documents: [String: [UInt8]]) throws(JournalError) {
        let next = generation + 1
        let name = Self.snapshotName(next)
        let temporary = path(name + ".tmp")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Self.ioError("cannot create \(name).tmp", errno) }
        var written = 0
        do {
            let chunkSize = 1 << 20
            var writer = JSONWriter(capacity: chunkSize + 64 * 1024)
            JournalLoader.appendSnapshotHeader(to: &writer, generation: next, entries: documents.count)
            for (key, value) in documents {
                JournalLoader.appendSnapshotEntry(to: &writer, key: key, value: value)
                if writer.count >= chunkSize {
                    try Self.writeAll(descriptor, writer, name: name + ".tmp")
                    written += writer.count
                    writer.removeAll()
                }
            }
            JournalLoader.appendSnapshotEnd(to: &writer, entries: documents.count)
            try Self.writeAll(descriptor, writer, name: name + ".tmp")
            written += writer.count
            try sync(descriptor, name: name + ".tmp")
        } catch {
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        // The log's entry is synced before the rename's, so a crash never
        // leaves the snapshot without it; a crash before the rename leaves
        // an empty newer log, which opening treats as left over.
        let logName = Self.logName(next)
        let log = open(path(logName), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard log >= 0 else {
            let code = errno
            unlink(temporary)
            throw Self.ioError("cannot create \(logName)", code)
        }
        do throws(JournalError) {
            try syncDirectory()
        } catch {
            close(log)
            unlink(temporary)
            throw error
        }
        guard rename(temporary, path(name)) == 0 else {
            let code = errno
            close(log)
            unlink(temporary)
            throw Self.ioError("cannot rename \(name).tmp", code)
        }

        // The snapshot is in place, so the journal is on the new generation
        // even if syncing the directory fails: appends go to the new log.
        let previous = generation
        closeLog()
        logDescriptor = log
        generation = next
        logSize = 0
        snapshotSize = written
        try syncDirectory()
        // The new snapshot holds everything; the old files are history.
        unlink(path(Self.logName(previous)))
        unlink(path(Self.snapshotName(previous)))
    }

    // MARK: System calls

    private func sync(_ descriptor: Int32, name: String) throws(JournalError) {
        syncCount += 1
        guard fsync(descriptor) == 0 else { throw Self.ioError("cannot sync \(name)", errno) }
    }

    func syncDirectory() throws(JournalError) {
        let descriptor = open(directory.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.ioError("cannot open the journal directory", errno) }
        defer { close(descriptor) }
        try sync(descriptor, name: "the journal directory")
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], name: String) throws(JournalError) {
        let failure = bytes.withUnsafeBytes { writeAll(descriptor, $0) }
        if let failure { throw ioError("cannot write \(name)", failure) }
    }

    private static func writeAll(_ descriptor: Int32, _ writer: JSONWriter, name: String) throws(JournalError) {
        let failure = writer.withUnsafeBytes { writeAll(descriptor, $0) }
        if let failure { throw ioError("cannot write \(name)", failure) }
    }

    /// Writes every byte, going on after short writes; returns `errno` on failure.
    private static func writeAll(_ descriptor: Int32, _ raw: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < raw.count {
            let written = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    static func ioError(_ what: String, _ code: Int32) -> JournalError {
        JournalError(.io, "\(what): \(String(cString: strerror(code)))")
    }
}
