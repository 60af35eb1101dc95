import CumulusServerCore

/// The requests a server answered, by operation, as the console's load page
/// shows them: totals since the server started, and the last minute.
///
/// ``ServerMetrics`` feeds it beside the metrics its factory makes: the
/// factory may keep nothing a page can read (swift-metrics' no-op
/// handlers, or a Prometheus registry whose values come out only as the
/// scrape's text), and a rate needs two readings a scraper would take. So
/// the server keeps, for each operation, counts and a latency histogram
/// since start, and a ring of one-second slots for the last minute.
final class RequestLoad: Sendable {
    private let tally = LockedState(LoadTally())
    private let start = ContinuousClock.now

    /// One answered request.
    func record(operation: String, status: Int, duration: Duration) {
        let second = start.duration(to: .now).components.seconds
        let seconds = Self.fractionalSeconds(duration)
        tally.withLock { $0.record(operation: operation, status: status, seconds: seconds, at: second) }
    }

    /// What was answered, read now.
    func reading() -> LoadReading {
        let second = start.duration(to: .now).components.seconds
        return tally.withLock { $0.reading(at: second, uptime: second) }
    }

    private static func fractionalSeconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// The totals of one operation (or of all).
struct LoadTotals: Sendable, Hashable {
    var requests = 0
    /// Answers with a 4xx status: the client's mistakes, refusals.
    var clientErrors = 0
    /// Answers with a 5xx status: the server's failures.
    var serverErrors = 0
    var seconds = 0.0
    var longest = 0.0
    /// Requests by latency bucket (``LoadTally/bucketBounds``, then one above the last).
    var buckets = [Int](repeating: 0, count: LoadTally.bucketBounds.count + 1)

    mutating func add(status: Int, seconds: Double) {
        requests += 1
        if (400..<500).contains(status) { clientErrors += 1 }
        if status >= 500 { serverErrors += 1 }
        self.seconds += seconds
        longest = max(longest, seconds)
        let bucket = LoadTally.bucketBounds.firstIndex { seconds <= $0 } ?? LoadTally.bucketBounds.count
        buckets[bucket] += 1
    }

    /// The mean latency in seconds, or `nil` before any request.
    var mean: Double? { requests == 0 ? nil : seconds / Double(requests) }

    /// The bound under which the `quantile` of the latencies fall: the
    /// upper bound of the bucket that holds it (`nil` before any request,
    /// `.infinity` above the last bound).
    func bound(ofQuantile quantile: Double) -> Double? {
        guard requests > 0 else { return nil }
        let rank = Int((quantile * Double(requests)).rounded(.up))
        var seen = 0
        for (index, count) in buckets.enumerated() {
            seen += count
            if seen >= max(rank, 1) {
                return index < LoadTally.bucketBounds.count ? LoadTally.bucketBounds[index] : .infinity
            }
        }
        return .infinity
    }
}

/// Counts of the last minute in one-second slots.
struct LoadSlot: Sendable, Hashable {
    var second: Int64 = -1
    var requests: [String: Int] = [:]
    var serverErrors = 0
}

/// What a ``RequestLoad`` read: the totals since start and the last minute's.
struct LoadReading: Sendable {
    /// Seconds since the server started.
    var uptime: Int64
    var operations: [String: LoadTotals]
    /// Requests of each operation in the last ``LoadTally/window`` seconds.
    var lastMinute: [String: Int]
    /// Answers with a 5xx status in the last minute.
    var lastMinuteServerErrors: Int
    /// Every operation but the notification long poll, whose wait is no latency.
    var overall: LoadTotals
}

/// The counts behind ``RequestLoad``: a value with no clock of its own,
/// told the second of each event.
struct LoadTally: Sendable {
    /// The latency buckets' upper bounds, in seconds.
    static let bucketBounds: [Double] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10]
    /// The seconds the ring covers.
    static let window = 60

    private(set) var operations: [String: LoadTotals] = [:]
    private(set) var overall = LoadTotals()
    private var ring = [LoadSlot](repeating: LoadSlot(), count: window)

    mutating func record(operation: String, status: Int, seconds: Double, at second: Int64) {
        operations[operation, default: LoadTotals()].add(status: status, seconds: seconds)
        if operation != MetricsMiddleware<CumulusRequestContext>.pollRoute {
            overall.add(status: status, seconds: seconds)
        }
        let index = Int(second % Int64(Self.window))
        if ring[index].second != second { ring[index] = LoadSlot(second: second) }
        ring[index].requests[operation, default: 0] += 1
        if status >= 500 { ring[index].serverErrors += 1 }
    }

    /// The totals, and the slots of the `window` seconds up to `second`.
    func reading(at second: Int64, uptime: Int64) -> LoadReading {
        var lastMinute: [String: Int] = [:]
        var errors = 0
        for slot in ring where slot.second >= 0 && second - slot.second < Int64(Self.window) {
            lastMinute.merge(slot.requests, uniquingKeysWith: +)
            errors += slot.serverErrors
        }
        return LoadReading(
            uptime: uptime, operations: operations, lastMinute: lastMinute, lastMinuteServerErrors: errors,
            overall: overall)
    }
}
