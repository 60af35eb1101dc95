import Synchronization

/// Token buckets by client, at most ``RateLimits/trackedClients`` of them:
/// the least recently seen client is forgotten to make room, which only
/// ever gives it a full bucket again.
final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    let limit: RateLimit
    private let uptime: @Sendable () -> Duration
    private let buckets: Mutex<LRUCache<Key, TokenBucket>>

    init(limit: RateLimit, capacity: Int, uptime: @escaping @Sendable () -> Duration) {
        self.limit = limit
        self.uptime = uptime
        buckets = Mutex(LRUCache(capacity: max(1, capacity)))
    }

    /// Takes a token of `key`'s bucket: `nil` when there was one, else how
    /// long until there is.
    func take(_ key: Key) -> Duration? {
        let now = uptime()
        return buckets.withLock { buckets in
            var bucket = buckets.value(for: key) ?? TokenBucket(limit: limit, now: now)
            let wait = bucket.take(limit, now: now)
            buckets.insert(bucket, for: key)
            return wait
        }
    }

    /// How long until `key`'s bucket has a token, without taking one: `nil`
    /// when it has one now. A client never seen has a full bucket.
    func wait(_ key: Key) -> Duration? {
        let now = uptime()
        return buckets.withLock { buckets in
            guard var bucket = buckets.value(for: key) else { return nil }
            let wait = bucket.waitWithoutTaking(limit, now: now)
            if bucket.isFull(limit, now: now) {
                // Full again: forgetting it loses nothing and frees the room.
                buckets.removeValue(for: key)
            } else {
                buckets.insert(bucket, for: key)
            }
            return wait
        }
    }

    /// How many clients are remembered, for tests.
    var trackedCount: Int {
        buckets.withLock { $0.count }
    }
}
