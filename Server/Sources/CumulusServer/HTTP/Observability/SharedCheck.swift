/// A check of storage that many requests may ask for at once (`/readyz`,
/// a scrape's count of channels): one runs at a time, its outcome serves
/// every caller for a short while, and no caller waits past its limit.
///
/// Anyone may ask `/readyz` without a token: however often they do, the
/// store is asked at most once per ``freshness``.
final class SharedCheck<Value: Sendable>: Sendable {
    private struct State: Sendable {
        var running = false
        var latest: (value: Value, at: ContinuousClock.Instant)?
        var waiters: [Int: CheckedContinuation<Value?, Never>] = [:]
        var nextWaiter = 0
    }

    /// How long an outcome answers later callers.
    let freshness: Duration
    private let check: @Sendable () async -> Value
    private let state = LockedState(State())

    init(freshness: Duration, check: @escaping @Sendable () async -> Value) {
        self.freshness = freshness
        self.check = check
    }

    /// The latest outcome if it is fresh, or the next one; `nil` when it
    /// does not come within `limit` (the check goes on, for later callers).
    func value(within limit: Duration) async -> Value? {
        let now = ContinuousClock.now
        if let latest = state.withLock({ $0.latest }), now - latest.at < freshness { return latest.value }
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: limit)
            self?.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiters[id] = continuation
                defer { state.running = true }
                return !state.running
            }
            if start { run() }
        }
    }

    private func run() {
        let check = check
        Task {
            let value = await check()
            let waiters = state.withLock { state in
                state.running = false
                state.latest = (value, .now)
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume(returning: value) }
        }
    }
}
