import CloudCodable
import CloudProtocol
import Crypto
import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
    private let systemWrite = Glibc.write
    private let systemClose = Glibc.close
#elseif canImport(Darwin)
    import Darwin
    private let systemWrite = Darwin.write
    private let systemClose = Darwin.close
#endif

/// ``AssetByteStore`` on files: one file per asset under a directory, the
/// bytes of ``SQLiteStorage``.
///
/// A file is named by its id's bytes in hexadecimal (any id, and two ids
/// that differ in case only stay apart on a case-insensitive file system),
/// in one of 256 subdirectories picked by a hash of the id; directories are
/// 0700 and files 0600 (``PrivateFiles``). A write goes to
/// a temporary file that is synced, renamed into place and its directory
/// synced before it returns, so an answered upload survives a crash or a
/// power cut. The blocking file calls run on NIO's thread pool, a chunk at a
/// time, so neither a write nor a read holds more than a chunk in memory.
public struct FileAssetStore: AssetByteStore {
    /// The directory the files are in.
    public let directory: String
    private let threadPool: NIOThreadPool

    /// The bytes gathered before a write, and read at once.
    static let chunkSize = 256 * 1024
    /// What a temporary file's name ends with.
    static let partialSuffix = ".partial"

    /// How old a temporary file must be before ``storedIDs()`` takes it for
    /// the leftover of a write a crash cut short: far older than a body may
    /// stall before its request is cut off.
    static let abandonedAge: Double = 3600

    /// Opens the directory at `directory`, creating it (0700) if needed.
    public init(directory: String, threadPool: NIOThreadPool = .singleton) throws {
        self.directory = directory
        self.threadPool = threadPool
        try PrivateFiles.createDirectory(directory)
    }

    /// Writes the chunks to a temporary file and renames it into place once
    /// it is synced; a failure leaves nothing behind.
    public func write<Chunks: AsyncSequence>(_ chunks: Chunks, as id: String) async throws
    where Chunks.Element == [UInt8] {
        let (folder, path) = try location(of: id)
        let partial = path + "." + UUID().uuidString + Self.partialSuffix
        let file = try await threadPool.runIfActive {
            try Self.makeFolder(folder, in: self.directory)
            return try FileDescriptor.create(partial)
        }
        do {
            var buffer: [UInt8] = []
            buffer.reserveCapacity(Self.chunkSize)
            for try await chunk in chunks {
                buffer += chunk
                guard buffer.count >= Self.chunkSize else { continue }
                let full = buffer
                try await threadPool.runIfActive { try file.writeAll(full) }
                buffer.removeAll(keepingCapacity: true)
            }
            let rest = buffer
            try await threadPool.runIfActive {
                try file.writeAll(rest)
                try file.sync()
                try file.close()
                try Self.check(rename(partial, path), "rename", path)
                try Self.syncDirectory(folder)
            }
        } catch {
            try? file.close()
            unlink(partial)
            throw error
        }
    }

    /// The file's bytes in `range`, read a chunk at a time as the download
    /// is read; a missing file throws `NOT_FOUND` at once.
    public func read(_ id: String, range: Range<Int64>, assetSize: Int64) async throws -> AssetDownload {
        let path = try location(of: id).path
        let file = try await threadPool.runIfActive { try ReadableFile(path) }
        return AssetDownload(
            assetSize: assetSize, range: range, chunks: FileChunks(file: file, range: range, threadPool: threadPool))
    }

    /// Deletes the files; a missing one is no error.
    public func delete(_ ids: [String]) async throws {
        let paths = try ids.map { try location(of: $0).path }
        try await threadPool.runIfActive {
            for path in paths where unlink(path) != 0 && errno != ENOENT {
                throw Self.failure("unlink", path)
            }
        }
    }

