import CloudCodable
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
            var start = 0
            while start < buffer.count {
                lineNumber += 1
                guard let newline = nextNewline(in: buffer, from: start) else {
                    return .failure(
                        JournalError(.corrupted, file: name, line: lineNumber, "the last line is incomplete"))
                }
                if endCount != nil {
                    return .failure(JournalError(.corrupted, file: name, line: lineNumber, "text after the end marker"))
                }
                var reader = RawJSONReader(buffer, from: start, to: newline)
                do {
                    try reader.expect(UInt8(ascii: "{"))
                    if !sawHeader {
                        let header = try parseHeader(&reader, generation: generation)
                        documents.reserveCapacity(header.entries ?? 0)
                        hasLog = header.hasLog
                        sawHeader = true
                    } else {
                        let key = try reader.readString()
                        if key == "end" {
                            try reader.expect(UInt8(ascii: ":"))
                            let range = try reader.skipValue()
                            endCount = Int(String(decoding: buffer[range], as: UTF8.self))
                            if endCount == nil {
                                throw RawJSONReader.Failure(offset: range.lowerBound, message: "bad count")
                            }
                        } else {
                            guard key == "k" else {
                                throw RawJSONReader.Failure(offset: reader.position, message: "expected \"k\"")
                            }
                            try reader.expect(UInt8(ascii: ":"))
                            let documentKey = try reader.readString()
                            try reader.expect(UInt8(ascii: ","))
                            guard try reader.readString() == "v" else {
                                throw RawJSONReader.Failure(offset: reader.position, message: "expected \"v\"")
                            }
                            try reader.expect(UInt8(ascii: ":"))
                            let range = try reader.skipValue()
                            documents[documentKey] = Array(buffer[range])
                        }
                    }
                    try reader.expect(UInt8(ascii: "}"))
                    guard reader.isAtEnd else {
                        throw RawJSONReader.Failure(offset: reader.position, message: "text after the entry")
                    }
                } catch let failure as RawJSONReader.Failure {
                    return .failure(
                        JournalError(
                            .corrupted, file: name, line: lineNumber,
                            "\(failure.message) at byte \(failure.offset - start) of the line"))
                } catch let error as JournalError {
                    return .failure(error)
                } catch {
                    return .failure(JournalError(.corrupted, file: name, line: lineNumber, "\(error)"))
                }
                start = newline + 1
            }
            return .success(())
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

    /// Checks the snapshot's first line; returns the number of entries it
    /// announces, if it does, and whether it says its log was created.
    private static func parseHeader(_ reader: inout RawJSONReader, generation: Int) throws
        -> (entries: Int?, hasLog: Bool)
    {
        var format: String?
        var hasLog = false
        var version: Int?
        var fileGeneration: Int?
        var entries: Int?
        repeat {
            let key = try reader.readString()
            try reader.expect(UInt8(ascii: ":"))
            switch key {
            case "format": format = try reader.readString()
            case "log":
                let range = try reader.skipValue()
                hasLog = String(decoding: reader.bytes[range], as: UTF8.self) == "true"
            case "version", "generation", "entries":
                let range = try reader.skipValue()
                let number = Int(String(decoding: reader.bytes[range], as: UTF8.self))
                switch key {
                case "version": version = number
                case "generation": fileGeneration = number
                default: entries = number.map { min(max($0, 0), 1 << 24) }
                }
            default: _ = try reader.skipValue()
            }
        } while reader.consume(UInt8(ascii: ","))
        guard format == Journal.format else {
            throw RawJSONReader.Failure(offset: reader.position, message: "not a Cumulus journal")
        }
        guard let version else { throw RawJSONReader.Failure(offset: reader.position, message: "no version") }
        guard version <= Journal.version else {
            throw JournalError(
                .unsupportedVersion, "format version \(version) is newer than this Cumulus reads (\(Journal.version))")
        }
        guard fileGeneration == generation else {
            throw RawJSONReader.Failure(offset: reader.position, message: "the header names another generation")
        }
        return (entries, hasLog)
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
            var start = 0
            while start < buffer.count {
                guard let newline = nextNewline(in: buffer, from: start) else { break }
                lineNumber += 1
                var reader = RawJSONReader(buffer, from: start, to: newline)
                do {
                    try reader.expect(UInt8(ascii: "{"))
                    var sets: [(String, [UInt8])] = []
                    var deletes: [String] = []
                    if !reader.consume(UInt8(ascii: "}")) {
                        repeat {
                            let member = try reader.readString()
                            try reader.expect(UInt8(ascii: ":"))
                            switch member {
                            case "set":
                                try reader.expect(UInt8(ascii: "{"))
                                if !reader.consume(UInt8(ascii: "}")) {
                                    repeat {
                                        let key = try reader.readString()
                                        try reader.expect(UInt8(ascii: ":"))
                                        let range = try reader.skipValue()
                                        sets.append((key, Array(buffer[range])))
                                    } while reader.consume(UInt8(ascii: ","))
                                    try reader.expect(UInt8(ascii: "}"))
                                }
                            case "del":
                                try reader.expect(UInt8(ascii: "["))
                                if !reader.consume(UInt8(ascii: "]")) {
                                    repeat {
                                        deletes.append(try reader.readString())
                                    } while reader.consume(
                                        UInt8(ascii: ","))
                                    try reader.expect(UInt8(ascii: "]"))
                                }
                            default:
                                throw RawJSONReader.Failure(
                                    offset: reader.position, message: "unknown member \(member)")
                            }
                        } while reader.consume(UInt8(ascii: ","))
                        try reader.expect(UInt8(ascii: "}"))
                    }
                    guard reader.isAtEnd else {
                        throw RawJSONReader.Failure(offset: reader.position, message: "text after the entry")
                    }
                    for key in deletes { documents.removeValue(forKey: key) }
                    for (key, value) in sets { documents[key] = value }
                } catch let failure as RawJSONReader.Failure {
                    return .failure(
                        JournalError(
                            .corrupted, file: name, line: lineNumber,
                            "\(failure.message) at byte \(failure.offset - start) of the line"))
                } catch {
                    return .failure(JournalError(.corrupted, file: name, line: lineNumber, "\(error)"))
                }
                start = newline + 1
            }
            return .success(start)
        }
        return (try result.get(), lineNumber)
    }
}
