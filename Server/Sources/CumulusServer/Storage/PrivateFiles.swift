import CloudCodable
import CloudProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Files for the server's account alone: directories 0700 and files 0600,
/// whatever the umask. A data directory holds every user's records, the
/// hashes of the credentials and the secret that signs download URLs, and
/// a backup holds the same, so every one of their files is made here.
///
/// The modes are set explicitly (`mkdir` and `open` with the mode, then
/// `chmod` or `fchmod`), since the umask can only take bits away from
/// what a call asks. SQLite creates a database's `-wal`, `-shm` and
/// `-journal` with the database file's own mode, so a database file made
/// by ``prepareDatabaseFile(_:)`` keeps them private too.
package enum PrivateFiles {
    /// The mode of every directory: the owner's alone.
    package static let directoryMode: mode_t = 0o700
    /// The mode of every file: the owner reads and writes, no one else.
    package static let fileMode: mode_t = 0o600

    /// Creates the directory at `path`, and each missing parent, 0700; one
    /// that exists is left as it is (see ``tighten(_:)``).
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`) naming the call that failed.
    package static func createDirectory(_ path: String) throws {
        if isDirectory(path) { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != path { try createDirectory(parent) }
        guard mkdir(path, directoryMode) == 0 else {
            // Another process made it meanwhile.
            guard errno == EEXIST, isDirectory(path) else { throw failure("mkdir", path) }
            return
        }
        try check(chmod(path, directoryMode), "chmod", path)
    }

    /// Creates a new file at `path`, which must not exist, 0600 and open
    /// for writing: its descriptor, which the caller closes.
    package static func createFile(_ path: String) throws -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fileMode)
        try check(descriptor, "open", path)
        guard fchmod(descriptor, fileMode) == 0 else {
            let error = failure("fchmod", path)
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Creates an empty database file at `path`, 0600, unless one is there,
    /// so that SQLite, which gives a file it creates the umask's mode and a
    /// `-wal` or `-shm` the database's, keeps them private. A file that
    /// cannot be made here is left for SQLite to report.
    package static func prepareDatabaseFile(_ path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fileMode)
        guard descriptor >= 0 else { return }
        _ = fchmod(descriptor, fileMode)
        close(descriptor)
    }

    /// Writes `bytes` into the file at `path`, created 0600 or replacing
    /// what it held (and made 0600), and syncs it.
    package static func writeFile(_ bytes: [UInt8], to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, fileMode)
        try check(descriptor, "open", path)
        defer { close(descriptor) }
        try check(fchmod(descriptor, fileMode), "fchmod", path)
        try writeAll(bytes[...], to: descriptor, path: path)
        try check(fsync(descriptor), "fsync", path)
    }

    /// Copies the file at `source` into a new file `target` (0600, which
    /// must not exist) and syncs it; returns its size.
    package static func copyFile(_ source: String, to target: String) throws -> Int64 {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        try check(input, "open", source)
        defer { close(input) }
        let output = try createFile(target)
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var total: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            try check(Int32(clamping: count), "read", source)
            if count == 0 { break }
            try writeAll(buffer[..<count], to: output, path: target)
            total += Int64(count)
        }
        try check(fsync(output), "fsync", target)
        return total
    }

    /// Copies the directory `source` and everything in it into a new
    /// directory `target`: directories 0700, files 0600 and synced.
    /// Symbolic links and other special files are left out.
    package static func copyTree(_ source: String, to target: String) throws {
        try check(mkdir(target, directoryMode), "mkdir", target)
        try check(chmod(target, directoryMode), "chmod", target)
        for name in try FileManager.default.contentsOfDirectory(atPath: source) {
            let from = source + "/" + name
            switch kind(of: from) {
            case mode_t(S_IFDIR): try copyTree(from, to: target + "/" + name)
            case mode_t(S_IFREG): _ = try copyFile(from, to: target + "/" + name)
            default: continue
            }
        }
    }

    /// Takes every permission of the group and others off `root` and what
    /// is under it, without following symbolic links: a directory that has
    /// any becomes 0700, a file 0600. Returns the paths it changed, for
    /// the log; what vanishes meanwhile is passed over.
    @discardableResult
    package static func tighten(_ root: String) throws -> [String] {
        var changed: [String] = []
        try tighten(root, into: &changed)
        return changed
    }

    private static func tighten(_ path: String, into changed: inout [String]) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT else { throw failure("lstat", path) }
            return
        }
        let type = info.st_mode & mode_t(S_IFMT)
        guard type == mode_t(S_IFDIR) || type == mode_t(S_IFREG) else { return }
        if info.st_mode & 0o077 != 0 {
            try check(chmod(path, type == mode_t(S_IFDIR) ? directoryMode : fileMode), "chmod", path)
            changed.append(path)
        }
        guard type == mode_t(S_IFDIR) else { return }
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            try tighten(path + "/" + name, into: &changed)
        }
    }

    // MARK: System calls

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR)
    }

    /// The file type bits of `path`, not following a symbolic link; 0 when it cannot be read.
    private static func kind(of path: String) -> mode_t {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return info.st_mode & mode_t(S_IFMT)
    }

    private static func writeAll(_ bytes: ArraySlice<UInt8>, to descriptor: Int32, path: String) throws {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 && errno == EINTR { continue }
            try check(Int32(clamping: result), "write", path)
            written += result
        }
    }

    /// Throws for a failed system call (`result` below 0), naming it and the path.
    private static func check(_ result: Int32, _ call: String, _ path: String) throws {
        guard result < 0 else { return }
        throw failure(call, path)
    }

    /// The error of the system call that just failed.
    private static func failure(_ call: String, _ path: String) -> CloudError {
        let code = errno
        return CloudError(.internalError, reason: "\(call) failed: \(String(cString: strerror(code))) (\(path))")
    }
}
