import CumulusServer
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The lock `cumulus serve` holds on its data directory while it runs, and
/// `cumulus restore` while it replaces the data: `flock` on the file
/// `serve.lock` in the directory, as the journal locks its own.
///
/// The system drops an `flock` lock when its process dies, so a killed
/// server leaves nothing locked; the file stays, holding the last holder's
/// process id for the message that refuses a second one. Other commands
/// (`container add`, `backup`…) do not take it: SQLite lets them write
/// beside a running server.
enum DataDirectoryLock {
    /// The lock file's name in the data directory.
    static let fileName = "serve.lock"

    /// Runs `body` holding the lock of `directory` (an absolute path);
    /// throws ``CommandFailure`` at once when another holds it.
    static func withLock<T>(directory: String, _ body: () async throws -> T) async throws -> T {
        let descriptor = try acquire(directory: directory)
        defer { close(descriptor) }
        return try await body()
    }

    /// Locks `directory`, returning the descriptor whose closing unlocks it.
    private static func acquire(directory: String) throws -> Int32 {
        let path = directory + "/" + fileName
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, PrivateFiles.fileMode)
        guard descriptor >= 0 else {
            throw CommandFailure("Cannot open \(path): \(String(cString: strerror(errno))).")
        }
        // The data directory's files are the server's alone, this one too, whatever the umask.
        _ = fchmod(descriptor, PrivateFiles.fileMode)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            let holder = code == EWOULDBLOCK ? holderDescription(descriptor) : nil
            close(descriptor)
            guard let holder else {
                throw CommandFailure("Cannot lock \(path): \(String(cString: strerror(code))).")
            }
            throw CommandFailure(
                "The data directory \(directory) is in use by a running cumulus serve\(holder): "
                    + "it holds \(path). Stop that server first.")
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
        return descriptor
    }

    /// ` (process N)` from the holder's lock file, or nothing when it holds no number.
    private static func holderDescription(_ descriptor: Int32) -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return "" }
        let text = String(decoding: bytes.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let pid = Int32(text) else { return "" }
        return " (process \(pid))"
    }
}
