import CloudCodable
import CloudProtocol
import CoreMetrics
import Metrics

/// The metrics of one server, made with the factory of its
/// ``MetricsConfiguration`` (never the global `MetricsSystem`), so that
/// several servers in one process keep theirs apart.
///
/// Labels come from fixed sets: the protocol's operation or a route's
/// template (never a path as sent), a status code, a failure's kind.
final class ServerMetrics: Sendable {
    /// The request metrics' name for a request no route took.
    static let unmatched = "unmatched"

    let factory: any MetricsFactory
    /// The requests answered, for the console's load page.
    let load = RequestLoad()
    private let requests = LockedState<[RequestKey: CoreMetrics.Counter]>([:])
    private let durations = LockedState<[String: CoreMetrics.Timer]>([:])
    private let polls = LockedState(0)
    private let pollsWaiting: CoreMetrics.Gauge
    private let recordsWritten: CoreMetrics.Counter
    private let recordsRead: CoreMetrics.Counter
    /// The channels in storage that a poll used within the idle limit.
    let channelsOpen: CoreMetrics.Gauge
    private let storageErrors: [StorageFailureKind: CoreMetrics.Counter]
    let connectionsInUse: CoreMetrics.Gauge
    let connectionRequestsWaiting: CoreMetrics.Gauge
    let connectionsMaximum: CoreMetrics.Gauge
    let connectionWait: CoreMetrics.Timer
    let announcementsSent: CoreMetrics.Counter
    let announcementsReceived: CoreMetrics.Counter
    let announcementsDropped: CoreMetrics.Counter
    let catchUps: CoreMetrics.Counter
    let broadcastConnected: CoreMetrics.Gauge

    private struct RequestKey: Hashable {
        var operation: String
        var status: Int
    }

    init(factory: any MetricsFactory) {
        self.factory = factory
        pollsWaiting = CoreMetrics.Gauge(label: "cumulus_notification_polls_waiting", factory: factory)
        recordsWritten = CoreMetrics.Counter(label: "cumulus_records_written_total", factory: factory)
        recordsRead = CoreMetrics.Counter(label: "cumulus_records_read_total", factory: factory)
        channelsOpen = CoreMetrics.Gauge(label: "cumulus_notification_channels_open", factory: factory)
        var errors: [StorageFailureKind: CoreMetrics.Counter] = [:]
        for kind in StorageFailureKind.allCases {
            errors[kind] = CoreMetrics.Counter(
                label: "cumulus_storage_errors_total", dimensions: [("kind", kind.rawValue)], factory: factory)
        }
        storageErrors = errors
        connectionsInUse = CoreMetrics.Gauge(label: "cumulus_postgres_connections_in_use", factory: factory)
        connectionRequestsWaiting = CoreMetrics.Gauge(
            label: "cumulus_postgres_connection_requests_waiting", factory: factory)
        connectionsMaximum = CoreMetrics.Gauge(label: "cumulus_postgres_connections_max", factory: factory)
        connectionWait = CoreMetrics.Timer(label: "cumulus_postgres_connection_wait_seconds", factory: factory)
        announcementsSent = CoreMetrics.Counter(label: "cumulus_broadcast_announcements_sent_total", factory: factory)
        announcementsReceived = CoreMetrics.Counter(
            label: "cumulus_broadcast_announcements_received_total", factory: factory)
        announcementsDropped = CoreMetrics.Counter(
            label: "cumulus_broadcast_announcements_dropped_total", factory: factory)
        catchUps = CoreMetrics.Counter(label: "cumulus_broadcast_catch_ups_total", factory: factory)
        broadcastConnected = CoreMetrics.Gauge(label: "cumulus_broadcast_connected", factory: factory)
    }

    // MARK: Requests

    /// One answered request: its count by operation and status, and its duration.
    func requestAnswered(operation: String, status: Int, duration: Duration) {
        let key = RequestKey(operation: operation, status: status)
        let factory = factory
        let counter = requests.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(
                label: "cumulus_http_requests_total",
                dimensions: [("operation", operation), ("status", String(status))], factory: factory)
            counters[key] = counter
            return counter
        }
        counter.increment()
        let timer = durations.withLock { timers in
            if let timer = timers[operation] { return timer }
            let timer = CoreMetrics.Timer(
                label: "cumulus_http_request_duration_seconds", dimensions: [("operation", operation)],
                factory: factory)
            timers[operation] = timer
            return timer
        }
        timer.record(duration: duration)
        load.record(operation: operation, status: status, duration: duration)
    }

    /// The records of an answer: written for `records/modify`, read for
    /// lookups, queries and changes.
    func recordsAnswered(_ count: Int, operation: CloudOperation) {
        guard count > 0 else { return }
        switch operation {
        case .modifyRecords:
            recordsWritten.increment(by: count)
        case .lookupRecords, .queryRecords, .fetchZoneChanges, .fetchRecordChanges:
            recordsRead.increment(by: count)
        default:
            break
        }
    }

    /// A notification long poll starts (`1`) or ends (`-1`).
    func pollsChanged(by change: Int) {
        let waiting = polls.withLock { count in
            count += change
            return count
        }
        pollsWaiting.record(waiting)
    }

    // MARK: Storage

    func storageFailed(_ kind: StorageFailureKind) {
        storageErrors[kind]?.increment()
    }
}

/// What kind of failure of storage a request met, for
/// `cumulus_storage_errors_total`.
enum StorageFailureKind: String, Sendable, CaseIterable {
    /// The store cannot be reached, or has no connection to lend.
    case unavailable
    /// The store did not answer in time (a statement or transaction timeout).
    case timeout
    /// Any other failure of the store: a refused login, a damaged row, a full disk.
    case other
}

extension ServerMetrics {
    /// The metrics of the request being answered, for the handlers that
    /// count what only they see (the records of an answer).
    @TaskLocal static var current: ServerMetrics?
}
