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
/// The locks this process holds are also listed in ``LockTable``, so that
/// an opening can tell a holder in this process, whose release it may wait
/// for, from one in another process, which it refuses at once.
///
/// Only the journal calls ``release()``, from its I/O queue or its
/// `deinit`, never both at once, which is why it can be `@unchecked Sendable`.
final class JournalLock: @unchecked Sendable {
    static let fileName = "lock"

    private var descriptor: Int32
    private let file: LockTable.FileID

    /// Locks `directory`, creating it if needed. When a journal of this
    /// process holds it, waits up to `wait` for that journal to let go;
    /// a holder in another process is refused within a tenth of a second.
    ///
    /// - Throws: ``JournalError`` with code ``JournalError/Code/inUse`` when
    ///   another process holds the directory, or this one still does after
    ///   `wait`; `CancellationError` when the task is cancelled while waiting.
    static func acquire(directory: URL, waitingUpTo wait: Duration) async throws -> JournalLock {
        let (descriptor, file) = try openLockFile(in: directory)
        let deadline = ContinuousClock.now + wait
        // A child this process spawns shares its lock's open file description
        // until it execs: a lock let go here a moment ago may still read as taken.
        let spawnGrace = ContinuousClock.now + .milliseconds(100)
        while true {
            switch LockTable.shared.lock(descriptor, file) {
            case .locked:
                return JournalLock(descriptor: descriptor, file: file)
            case .heldHere where ContinuousClock.now < deadline && !Task.isCancelled:
                await LockTable.shared.waitForRelease(of: file, until: deadline)
            case .heldHere:
                close(descriptor)
                try Task.checkCancellation()
                throw JournalError(
                    .inUse,
                    "the journal directory \(directory.path) is still in use by another open journal of this "
                        + "process after \(wait)")
            case .heldElsewhere where ContinuousClock.now < spawnGrace && !Task.isCancelled:
                try? await Task.sleep(for: .milliseconds(5))
            case .heldElsewhere:
                close(descriptor)
                throw JournalError(
                    .inUse, "the journal directory \(directory.path) is in use by an open journal of another process")
            case .failed(let code):
                close(descriptor)
                throw JournalFiles.ioError("cannot lock \(directory.path)", code)
            }
        }
    }

    private init(descriptor: Int32, file: LockTable.FileID) {
        self.descriptor = descriptor
        self.file = file
    }

    deinit { release() }

    /// Lets the directory be opened again; releasing twice does nothing.
    func release() {
        guard descriptor >= 0 else { return }
        LockTable.shared.unlock(descriptor, file)
        descriptor = -1
    }

    /// Creates `directory` if needed and opens (or creates) its lock file.
    private static func openLockFile(in directory: URL) throws(JournalError) -> (Int32, LockTable.FileID) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw JournalError(.io, "cannot create the journal directory \(directory.path): \(error)")
        }
        let path = directory.appendingPathComponent(fileName).path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw JournalFiles.ioError("cannot open the lock file of \(directory.path)", errno)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw JournalFiles.ioError("cannot inspect the lock file of \(directory.path)", code)
        }
        let file = LockTable.FileID(
            device: UInt64(truncatingIfNeeded: status.st_dev), inode: UInt64(truncatingIfNeeded: status.st_ino))
        return (descriptor, file)
    }
}

/// The lock files this process has locked, and the openings waiting for
/// one of them to be released.
///
/// Locking and unlocking go through the table's mutex, so that while it is
/// held, a file is in ``held`` exactly when a descriptor of this process
/// has it locked: a failed `flock` on a file not listed is another
/// process's lock.
final class LockTable: @unchecked Sendable {
    // Safety: `held`, `waiters` and the waiters' fields are touched only
    // with `mutex` locked.
    static let shared = LockTable()

    /// A lock file, by device and inode, whatever path it was opened by.
    struct FileID: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    enum Attempt {
        case locked
        /// A descriptor of this process holds the lock.
        case heldHere
        /// Another process holds the lock.
        case heldElsewhere
        case failed(Int32)
    }

    /// One opening waiting for a release; resumed once, by whichever of
    /// the release, the deadline or a cancellation comes first.
    private final class Waiter: @unchecked Sendable {
        // Safety: see the table's.
        var continuation: CheckedContinuation<Void, Never>?
        var isDone = false
    }

    private let mutex = NSLock()
    private var held: Set<FileID> = []
    private var waiters: [FileID: [Waiter]] = [:]

    /// Tries to lock `file` through `descriptor`, without blocking.
    func lock(_ descriptor: Int32, _ file: FileID) -> Attempt {
        mutex.withLock {
            while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                if code == EINTR { continue }
                guard code == EWOULDBLOCK else { return .failed(code) }
                return held.contains(file) ? .heldHere : .heldElsewhere
            }
            held.insert(file)
            return .locked
        }
    }

    /// Closes `descriptor`, which holds the lock of `file`, and wakes the
    /// openings waiting for it.
    func unlock(_ descriptor: Int32, _ file: FileID) {
        let woken = mutex.withLock {
            // Closing the only descriptor of the open file description drops the lock.
            close(descriptor)
            held.remove(file)
            return (waiters.removeValue(forKey: file) ?? []).compactMap(finish)
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once `file` is released, at `deadline`, or when the task is
    /// cancelled, whichever comes first.
    func waitForRelease(of file: FileID, until deadline: ContinuousClock.Instant) async {
        let waiter = Waiter()
        let timer = Task {
            guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
            self.wake(waiter)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = mutex.withLock {
                    guard !waiter.isDone, held.contains(file) else { return false }
                    waiter.continuation = continuation
                    waiters[file, default: []].append(waiter)
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            wake(waiter)
        }
        timer.cancel()
        mutex.withLock {
            waiters[file]?.removeAll { $0 === waiter }
            if waiters[file]?.isEmpty == true { waiters[file] = nil }
        }
    }

    private func wake(_ waiter: Waiter) {
        mutex.withLock { finish(waiter) }?.resume()
    }

    /// Marks `waiter` done and returns its continuation, if it still has
    /// one to resume. Called with `mutex` locked.
    private func finish(_ waiter: Waiter) -> CheckedContinuation<Void, Never>? {
        waiter.isDone = true
        defer { waiter.continuation = nil }
        return waiter.continuation
    }
}
