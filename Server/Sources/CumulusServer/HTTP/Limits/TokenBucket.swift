/// One client's allowance of requests: at most ``RateLimit/burst`` at once,
/// refilled at ``RateLimit/perSecond``. Time is a duration since any fixed
/// origin, read from the limiter's clock, so tests move it by hand.
struct TokenBucket: Sendable {
    private(set) var tokens: Double
    private var updated: Duration

    /// A full bucket at `now`.
    init(limit: RateLimit, now: Duration) {
        tokens = Double(limit.burst)
        updated = now
    }

    /// Takes one token: `nil` when there was one, else how long until there is.
    mutating func take(_ limit: RateLimit, now: Duration) -> Duration? {
        refill(limit, now: now)
        guard tokens >= Self.whole else { return wait(limit) }
        tokens -= 1
        return nil
    }

    /// How long until a token is there without taking one: `nil` when there is one now.
    mutating func waitWithoutTaking(_ limit: RateLimit, now: Duration) -> Duration? {
        refill(limit, now: now)
        return tokens >= Self.whole ? nil : wait(limit)
    }

    /// Whether the bucket is full at `now`: forgetting it then loses nothing.
    func isFull(_ limit: RateLimit, now: Duration) -> Bool {
        tokens + limit.perSecond * Self.seconds(now - updated) >= Double(limit.burst)
    }

    private mutating func refill(_ limit: RateLimit, now: Duration) {
        // A clock that went back adds nothing.
        let elapsed = max(0, Self.seconds(now - updated))
        tokens = min(Double(limit.burst), tokens + elapsed * limit.perSecond)
        updated = max(updated, now)
    }

    /// A token, less what adding up refills in floating point may lose.
    private static let whole = 1 - 1e-9

    private func wait(_ limit: RateLimit) -> Duration {
        guard limit.perSecond > 0 else { return .seconds(86_400) }
        let seconds = min(max(0, 1 - tokens) / limit.perSecond, 86_400)
        return ServerTime.duration(seconds: seconds, rounding: .up)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
