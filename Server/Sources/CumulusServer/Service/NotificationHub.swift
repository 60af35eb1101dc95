import Cumulus
import Foundation

/// The notification channels of one server process and their long polls.
///
/// Channels live in memory: a client whose server restarts asks for a new
/// token. With several servers on one storage, a ``ChangeBroadcasting``
/// brings the other servers' writes here, so that a poll hears every write
/// to its database whichever server made it; a channel itself is known
/// only to the server that created it.
final class NotificationHub: Sendable {
    /// The most notifications a channel keeps for polls that fall behind.
    static let capacity = 1_000

    /// How long a channel that nobody polls is kept: a client that stops
    /// polling (the app quit) leaves its channel behind, and one that comes
    /// back later gets NOT_FOUND and opens a new one.
    let idleLimit: Duration
    private let clock = ContinuousClock()

    init(idleLimit: Duration = .seconds(600)) {
        self.idleLimit = idleLimit
    }

    struct ChannelKey: Hashable, Sendable {
        var container: String
        var environment: CloudEnvironment
        var scope: DatabaseScope
        /// The user; empty for a server-to-server key.
        var user: String
    }

    private struct Channel: Sendable {
        var key: ChannelKey
        /// When a poll last started or ended.
        var lastActive: ContinuousClock.Instant
        /// The sequence number of `notifications.first`.
        var first = 0
        var notifications: [CloudNotification] = []
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]

        var next: Int { first + notifications.count }
    }

    private struct State: Sendable {
        var channels: [String: Channel] = [:]
        /// The tokens of the channels that hear each database's writes, so
        /// that a write visits only its listeners.
        var listeners: [DatabaseKey: Set<String>] = [:]
        var nextWaiter = 0
        var closed = false
    }

    private let state = Locked(State())

    func createChannel(_ key: ChannelKey, token: String) {
        let now = clock.now
        state.withLock { state in
            // Creating channels is rare next to writes: the place to forget idle ones.
            for (idle, channel) in state.channels
            where channel.waiters.isEmpty && channel.lastActive.duration(to: now) > idleLimit {
                state.channels[idle] = nil
                let database = Self.listened(by: channel.key)
                state.listeners[database]?.remove(idle)
                if state.listeners[database]?.isEmpty == true { state.listeners[database] = nil }
            }
            state.channels[token] = Channel(key: key, lastActive: now)
            state.listeners[Self.listened(by: key), default: []].insert(token)
        }
    }

    /// The database whose writes a channel hears: the user's own private or
    /// shared database, or the container's public one.
    private static func listened(by key: ChannelKey) -> DatabaseKey {
        DatabaseKey(
            container: key.container, environment: key.environment, scope: key.scope,
            owner: key.scope == .public ? "" : key.user)
    }

    /// Whether any channel listens to the database's writes: an
    /// announcement from another server for a database nobody here listens
    /// to costs no storage read.
    func hasListeners(for key: DatabaseKey) -> Bool {
        state.withLock { $0.listeners[key] != nil }
    }

    /// The databases some channel listens to.
    func listenedDatabases() -> [DatabaseKey] {
        state.withLock { Array($0.listeners.keys) }
    }

    /// Sends a write's notifications to the channels that listen to the
    /// database: `.zoneChanged` for each of the channel user's subscriptions
    /// on a changed zone, then `.databaseChanged` (not in the public database).
    func publish(key: DatabaseKey, changedZones: [String], subscriptions: [StoredSubscription]) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var woken: [CheckedContinuation<Void, Never>] = []
            for token in state.listeners[key] ?? [] {
                guard var channel = state.channels[token] else { continue }
                let watched = subscriptions.filter { $0.user == channel.key.user }
                    .map(\.subscription).sorted { $0.subscriptionID < $1.subscriptionID }
                var notifications: [CloudNotification] = []
                for zoneName in changedZones {
                    for subscription in watched where subscription.zoneID.zoneName == zoneName {
                        notifications.append(
                            .zoneChanged(ZoneID(zoneName: zoneName), subscriptionID: subscription.subscriptionID))
                    }
                }
                if key.scope != .public { notifications.append(.databaseChanged) }
                guard !notifications.isEmpty else { continue }
                channel.notifications += notifications
                let excess = channel.notifications.count - Self.capacity
                if excess > 0 {
                    channel.notifications.removeFirst(excess)
                    channel.first += excess
                }
                woken += channel.waiters.values
                channel.waiters = [:]
                state.channels[token] = channel
            }
            return woken
        }
        for waiter in woken { waiter.resume() }
    }

    /// Waits until the channel has notifications at or after `cursor` (from
    /// the channel's creation when `nil`), or `timeout` passes, or the task
    /// is cancelled.
    func poll(token: String, cursor: String?, timeout: Duration) async throws -> NotificationBatch {
        var start: Int
        if let cursor {
            guard cursor.first == "n", let parsed = Int(cursor.dropFirst()), parsed >= 0 else {
                throw CloudError(.badRequest, reason: "the cursor '\(cursor)' is not valid")
            }
            start = parsed
        } else {
            // From the channel's creation, so that a client which opened its
            // channel and then wrote hears its own write.
            start = 0
        }
        if try batch(token: token, from: start).notifications.isEmpty {
            let id = state.withLock { state -> Int in
                state.nextWaiter += 1
                return state.nextWaiter
            }
            let timer = Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.wake(token: token, waiter: id)
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let registered = state.withLock { state -> Bool in
                        guard !state.closed, !Task.isCancelled, let channel = state.channels[token],
                            channel.next <= start
                        else { return false }
                        state.channels[token]?.waiters[id] = continuation
                        return true
                    }
                    if !registered { continuation.resume() }
                }
            } onCancel: {
                self.wake(token: token, waiter: id)
            }
            timer.cancel()
        }
        return try batch(token: token, from: start)
    }

    /// The channel's notifications from `start` (or its oldest kept one),
    /// marking the channel as in use.
    private func batch(token: String, from start: Int) throws -> NotificationBatch {
        let now = clock.now
        let result = state.withLock { state -> NotificationBatch? in
            guard let channel = state.channels[token] else { return nil }
            // Read at a poll's start and end: the channel is in use.
            state.channels[token]?.lastActive = now
            let from = max(start, channel.first)
            guard from < channel.next else { return NotificationBatch(notifications: [], cursor: "n\(channel.next)") }
            return NotificationBatch(
                notifications: Array(channel.notifications[(from - channel.first)...]), cursor: "n\(channel.next)")
        }
        guard let result else { throw Self.unknown(token) }
        return result
    }

    private func wake(token: String, waiter id: Int) {
        let waiter = state.withLock { $0.channels[token]?.waiters.removeValue(forKey: id) }
        waiter?.resume()
    }

    /// Ends every waiting poll (the server is closing).
    func closeAll() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            var woken: [CheckedContinuation<Void, Never>] = []
            for token in state.channels.keys {
                guard let waiters = state.channels[token]?.waiters else { continue }
                woken += waiters.values
                state.channels[token]?.waiters = [:]
            }
            return woken
        }
        for waiter in woken { waiter.resume() }
    }

    private static func unknown(_ token: String) -> CloudError {
        CloudError(.notFound, reason: "there is no notification channel with this token")
    }
}
