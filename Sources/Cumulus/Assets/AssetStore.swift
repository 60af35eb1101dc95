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

/// The engine's asset files, in `<directory>/assets/`, named by the hex of
/// the asset's checksum:
///
/// - `local/`: copies of assets made on this device, written and synced
///   before the upload that holds them is queued; kept until no pending
///   save holds them, then moved to the cache (never evicted before).
/// - `cache/`: downloaded files and uploaded copies, evicted least recently
///   used first beyond the size limit, except pinned ones.
/// - `partial/`: downloads under way or cancelled, which a later download
///   resumes from their length.
/// - `pins.json`: the checksums of the pinned assets.
///
/// (`@unchecked Sendable`: the paths are constants, and the mutable state
/// (pins, claims, fresh URLs) is read and written only while `lock` is held.)
final class AssetStore: @unchecked Sendable {
    let root: URL
    let local: URL
    let cache: URL
    let partial: URL
    let cacheLimit: Int64

    private let lock = NSLock()
    private var pins: Set<String>
    /// The partial files downloads are writing.
    private var claimed: Set<String> = []
    /// Assets with a download URL fresher than the replica's.
    private var fresh: [String: AssetLocation] = [:]

    /// Reads the pins; the folders are made when first written to, so that
    /// an engine that refuses its journal leaves the directory as it was.
    init(directory: URL, cacheLimit: Int64) {
        root = directory.appendingPathComponent("assets", isDirectory: true)
        local = root.appendingPathComponent("local", isDirectory: true)
        cache = root.appendingPathComponent("cache", isDirectory: true)
        partial = root.appendingPathComponent("partial", isDirectory: true)
        self.cacheLimit = cacheLimit
        let saved = try? Data(contentsOf: root.appendingPathComponent("pins.json"))
        pins = Set(saved.flatMap { try? JSONDecoder().decode([String].self, from: $0) } ?? [])
    }

