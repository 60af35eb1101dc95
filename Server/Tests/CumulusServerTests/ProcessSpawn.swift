import Cumulus
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process of the tests, started with `posix_spawn` and waited
/// for with `waitpid`.
///
/// Foundation's `Process.run()` on Linux crashed (a bad pointer in a copy
/// inside it) now and then while the tests started several children at
/// once, even one at a time behind a lock; this spawns with the system
/// calls alone, one child at a time, with pipes that no other child inherits.
final class ChildProcess: Sendable {
    /// Where one of the child's standard streams goes.
    enum Stream {
        /// `/dev/null`.
        case null
        /// A pipe the tests read (or, for standard input, write).
        case pipe
    }

    /// The child's process identifier.
    let pid: pid_t
    /// What the child writes to standard output, and to standard error
    /// when that is merged into it: the reading end of its pipe.
    let output: FileHandle?
    /// The writing end of the child's standard input, when it is a pipe.
    let input: FileHandle?
    /// The child's wait status, once it has ended and been waited for.
    private let ended = Mutex<Int32?>(nil)

    private static let spawning = NSLock()

    /// The environment every child gets: the tests' own, read once.
    private static let environment: [String] = ProcessInfo.processInfo.environment.map { "\($0)=\($1)" }

    /// Starts `executable` with `arguments`; standard error goes to the
    /// output pipe with `mergeErrors`, else to `/dev/null`.
    init(
        _ executable: URL, _ arguments: [String], output outputStream: Stream = .pipe, mergeErrors: Bool = false,
        input inputStream: Stream = .null
    ) throws {
        #if canImport(Darwin)
            var actions: posix_spawn_file_actions_t? = nil
        #else
            var actions = posix_spawn_file_actions_t()
        #endif
        // One spawn at a time: between a pipe's creation and its close-on-exec flag, another child
        // started at that moment would inherit it.
        Self.spawning.lock()
        defer { Self.spawning.unlock() }
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }

        var parentEnds: [Int32] = []
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        func makePipe() throws -> (read: Int32, write: Int32) {
            var descriptors: [Int32] = [0, 0]
            guard pipe(&descriptors) == 0 else { throw Self.failure("pipe") }
            // Close-on-exec, so that no other child holds them open; set under the spawn lock.
            for descriptor in descriptors { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            return (descriptors[0], descriptors[1])
        }
        var outputHandle: FileHandle?
        var inputHandle: FileHandle?
        do {
            switch inputStream {
            case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            case .pipe:
                let ends = try makePipe()
                parentEnds.append(ends.write)
                childEnds.append(ends.read)
                posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
                inputHandle = FileHandle(fileDescriptor: ends.write, closeOnDealloc: true)
            }
            switch outputStream {
            case .null:
                posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
                if mergeErrors { posix_spawn_file_actions_adddup2(&actions, 1, 2) }
            case .pipe:
                let ends = try makePipe()
                parentEnds.append(ends.read)
                childEnds.append(ends.write)
                posix_spawn_file_actions_adddup2(&actions, ends.write, 1)
                if mergeErrors { posix_spawn_file_actions_adddup2(&actions, ends.write, 2) }
                outputHandle = FileHandle(fileDescriptor: ends.read, closeOnDealloc: true)
            }
            if !mergeErrors { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }

            let path = executable.path
            let argv = ([path] + arguments).map { strdup($0) } + [nil]
            let envp = Self.environment.map { strdup($0) } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid: pid_t = 0
            let result = posix_spawn(&pid, path, &actions, nil, argv, envp)
            guard result == 0 else { throw Self.failure("posix_spawn \(path)", code: result) }
            self.pid = pid
        } catch {
            for descriptor in parentEnds { close(descriptor) }
            throw error
        }
        output = outputHandle
        input = inputHandle
    }

    /// Whether the child has not ended yet (an ended child is waited for here).
    var isRunning: Bool { reap(blocking: false) == nil }

    /// Sends `signal` to the child, unless it has ended.
    func send(_ signal: Int32) {
        guard isRunning else { return }
        _ = kill(pid, signal)
    }

    /// Waits for the child to end; its wait status.
    @discardableResult
    func waitUntilExit() -> Int32 {
        while true {
            if let status = reap(blocking: false) { return status }
            usleep(5_000)
        }
    }

    /// The exit code of a child that exited, or `nil` (still running, or ended by a signal).
    var exitCode: Int32? {
        guard let status = ended.withLock({ $0 }), status & 0x7f == 0 else { return nil }
        return (status >> 8) & 0xff
    }

    /// Waits for the child once, under the lock, so that two threads never both reap it.
    private func reap(blocking: Bool) -> Int32? {
        ended.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            guard result == pid else { return nil }
            ended = status
            return status
        }
    }

    private static func failure(_ what: String, code: Int32 = errno) -> CloudError {
        CloudError(.internalError, reason: "\(what) failed: \(String(cString: strerror(code)))")
    }
}
