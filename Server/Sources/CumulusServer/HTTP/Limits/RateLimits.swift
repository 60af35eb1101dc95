import Foundation
import NIOCore

/// A token bucket's size and refill: up to ``burst`` requests at once, then
/// ``perSecond`` on average.
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// How many tokens come back each second.
    public var perSecond: Double
    /// How many tokens the bucket holds: the most requests at once.
    public var burst: Int

    /// Creates a limit; a burst under 1 counts as 1, a negative or
    /// non-finite rate as 0 (no refill).
    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond.isFinite ? max(0, perSecond) : 0
        self.burst = max(1, burst)
    }

    /// A limit written `RATE:BURST` (`50:1000`: 50 a second, 1000 at once);
    /// `nil` when the text is not one.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let rate = Double(parts[0]), rate.isFinite, rate >= 0,
            let burst = Int(parts[1]), burst >= 1
        else { return nil }
        self.init(perSecond: rate, burst: burst)
    }

    /// The limit as `RATE:BURST`.
    public var description: String {
        let rate = perSecond == perSecond.rounded() && perSecond < 1e15 ? String(Int64(perSecond)) : "\(perSecond)"
        return "\(rate):\(burst)"
    }
}

/// The request limits of ``CumulusHTTPServer``, each a token bucket per
/// client; `nil` turns one off. A request over a limit is answered 429
/// `THROTTLED` with `retryAfter` (seconds until a token is there) and a
/// `Retry-After` header.
///
/// The defaults are far above what a sync engine sends, so that only a
/// runaway or hostile client meets them.
public struct RateLimits: Sendable {
    /// Every request from one client address, before authentication.
    public var perAddress: RateLimit?
    /// The database requests of one signed-in user of one container, after
    /// authentication (anonymous readers and server-to-server keys meet the
    /// address limit only).
    public var perUser: RateLimit?
    /// Failed authentications (`AUTHENTICATION_FAILED`) from one address.
    /// While its bucket is empty, a request from that address whose
    /// credentials the server has not found valid lately (its
    /// ``AuthenticationCache``) is answered `THROTTLED` before they are
    /// checked. Credentials it knows valid are served, and requests that
    /// carry none are not affected: many users may share an address.
    public var failedAuthentications: RateLimit?
    /// The addresses of reverse proxies whose `X-Forwarded-For` is
    /// believed: a request from one of them is counted against the last
    /// address of that header (the one the proxy added). Empty by default:
    /// the header is ignored, since any client can send it.
    public var trustedProxies: [String]
    /// The most clients each limit remembers; the least recently seen is
    /// forgotten (and starts again with a full bucket) to make room.
    public var trackedClients: Int
    /// A monotonic clock, as time since any fixed origin: the system's by
    /// default, a hand-moved one in tests.
    public var uptime: @Sendable () -> Duration

    /// Creates the limits, by default generous ones.
    public init(
        perAddress: RateLimit? = RateLimit(perSecond: 100, burst: 2000),
        perUser: RateLimit? = RateLimit(perSecond: 50, burst: 1000),
        failedAuthentications: RateLimit? = RateLimit(perSecond: 0.1, burst: 20),
        trustedProxies: [String] = [], trackedClients: Int = 100_000,
        uptime: @escaping @Sendable () -> Duration = RateLimits.systemUptime()
    ) {
        self.perAddress = perAddress
        self.perUser = perUser
        self.failedAuthentications = failedAuthentications
        self.trustedProxies = trustedProxies
        self.trackedClients = trackedClients
        self.uptime = uptime
    }

    /// No limit at all.
    public static var unlimited: RateLimits {
        RateLimits(perAddress: nil, perUser: nil, failedAuthentications: nil)
    }

    /// Time since now on the system's monotonic clock.
    public static func systemUptime() -> @Sendable () -> Duration {
        let origin = ContinuousClock.now
        return { origin.duration(to: .now) }
    }

    /// The trusted proxies in the form the server compares them.
    ///
    /// - Throws: ``RateLimitsError`` naming the first one that is not an IP address.
    public func normalizedTrustedProxies() throws(RateLimitsError) -> Set<String> {
        var normalized: Set<String> = []
        for proxy in trustedProxies {
            guard let address = try? SocketAddress(ipAddress: proxy, port: 0), let text = address.ipAddress else {
                throw RateLimitsError(message: "The trusted proxy '\(proxy)' is not an IP address.")
            }
            normalized.insert(text)
        }
        return normalized
    }
}

/// A request limit that cannot be used, e.g. a trusted proxy that is not an address.
public struct RateLimitsError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The message.
    public var description: String { message }
}
