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

/// Reads a journal directory: the newest snapshot, then its log.
enum JournalLoader {
    struct Loaded {
        var documents: [String: [UInt8]]
        var files: JournalFiles
        /// What opening leaves to do to the files, once the documents are accepted.
        var tidying: Tidying?
    }

    /// Changes to the files that loading found due but did not make, so
    /// that a journal whose documents its owner refuses is left as it was:
    /// a torn last entry to cut from the log, and the files of older
    /// generations that a crash during compaction left behind.
    struct Tidying {
        /// The length of the log's whole entries, when a torn entry follows them.
        var logLength: Int?
        /// Files of older generations, which the newest snapshot supersedes.
        var staleFiles: [URL]
    }

    static func load(directory: URL) throws(JournalError) -> Loaded {
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw JournalError(.io, "cannot create the journal directory \(directory.path): \(error)")
        }
        let names: [String]
        do {
            names = try manager.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw JournalError(.io, "cannot list the journal directory \(directory.path): \(error)")
        }
        let snapshots = names.compactMap { generation(of: $0, prefix: "snapshot-") }.sorted()
        let logs = names.compactMap { generation(of: $0, prefix: "log-") }.sorted()

        guard let newest = snapshots.last else {
            // An empty first log alone is a crash while the journal was being created.
            let firstLog = JournalFiles.logName(1)
            var interrupted = false
            if logs == [1] { interrupted = try isEmptyFile(directory.appendingPathComponent(firstLog), name: firstLog) }
            if let log = logs.first, !interrupted {
                throw JournalError(
                    .corrupted, file: JournalFiles.logName(log), "a log without its snapshot; the snapshot is missing")
            }
            // A new journal: an empty first snapshot marks the format.
            let files = JournalFiles(directory: directory, generation: 0, logSize: 0, snapshotSize: 0)
            try files.writeSnapshot(of: [:])
            return Loaded(documents: [:], files: files, tidying: nil)
        }
        // A compaction creates the next log before its snapshot: a crash in
        // between leaves that log empty. Anything else newer is damage.
        var leftOver: [String] = []
        for stray in logs where stray > newest {
            let name = JournalFiles.logName(stray)
            guard stray == newest + 1, try isEmptyFile(directory.appendingPathComponent(name), name: name) else {
                throw JournalError(.corrupted, file: name, "a log newer than the newest snapshot (\(newest))")
            }
            leftOver.append(name)
        }

        let snapshotName = JournalFiles.snapshotName(newest)
        let snapshot = try readFile(directory.appendingPathComponent(snapshotName), name: snapshotName)
        var (documents, hasLog) = try parseSnapshot(snapshot, name: snapshotName, generation: newest)

        let logName = JournalFiles.logName(newest)
        var logSize = 0
        var tornAt: Int?
        if logs.contains(newest) {
            let log = try readFile(directory.appendingPathComponent(logName), name: logName)
            let replay = try replayLog(log, name: logName, into: &documents)
            logSize = replay.validLength
            if replay.validLength < log.count { tornAt = replay.validLength }
        } else if hasLog {
            throw JournalError(
                .corrupted, file: logName, "the log is missing; its snapshot says it was created (\(snapshotName))")
        }

