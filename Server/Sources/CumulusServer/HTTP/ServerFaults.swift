import CloudCodable
import CloudProtocol
import Synchronization

/// A test hook: errors that the next database requests are answered with,
/// as a real server answers when it is throttled or failing. Tests reach it
/// with `@_spi(Testing) import CumulusServer`.
///
/// Each database request (a path under `/database/1/`) that passes
/// authentication takes the next injected error, if any, and is answered
/// with its status and error dictionary without being carried out.
/// Notification polls and `tokens/create` never take one.
///
/// ```swift
/// let faults = ServerFaults()
/// faults.inject(CloudError(.throttled, reason: "slow down", retryAfter: .seconds(2)))
/// ```
@_spi(Testing) public final class ServerFaults: Sendable {
    private let queue = Mutex<[CloudError]>([])

    /// Creates a hook with nothing injected.
    public init() {}

    /// Answers the next `count` database requests with `error`, after any
    /// errors injected before.
    public func inject(_ error: CloudError, count: Int = 1) {
        queue.withLock { $0.append(contentsOf: repeatElement(error, count: max(0, count))) }
    }

    /// How many injected errors are still waiting for a request.
    public var pendingCount: Int {
        queue.withLock { $0.count }
    }

    /// Takes the next injected error.
    func next() -> CloudError? {
        queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}
