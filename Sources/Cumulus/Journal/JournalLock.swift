import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The advisory lock that keeps a journal directory to one open journal:
/// `flock` on the file `lock` in the directory.
///
/// An `flock` lock belongs to the open file description, so a second open
/// in the same process conflicts as one in another process does, and the
/// system drops it when the process dies, so a crash leaves nothing locked.
/// The lock file stays after release: removing it would let a process that
/// opened it just before lock a file no longer in the directory.
///
/// Only the journal calls ``release()``, from its I/O queue or its
/// `deinit`, never both at once, which is why it can be `@unchecked Sendable`.
final class JournalLock: @unchecked Sendable {
    static let fileName = "lock"

    private var descriptor: Int32

    /// Creates `directory` if needed and locks it, before anything in it is read.
    ///
    /// - Throws: ``JournalError`` with code ``JournalError/Code/inUse`` when an
    ///   open journal holds the directory.
    init(directory: URL) throws(JournalError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw JournalError(.io, "cannot create the journal directory \(directory.path): \(error)")
        }
        let path = directory.appendingPathComponent(Self.fileName).path
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw JournalFiles.ioError("cannot open the lock file of \(directory.path)", errno)
        }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            close(descriptor)
            descriptor = -1
            if code == EWOULDBLOCK {
                throw JournalError(
                    .inUse, "the journal directory \(directory.path) is in use by another open journal")
            }
            throw JournalFiles.ioError("cannot lock \(directory.path)", code)
        }
    }

    deinit { release() }

    /// Lets the directory be opened again; releasing twice does nothing.
    func release() {
        guard descriptor >= 0 else { return }
        // Closing the only descriptor of the open file description drops the lock.
        close(descriptor)
        descriptor = -1
    }
}