    private func makeFolders() throws {
        for folder in [local, cache, partial] where !exists(folder) {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
    }

    /// The file name of an asset: the hex of its checksum's bytes, so that
    /// any checksum makes a safe name and the bytes stay exact.
    static func key(_ checksum: String) -> String {
        var text = ""
        text.reserveCapacity(checksum.utf8.count * 2)
        for byte in checksum.utf8 {
            text.append(Self.hexDigits[Int(byte >> 4)])
            text.append(Self.hexDigits[Int(byte & 15)])
        }
        return text
    }

    private static let hexDigits = Array("0123456789abcdef")

    // MARK: Local copies

    /// Copies the bytes of each asset into `local/` and syncs them, unless
    /// a copy is there already; an asset in the cache moves back. Returns
    /// once every copy is durable. Called on the engine's actor, with the
    /// save queued right after, so that ``retire(keeping:)`` never sees a
    /// copy whose save is not pending yet.
    func stage(_ assets: [CloudAsset]) throws {
        guard !assets.isEmpty else { return }
        try makeFolders()
        var staged = false
        for asset in assets {
            let key = Self.key(asset.checksum)
            let target = local.appendingPathComponent(key)
            if exists(target) { continue }
            let cached = cache.appendingPathComponent(key)
            if exists(cached), size(of: cached) == asset.size, rename(cached.path, target.path) == 0 {
                staged = true
                continue
            }
            let temporary = local.appendingPathComponent(key + ".tmp-" + UUID().uuidString)
            switch asset.source {
            case .file(let url)?: try copyFile(url, to: temporary, expecting: asset)
            case .data(let data)?: try write(data, to: temporary)
            case nil: continue
            }
            guard rename(temporary.path, target.path) == 0 else {
                unlink(temporary.path)
                throw Self.ioError("cannot keep the copy of \(asset)", errno)
            }
            staged = true
        }
        if staged { try syncDirectory(local) }
    }

    /// Copies a file into the cache while hashing it: one read of its
    /// bytes, which ``stage(_:)`` then takes from the cache without reading
    /// the file again. Returns the checksum and size of the bytes copied.
    func importFile(_ file: URL) throws -> (checksum: String, size: Int64) {
        try makeFolders()
        let temporary = partial.appendingPathComponent(Self.importPrefix + UUID().uuidString)
        let input = try FileHandle(forReadingFrom: file)
        defer { try? input.close() }
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw Self.ioError("cannot create a copy of \(file.lastPathComponent)", errno)
        }
        var hasher = SHA256()
        var size: Int64 = 0
        do {
            let output = try FileHandle(forWritingTo: temporary)
            defer { try? output.close() }
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                hasher.update(chunk)
                size += Int64(chunk.count)
                try output.write(contentsOf: chunk)
            }
            try output.synchronize()
        } catch {
            unlink(temporary.path)
            throw error
        }
        let checksum = Data(hasher.finalize()).base64EncodedString()
        let key = Self.key(checksum)
        if exists(local.appendingPathComponent(key)) || exists(cache.appendingPathComponent(key)) {
            unlink(temporary.path)
        } else if rename(temporary.path, cache.appendingPathComponent(key).path) != 0 {
            unlink(temporary.path)
            throw Self.ioError("cannot keep the copy of \(file.lastPathComponent)", errno)
        }
        return (checksum, size)
    }

    /// Deletes the copies of imports that a crash left half written. Run
    /// when the engine opens, before it can import anything.
    func removeAbandonedImports() {
        for name in Self.names(in: partial) where name.hasPrefix(Self.importPrefix) {
            unlink(partial.appendingPathComponent(name).path)
        }
    }

    /// The start of an import's file name in `partial/`, which no asset's key has.
    private static let importPrefix = "import-"

    /// Moves the local copies no pending save holds any more into the
    /// cache, and deletes copies a crash left half written (``stage(_:)``
    /// runs on the engine's actor, as this does, so none is under way).
    func retire(keeping held: Set<String>) {
        for key in Self.names(in: local) where !held.contains(key) {
            if key.contains(".tmp-") {
                unlink(local.appendingPathComponent(key).path)
                continue
            }
            let from = local.appendingPathComponent(key)
            let to = cache.appendingPathComponent(key)
            unlink(to.path)
            _ = rename(from.path, to.path)
        }
    }

    /// Whether any local copy (or a crash's half-written one) is there.
    var hasLocalCopies: Bool { !Self.names(in: local).isEmpty }

    // MARK: Reading

    /// The file of the asset's bytes on this device, local copy or cached,
    /// marked as just used unless only `peeking`; `nil` when it has none.
    func file(for checksum: String, peeking: Bool = false) -> URL? {
        let key = Self.key(checksum)
        let copy = local.appendingPathComponent(key)
        if exists(copy) { return copy }
        let cached = cache.appendingPathComponent(key)
        guard exists(cached) else { return nil }
        if !peeking { touch(cached) }
        return cached
    }

    // MARK: Downloads

    /// The partial file a download of the asset writes, which a later
    /// download resumes. One download at a time writes it: this waits
    /// while another holds it (one that was just cancelled lets go at its
    /// next chunk). Call ``release(_:)`` after.
    func claimPartial(_ checksum: String) async throws -> URL {
        try makeFolders()
        let key = Self.key(checksum)
        while !lock.withLock({ claimed.insert(key).inserted }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        return partial.appendingPathComponent(key)
    }

    func release(_ checksum: String) {
        _ = lock.withLock { claimed.remove(Self.key(checksum)) }
    }

    /// Checks a finished download's bytes against the asset and moves it
    /// into the cache. A file that does not match is deleted.
    func complete(_ file: URL, as asset: CloudAsset) throws -> URL {
        let handle = try FileHandle(forReadingFrom: file)
        var hasher = SHA256()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(chunk)
            size += Int64(chunk.count)
        }
        try handle.close()
        let checksum = Data(hasher.finalize()).base64EncodedString()
        guard size == asset.size, checksum == asset.checksum else {
            unlink(file.path)
            throw CloudError(
                .internalError, reason: "the downloaded bytes of \(asset) do not match it (\(size) bytes, \(checksum))")
        }
        let target = cache.appendingPathComponent(Self.key(asset.checksum))
        guard rename(file.path, target.path) == 0 else { throw Self.ioError("cannot keep \(asset)", errno) }
        return target
    }

    /// Writes bytes this device has into the cache.
    func cacheData(_ data: Data, as asset: CloudAsset) throws -> URL {
        try makeFolders()
        let target = cache.appendingPathComponent(Self.key(asset.checksum))
        try write(data, to: target)
        return target
    }

    /// Deletes the least recently used cached files until the cache fits
    /// its limit, never a pinned one nor one in `protected` (keys).
    func evict(protecting protected: Set<String>) {
        var files: [(key: String, size: Int64, used: Date)] = []
        var total: Int64 = 0
        for key in Self.names(in: cache) {
            let url = cache.appendingPathComponent(key)
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path) else { continue }
            let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
            total += size
            files.append((key, size, attributes[.modificationDate] as? Date ?? .distantPast))
        }
        guard total > cacheLimit else { return }
        let pinned = lock.withLock { pins }
        for file in files.sorted(by: { $0.used < $1.used }) where total > cacheLimit {
            guard !pinned.contains(file.key), !protected.contains(file.key) else { continue }
            unlink(cache.appendingPathComponent(file.key).path)
            total -= file.size
        }
    }

    /// Runs file work that takes a while (hashing a download, reading a
    /// whole file) on a queue of its own, not on the tasks' threads.
    func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Self.queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    private static let queue = DispatchQueue(label: "Cumulus.assets", attributes: .concurrent)

    // MARK: Pins, fresh URLs

    func setPinned(_ checksum: String, _ pinned: Bool) throws {
        let key = Self.key(checksum)
        try makeFolders()
        let all = lock.withLock {
            if pinned { pins.insert(key) } else { pins.remove(key) }
            return pins.sorted()
        }
        let file = root.appendingPathComponent("pins.json")
        try JSONEncoder().encode(all).write(to: file, options: .atomic)
    }

    func isPinned(_ checksum: String) -> Bool {
        lock.withLock { pins.contains(Self.key(checksum)) }
    }

    /// Where the asset was last found with a fresh download URL.
    func freshLocation(_ checksum: String) -> AssetLocation? {
        lock.withLock { fresh[checksum] }
    }

    func setFreshLocation(_ location: AssetLocation, for checksum: String) {
        lock.withLock { fresh[checksum] = location }
    }

    // MARK: Files

    static func names(in folder: URL) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    }

    func exists(_ url: URL) -> Bool {
        FileManager.default.fileExists(atPath: url.path)
    }

    func size(of url: URL) -> Int64 {
        let attributes = try? FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes?[.size] as? NSNumber)?.int64Value ?? 0
    }

    private func touch(_ url: URL) {
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: url.path)
    }

    /// Copies a file in chunks, checking that its bytes are still the asset's.
    private func copyFile(_ source: URL, to target: URL, expecting asset: CloudAsset) throws {
        let input = try FileHandle(forReadingFrom: source)
        defer { try? input.close() }
        guard FileManager.default.createFile(atPath: target.path, contents: nil) else {
            throw Self.ioError("cannot create a copy of \(asset)", errno)
        }
        let output = try FileHandle(forWritingTo: target)
        var hasher = SHA256()
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                hasher.update(chunk)
                try output.write(contentsOf: chunk)
            }
            try output.synchronize()
            try output.close()
        } catch {
            try? output.close()
            unlink(target.path)
            throw error
        }
        guard Data(hasher.finalize()).base64EncodedString() == asset.checksum else {
            unlink(target.path)
            throw SyncEngineError(.assetUnavailable, "the file of \(asset) changed since the asset was made from it")
        }
    }

    private func write(_ data: Data, to target: URL) throws {
        guard FileManager.default.createFile(atPath: target.path, contents: nil) else {
            throw Self.ioError("cannot create \(target.lastPathComponent)", errno)
        }
        let output = try FileHandle(forWritingTo: target)
        defer { try? output.close() }
        try output.write(contentsOf: data)
        try output.synchronize()
    }

    private func syncDirectory(_ folder: URL) throws {
        let descriptor = open(folder.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.ioError("cannot open \(folder.lastPathComponent)", errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Self.ioError("cannot sync \(folder.lastPathComponent)", errno) }
    }

    private static func ioError(_ what: String, _ code: Int32) -> JournalError {
        JournalFiles.ioError(what, code)
    }
}
