import CloudCodable
import CloudProtocol
import CoreMetrics
import Metrics

/// Where a store reports its failures and the use of its connections: to
/// the metrics of the server that attached them (``CloudService`` does,
/// when a ``CumulusHTTPServer`` is made over it), or nowhere.
///
/// Gauges are kept here as counts and set whole, so that metrics attached
/// while transactions run never go negative.
final class StorageObserver: Sendable {
    private struct State: Sendable {
        var metrics: ServerMetrics?
        var inUse = 0
        var waiting = 0
        var maximum = 0
    }

    private let state = LockedState(State())

    /// Reports to `metrics` from now on, starting with the gauges' values now.
    func attach(_ metrics: ServerMetrics) {
        let (inUse, waiting, maximum) = state.withLock { state in
            state.metrics = metrics
            return (state.inUse, state.waiting, state.maximum)
        }
        metrics.connectionsInUse.record(inUse)
        metrics.connectionRequestsWaiting.record(waiting)
        metrics.connectionsMaximum.record(maximum)
    }

    private var metrics: ServerMetrics? { state.withLock { $0.metrics } }

    /// The most connections the store's pool opens.
    func setMaximumConnections(_ maximum: Int) {
        state.withLock { $0.maximum = maximum }
        metrics?.connectionsMaximum.record(maximum)
    }

    /// A transaction failed in the store itself (not by the protocol's rules).
    func failed(_ kind: StorageFailureKind) {
        metrics?.storageFailed(kind)
    }

    /// A transaction asks the pool for a connection: track it with the lease.
    func requestConnection() -> ConnectionLease {
        let (metrics, waiting) = state.withLock { state in
            state.waiting += 1
            return (state.metrics, state.waiting)
        }
        metrics?.connectionRequestsWaiting.record(waiting)
        return ConnectionLease(observer: self)
    }

    fileprivate func leaseGranted(after wait: Duration) {
        let (metrics, inUse, waiting) = state.withLock { state in
            state.waiting -= 1
            state.inUse += 1
            return (state.metrics, state.inUse, state.waiting)
        }
        metrics?.connectionRequestsWaiting.record(waiting)
        metrics?.connectionsInUse.record(inUse)
        metrics?.connectionWait.record(duration: wait)
    }

    fileprivate func leaseEnded(granted: Bool) {
        let (metrics, inUse, waiting) = state.withLock { state in
            if granted { state.inUse -= 1 } else { state.waiting -= 1 }
            return (state.metrics, state.inUse, state.waiting)
        }
        if granted {
            metrics?.connectionsInUse.record(inUse)
        } else {
            metrics?.connectionRequestsWaiting.record(waiting)
        }
    }
}

/// One request for a pooled connection, from the wait to the connection's
/// return; ``end()`` may be called more than once.
final class ConnectionLease: Sendable {
    private enum Phase: Sendable {
        case waiting(since: ContinuousClock.Instant)
        case inUse
        case ended
    }

    private let observer: StorageObserver
    private let phase = LockedState(Phase.waiting(since: .now))

    fileprivate init(observer: StorageObserver) {
        self.observer = observer
    }

    /// The pool lent the connection.
    func granted() {
        let since = phase.withLock { phase -> ContinuousClock.Instant? in
            guard case .waiting(let since) = phase else { return nil }
            phase = .inUse
            return since
        }
        if let since { observer.leaseGranted(after: .now - since) }
    }

    /// The connection went back to the pool, or none was lent.
    func end() {
        let was = phase.withLock { phase -> Phase in
            defer { phase = .ended }
            return phase
        }
        switch was {
        case .waiting: observer.leaseEnded(granted: false)
        case .inUse: observer.leaseEnded(granted: true)
        case .ended: break
        }
    }
}

/// Where a ``PostgresChangeBroadcaster`` reports the announcements it sends
/// and receives, and whether it listens.
final class BroadcastObserver: Sendable {
    private struct State: Sendable {
        var metrics: ServerMetrics?
        var connected = false
    }

    private let state = LockedState(State())

    func attach(_ metrics: ServerMetrics) {
        let connected = state.withLock { state in
            state.metrics = metrics
            return state.connected
        }
        metrics.broadcastConnected.record(connected ? 1 : 0)
    }

    private var metrics: ServerMetrics? { state.withLock { $0.metrics } }

    func sent() { metrics?.announcementsSent.increment() }
    func received() { metrics?.announcementsReceived.increment() }
    func dropped() { metrics?.announcementsDropped.increment() }
    func caughtUp() { metrics?.catchUps.increment() }

    func connected(_ connected: Bool) {
        let metrics = state.withLock { state in
            state.connected = connected
            return state.metrics
        }
        metrics?.broadcastConnected.record(connected ? 1 : 0)
    }
}

/// A store that reports to a server's metrics.
protocol StorageObserving: Sendable {
    var observer: StorageObserver { get }
}
