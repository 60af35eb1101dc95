import Cumulus
import CumulusTesting
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The entry point of `FuzzJournal`: journal files given to a new engine.
/// The input is the snapshot's bytes, a 0 byte, and the log's bytes (a
/// missing 0 leaves the log empty).
///
/// Findings beyond crashes:
/// - an engine that refuses the journal leaves its files as they were;
/// - a journal that opens opens again, with the same models.
public func fuzzJournal(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    checkJournal(Array(UnsafeBufferPointer(start: start, count: count)))
    return 0
}

/// Removes the directory that ``fuzzJournal(_:_:)`` writes its files in.
public func removeJournalScratch() {
    try? FileManager.default.removeItem(at: JournalScratch.directory)
}

func checkJournal(_ bytes: [UInt8]) {
    let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
    let snapshot = Array(bytes[..<split])
    let log = split < bytes.endIndex ? Array(bytes[(split + 1)...]) : []
    let directory = JournalScratch.directory
    try? FileManager.default.removeItem(at: directory)
    do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(snapshot).write(to: directory.appendingPathComponent(JournalScratch.snapshotName))
        try Data(log).write(to: directory.appendingPathComponent(JournalScratch.logName))
    } catch {
        fatalError("cannot write the journal files: \(error)")
    }
    let files = JournalScratch.contents(of: directory)
    let done = DispatchSemaphore(value: 0)
    Task {
        defer { done.signal() }
        guard let first = await JournalScratch.open(directory) else {
            guard JournalScratch.contents(of: directory) == files else {
                fatalError("an engine that refused its journal changed the files")
            }
            return
        }
        guard let second = await JournalScratch.open(directory) else {
            fatalError("a journal that opened once does not open again")
        }
        guard first == second else { fatalError("a journal opened twice gives different models") }
    }
    done.wait()
}

/// Where the journal inputs are written, and how an engine is opened on them.
enum JournalScratch {
    /// A directory of this process's own, in memory where the system has
    /// a RAM disk (the engine syncs its files to disk on every open).
    static let directory: URL = {
        let shared = URL(fileURLWithPath: "/dev/shm")
        let base = FileManager.default.fileExists(atPath: shared.path) ? shared : FileManager.default.temporaryDirectory
        return base.appendingPathComponent("cumulus-fuzz-journal-\(getpid())")
    }()

    static let snapshotName = "snapshot-1.jsonl"
    static let logName = "log-1.jsonl"

    /// The engine's models, or `nil` when it refuses the journal.
    static func open(_ directory: URL) async -> [StrictModel]? {
        let database = InMemoryCloudServer().database(signedInAs: "fuzz")
        guard
            let engine = try? await SyncEngine<StrictModel>(
                database: database, directory: directory, configuration: SyncConfiguration(automaticSync: false))
        else { return nil }
        return await engine.models
    }

    /// Every journal file in `directory` with its bytes. The empty lock
    /// file is left out: opening creates it, and it holds no data.
    static func contents(of directory: URL) -> [String: [UInt8]] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var contents: [String: [UInt8]] = [:]
        for name in names where name != "lock" {
            contents[name] = read(directory.appendingPathComponent(name).path)
        }
        return contents
    }

    /// The bytes of the file at `path`, or `nil` when it cannot be read.
    /// (`Data(contentsOf:)` leaks its buffer for an empty file on Linux,
    /// which the leak checker would report at every run.)
    static func read(_ path: String) -> [UInt8]? {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { Glibc.close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 { return nil }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }

    /// A journal as an engine leaves it: models fetched from the server,
    /// then an upload, an edit and a deletion still pending, in one input.
    static func seed() async throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-fuzz-seed-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = InMemoryCloudServer()
        let configuration = SyncConfiguration(automaticSync: false)
        var models = (0..<3).map { index in
            var model = Seeds.strict
            model.id = UUID(uuidString: "00000000-0000-0000-0000-00000000000\(index)")!
            model.name = "model \(index)"
            return model
        }
        do {
            let engine = try await SyncEngine<StrictModel>(
                database: server.database(signedInAs: "fuzz"), directory: directory, configuration: configuration)
            try await engine.upload(models)
            try await engine.sync()
            models[0].visits += 1
            try await engine.upload(models[0])
            try await engine.delete([models[1]])
            var extra = Seeds.strict
            extra.name = "pending"
            try await engine.upload(extra)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        guard names.contains(snapshotName) || names.contains(logName) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "journal files are \(names)"])
        }
        let snapshot = read(directory.appendingPathComponent(snapshotName).path) ?? []
        let log = read(directory.appendingPathComponent(logName).path) ?? []
        return snapshot + [0] + log
    }
}