    /// The ids of the files; on the way, deletes the temporary files that
    /// no write has touched for ``abandonedAge`` (a crash cut their write
    /// short), which the collector's sweep would otherwise never see.
    public func storedIDs() async throws -> [String] {
        let directory = self.directory
        return try await threadPool.runIfActive {
            var ids: [String] = []
            let abandoned = Date().addingTimeInterval(-Self.abandonedAge)
            for folder in try Self.folders(in: directory) {
                for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
                    guard name.hasSuffix(Self.partialSuffix) else {
                        if let id = Self.id(fromFileName: name) { ids.append(id) }
                        continue
                    }
                    let path = folder + "/" + name
                    let modified = try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
                    if let modified, modified < abandoned { unlink(path) }
                }
            }
            return ids
        }
    }

    // MARK: Names

    /// The subdirectory and the path of the file of `id`.
    func location(of id: String) throws -> (folder: String, path: String) {
        let bytes = Array(id.utf8)
        // A file name holds at most 255 bytes; ids are the server's own, far shorter.
        guard !bytes.isEmpty, bytes.count <= 100 else {
            throw CloudError(.internalError, reason: "an asset id of \(bytes.count) bytes cannot name a file")
        }
        let folder = directory + "/" + ServerSecrets.hex(Array(SHA256.hash(data: bytes).prefix(1)))
        return (folder, folder + "/" + ServerSecrets.hex(bytes))
    }

    /// The id a file name spells in hexadecimal, or `nil` for a file that is not an asset's.
    static func id(fromFileName name: String) -> String? {
        let digits = Array(name.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(ofHexDigit: digits[index]), let low = value(ofHexDigit: digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func value(ofHexDigit digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    /// The subdirectories of `directory` that hold files.
    static func folders(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.utf8.count == 2 && $0.utf8.allSatisfy { value(ofHexDigit: $0) != nil } }
            .map { directory + "/" + $0 }
    }

    // MARK: Files

    /// Creates a subdirectory (0700) if missing, and syncs the directory
    /// holding it so that the new entry survives a crash.
    static func makeFolder(_ folder: String, in directory: String) throws {
        guard mkdir(folder, PrivateFiles.directoryMode) == 0 else {
            guard errno == EEXIST else { throw failure("mkdir", folder) }
            return
        }
        // mkdir applies the umask; the folder is private whatever it is.
        try check(chmod(folder, PrivateFiles.directoryMode), "chmod", folder)
        try syncDirectory(directory)
    }

    static func syncDirectory(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        try check(descriptor, "open", path)
        defer { close(descriptor) }
        try check(fsync(descriptor), "fsync", path)
    }

    /// Throws for a failed system call (`result` below 0), naming it and the path.
    static func check(_ result: Int32, _ call: String, _ path: String) throws {
        guard result < 0 else { return }
        throw failure(call, path)
    }

    /// The error of the system call that just failed.
    static func failure(_ call: String, _ path: String) -> CloudError {
        let code = errno
        return CloudError(
            .internalError, reason: "\(call) of an asset file failed: \(String(cString: strerror(code))) (\(path))")
    }
}

/// A file being written: its descriptor, closed once.
private final class FileDescriptor: @unchecked Sendable {
    // Used by one write at a time, each step awaited before the next: never concurrently.
    private var descriptor: Int32
    private let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// A new file, 0600 whatever the umask.
    static func create(_ path: String) throws -> FileDescriptor {
        FileDescriptor(descriptor: try PrivateFiles.createFile(path), path: path)
    }

    func writeAll(_ bytes: [UInt8]) throws {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                systemWrite(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 && errno == EINTR { continue }
            try FileAssetStore.check(Int32(clamping: result), "write", path)
            written += result
        }
    }

    func sync() throws {
        try FileAssetStore.check(fsync(descriptor), "fsync", path)
    }

    func close() throws {
        guard descriptor >= 0 else { return }
        let result = systemClose(descriptor)
        descriptor = -1
        try FileAssetStore.check(result, "close", path)
    }

    deinit {
        if descriptor >= 0 { _ = systemClose(descriptor) }
    }
}

/// A file open for reading, closed when the last download reading it goes
/// away; a file deleted meanwhile stays readable through it.
final class ReadableFile: Sendable {
    let descriptor: Int32

    init(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            guard errno == ENOENT else { throw FileAssetStore.failure("open", path) }
            throw CloudError(.notFound, reason: "the asset's bytes are gone")
        }
        self.descriptor = descriptor
    }

    /// Up to `count` bytes from `offset`; fewer only at the end of the file.
    func read(at offset: Int64, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let result = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
            }
            if result < 0 && errno == EINTR { continue }
            try FileAssetStore.check(Int32(clamping: result), "read", "descriptor \(descriptor)")
            if result == 0 { break }
            filled += result
        }
        bytes.removeLast(count - filled)
        return bytes
    }

    deinit {
        close(descriptor)
    }
}

/// The chunks of a range of a file, read one at a time as they are asked for.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]

    let file: ReadableFile
    let range: Range<Int64>
    let threadPool: NIOThreadPool

    func makeAsyncIterator() -> Iterator {
        Iterator(file: file, next: range.lowerBound, end: range.upperBound, threadPool: threadPool)
    }

    struct Iterator: AsyncIteratorProtocol {
        let file: ReadableFile
        var next: Int64
        let end: Int64
        let threadPool: NIOThreadPool

        mutating func next() async throws -> [UInt8]? {
            guard next < end else { return nil }
            let (file, offset) = (self.file, next)
            let count = Int(Swift.min(Int64(FileAssetStore.chunkSize), end - next))
            let bytes = try await threadPool.runIfActive { try file.read(at: offset, count: count) }
            guard !bytes.isEmpty else {
                throw CloudError(.internalError, reason: "an asset's file is shorter than its row says")
            }
            next += Int64(bytes.count)
            return bytes
        }
    }
}