        let files = JournalFiles(
            directory: directory, generation: newest, logSize: logSize, snapshotSize: snapshot.count)
        // Files of older generations are left by a crash during compaction;
        // the newest snapshot holds all they held.
        let stale =
            snapshots.filter { $0 < newest }.map(JournalFiles.snapshotName)
            + logs.filter { $0 < newest }.map(JournalFiles.logName) + leftOver
        let tidying =
            tornAt == nil && stale.isEmpty
            ? nil : Tidying(logLength: tornAt, staleFiles: stale.map(directory.appendingPathComponent))
        return Loaded(documents: documents, files: files, tidying: tidying)
    }

    private static func generation(of name: String, prefix: String) -> Int? {
        guard name.hasPrefix(prefix), name.hasSuffix(".jsonl") else { return nil }
        return Int(name.dropFirst(prefix.count).dropLast(".jsonl".count))
    }

    private static func isEmptyFile(_ url: URL, name: String) throws(JournalError) -> Bool {
        var status = stat()
        guard stat(url.path, &status) == 0 else { throw JournalFiles.ioError("cannot inspect \(name)", errno) }
        return status.st_size == 0
    }

    /// Reads a whole file into one buffer, without going through `Data`.
    private static func readFile(_ url: URL, name: String) throws(JournalError) -> [UInt8] {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw JournalFiles.ioError("cannot open \(name)", errno) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw JournalFiles.ioError("cannot inspect \(name)", errno) }
        let size = Int(status.st_size)
        var failure: Int32?
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = 0
            while initialized < size {
                let count = read(descriptor, buffer.baseAddress! + initialized, size - initialized)
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                if count == 0 { break }  // The file shrank while being read.
                initialized += count
            }
        }
        if let failure { throw JournalFiles.ioError("cannot read \(name)", failure) }
        return bytes
    }

    // MARK: Snapshots

    /// Writes the snapshot's first line.
    static func appendSnapshotHeader(to writer: inout JSONWriter, generation: Int, entries: Int) {
        writer.appendRaw("{\"format\":\"cumulus.journal\",\"version\":")
        writer.appendInt(Int64(Journal.version))
        writer.appendRaw(",\"generation\":")
        writer.appendInt(Int64(generation))
        writer.appendRaw(",\"entries\":")
        writer.appendInt(Int64(entries))
        // The snapshot's log exists from before the snapshot does (see
        // `JournalFiles.writeSnapshot`); snapshots without this may have none.
        writer.appendRaw(",\"log\":true}\n")
    }

    /// Writes one document's line.
    static func appendSnapshotEntry(to writer: inout JSONWriter, key: String, value: [UInt8]) {
        writer.appendRaw("{\"k\":")
        writer.appendString(key)
        writer.appendRaw(",\"v\":")
        writer.appendRaw(value)
        writer.appendRaw("}\n")
    }

    /// Writes the last line, which counts the documents: a snapshot cut
    /// short is seen as such.
    static func appendSnapshotEnd(to writer: inout JSONWriter, entries: Int) {
        writer.appendRaw("{\"end\":")
        writer.appendInt(Int64(entries))
        writer.appendRaw("}\n")
    }

    /// The snapshot's documents, and whether its header says its log was
    /// created with it.
    private static func parseSnapshot(_ bytes: [UInt8], name: String, generation: Int) throws(JournalError)
        -> (documents: [String: [UInt8]], hasLog: Bool)
    {
        var documents: [String: [UInt8]] = [:]
        var hasLog = false
        var lineNumber = 0
        var sawHeader = false
        var endCount: Int?
        let result: Result<Void, JournalError> = bytes.withUnsafeBufferPointer { buffer in
            do throws(JournalError) {
                var start = 0
                while start < buffer.count {
                    lineNumber += 1
                    guard let newline = nextNewline(in: buffer, from: start) else {
                        throw JournalError(.corrupted, file: name, line: lineNumber, "the last line is incomplete")
                    }
                    if endCount != nil {
                        throw JournalError(.corrupted, file: name, line: lineNumber, "text after the end marker")
                    }
                    let line = UnsafeBufferPointer(rebasing: buffer[start..<newline])
                    try readLine(line, file: name, number: lineNumber) { reader in
                        guard try reader.enterObject("an entry") else { throw reader.error("an empty entry") }
                        if !sawHeader {
                            let header = try parseHeader(&reader, generation: generation)
                            documents.reserveCapacity(header.entries ?? 0)
                            hasLog = header.hasLog
                            sawHeader = true
                            return
                        }
                        let key = try reader.readKey()
                        if key == "end" {
                            endCount = Int(try reader.readInt64("the end marker's count"))
                        } else {
                            guard key == "k" else { throw reader.error("expected \"k\"") }
                            let documentKey = try reader.readString("the key, a string")
                            guard try reader.nextMember(), try reader.readKey() == "v" else {
                                throw reader.error("expected \"v\"")
                            }
                            let range = try reader.rawValueRange()
                            documents[documentKey] = Array(line[range])
                        }
                        guard try !reader.nextMember() else { throw reader.error("text after the entry") }
                    }
                    start = newline + 1
                }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        guard sawHeader else { throw JournalError(.corrupted, file: name, "the snapshot is empty") }
        guard let endCount else { throw JournalError(.corrupted, file: name, "the snapshot has no end marker") }
        guard endCount == documents.count else {
            throw JournalError(
                .corrupted, file: name, "the end marker counts \(endCount) entries, the file holds \(documents.count)")
        }
        return (documents, hasLog)
    }

    /// Checks the members of the snapshot's first line, after its opening
    /// brace; returns the number of entries it announces, if it does, and
    /// whether it says its log was created.
    private static func parseHeader(_ reader: inout WireBodyReader, generation: Int) throws
        -> (entries: Int?, hasLog: Bool)
    {
        var format: String?
        var hasLog = false
        var version: Int64?
        var fileGeneration: Int64?
        var entries: Int?
        repeat {
            switch try reader.readKey() {
            case "format": format = try reader.readString("the format, a string")
            case "log": hasLog = try reader.readBool()
            case "version": version = try reader.readInt64("the version")
            case "generation": fileGeneration = try reader.readInt64("the generation")
            case "entries": entries = Int(min(max(try reader.readInt64("the entry count"), 0), 1 << 24))
            default: try reader.skipValue()
            }
        } while try reader.nextMember()
        guard format == Journal.format else { throw reader.error("not a Cumulus journal") }
        guard let version else { throw reader.error("no version") }
        guard version <= Journal.version else {
            throw JournalError(
                .unsupportedVersion, "format version \(version) is newer than this Cumulus reads (\(Journal.version))")
        }
        guard fileGeneration == Int64(generation) else { throw reader.error("the header names another generation") }
        return (entries, hasLog)
    }

    /// Reads one line, which must hold one JSON object and nothing else,
    /// with the codec's strict reader; what the line breaks is a
    /// ``JournalError`` naming the file and the line.
    private static func readLine(
        _ line: UnsafeBufferPointer<UInt8>, file: String, number: Int, _ body: (inout WireBodyReader) throws -> Void
    ) throws(JournalError) {
        do {
            try WireBodyReader.read(UnsafeRawBufferPointer(line)) { reader in
                try body(&reader)
                try reader.expectEnd()
            }
        } catch let error as JournalError {
            throw error
        } catch let error as WireFormatError {
            let place = error.offset.map { " at byte \($0) of the line" } ?? ""
            throw JournalError(.corrupted, file: file, line: number, "\(error.code)\(place): \(error.message)")
        } catch {
            throw JournalError(.corrupted, file: file, line: number, "\(error)")
        }
    }

    private static func nextNewline(in buffer: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard start < buffer.count, let base = buffer.baseAddress,
            let found = memchr(base + start, 0x0A, buffer.count - start)
        else { return nil }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    // MARK: Logs

    /// Applies each complete line; returns how many bytes were whole. An
    /// unterminated last line is a write the crash cut short.
    private static func replayLog(_ bytes: [UInt8], name: String, into documents: inout [String: [UInt8]])
        throws(JournalError) -> (validLength: Int, entries: Int)
    {
        var lineNumber = 0
        let result: Result<Int, JournalError> = bytes.withUnsafeBufferPointer { buffer in
            do throws(JournalError) {
                var start = 0
                while start < buffer.count {
                    guard let newline = nextNewline(in: buffer, from: start) else { break }
                    lineNumber += 1
                    let line = UnsafeBufferPointer(rebasing: buffer[start..<newline])
                    var sets: [(String, [UInt8])] = []
                    var deletes: [String] = []
                    try readLine(line, file: name, number: lineNumber) { reader in
                        guard try reader.enterObject("an entry") else { return }
                        repeat {
                            switch try reader.readKey() {
                            case "set":
                                guard try reader.enterObject("the documents set") else { break }
                                repeat {
                                    let key = try reader.readKey()
                                    sets.append((key, Array(line[try reader.rawValueRange()])))
                                } while try reader.nextMember()
                            case "del":
                                guard try reader.enterArray("the keys removed") else { break }
                                repeat {
                                    deletes.append(try reader.readString("a key, a string"))
                                } while try reader.nextElement()
                            case let member:
                                throw reader.error("unknown member \(member)")
                            }
                        } while try reader.nextMember()
                    }
                    for key in deletes { documents.removeValue(forKey: key) }
                    for (key, value) in sets { documents[key] = value }
                    start = newline + 1
                }
                return .success(start)
            } catch {
                return .failure(error)
            }
        }
        return (try result.get(), lineNumber)
    }
}
