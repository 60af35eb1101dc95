import Foundation
import Synchronization

/// Starts the tests' child processes one at a time: Foundation's
/// `Process.run()` on Linux once crashed (a bad pointer in its copying)
/// while several tests started children at the same moment.
enum ProcessSpawn {
    private static let lock = Mutex(())

    static func run(_ process: Process) throws {
        try lock.withLock { _ in try process.run() }
    }
}
