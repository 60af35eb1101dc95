import CloudProtocol
import CumulusServerCore
import Foundation

/// One failed request as the console lists it.
public struct RecordedFailure: Sendable, Hashable {
    /// The `uuid` the client found in its answer.
    public var uuid: String
    /// When the request was answered.
    public var date: Date
    /// The method and the path as logged (credentials left out).
    public var request: String
    /// The operation, e.g. `records/modify`, when the path named one.
    public var operation: String?
    /// The caller's user record name, once authentication found one.
    public var user: String?
    /// The HTTP status of the answer.
    public var status: Int
    /// The error's `serverErrorCode`.
    public var code: String
    /// The error's reason.
    public var reason: String

    /// Creates a record of a failure.
    public init(
        uuid: String, date: Date, request: String, operation: String?, user: String?, status: Int, code: String,
        reason: String
    ) {
        self.uuid = uuid
        self.date = date
        self.request = request
        self.operation = operation
        self.user = user
        self.status = status
        self.code = code
        self.reason = reason
    }
}

/// The last failed requests, newest first, in a ring of fixed size: fed
/// where the server logs each failure, read by the console.
public final class RecentFailures: Sendable {
    /// How many failures are kept; older ones are dropped.
    public let capacity: Int
    private let ring: LockedState<(entries: [RecordedFailure], next: Int)>

    /// A ring of `capacity` failures (at least one).
    public init(capacity: Int = 500) {
        self.capacity = max(1, capacity)
        ring = LockedState(([], 0))
    }

    /// Keeps a failure, dropping the oldest when full.
    public func record(_ failure: RecordedFailure) {
        ring.withLock { ring in
            if ring.entries.count < capacity {
                ring.entries.append(failure)
            } else {
                ring.entries[ring.next] = failure
            }
            ring.next = (ring.next + 1) % capacity
        }
    }

    /// The failures kept, newest first.
    public var all: [RecordedFailure] {
        ring.withLock { ring in
            let split = ring.entries.count < capacity ? ring.entries.count : ring.next
            return Array((ring.entries[split...] + ring.entries[..<split]).reversed())
        }
    }

    /// The failure whose answer carried `uuid` (compared without case), or `nil`.
    public func failure(uuid: String) -> RecordedFailure? {
        all.first { $0.uuid.lowercased() == uuid.lowercased() }
    }
}

/// What the layers inside the log middleware learn of a request that the
/// failure record wants: the caller and the operation. A task-local, since
/// the request context is a value each middleware passes inward only.
final class RequestFacts: Sendable {
    private let facts = LockedState<(user: String?, operation: String?)>((nil, nil))

    /// The facts of the request this task answers, if the log middleware set any.
    @TaskLocal static var current: RequestFacts?

    /// Notes who sends the request and what it asks.
    func note(user: String?, operation: String) {
        facts.withLock { $0 = (user, operation) }
    }

    /// The user noted, if any.
    var user: String? { facts.withLock { $0.user } }
    /// The operation noted, if any.
    var operation: String? { facts.withLock { $0.operation } }
}
