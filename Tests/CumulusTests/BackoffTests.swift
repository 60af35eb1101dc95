import Foundation
import Testing

@testable import Cumulus

@Suite("Backoff")
struct BackoffTests {
    @Test("delays double from the initial delay up to the maximum")
    func exponential() {
        var backoff = Backoff(
            policy: RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(10), jitter: 0, maximumAttempts: 6))
        let delays = (0..<6).map { _ in backoff.nextDelay(retryAfter: nil, random: 0.5) }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10)])
        #expect(!backoff.canRetry)
        backoff.reset()
        #expect(backoff.canRetry)
        #expect(backoff.nextDelay(retryAfter: nil, random: 0.5) == .seconds(1))
    }

    @Test("by default a failing sync makes eight attempts: the first try and seven retries")
    func defaultAttempts() {
        var backoff = Backoff(policy: RetryPolicy())
        var retries = 0
        while backoff.canRetry {
            _ = backoff.nextDelay(retryAfter: nil, random: 0.5)
            retries += 1
        }
        #expect(retries == 7)
    }

    @Test("the server's retry-after is a floor")
    func retryAfter() {
        var backoff = Backoff(policy: RetryPolicy(initialDelay: .seconds(1), jitter: 0))
        #expect(backoff.nextDelay(retryAfter: .seconds(30), random: 0) == .seconds(30))
        #expect(backoff.nextDelay(retryAfter: .milliseconds(10), random: 0) == .seconds(2))
    }

    @Test("jitter spreads the delay evenly around its base")
    func jitter() {
        let policy = RetryPolicy(initialDelay: .seconds(10), jitter: 0.2)
        var low = Backoff(policy: policy)
        var high = Backoff(policy: policy)
        var middle = Backoff(policy: policy)
        #expect(low.nextDelay(retryAfter: nil, random: 0) == .seconds(8))
        #expect(middle.nextDelay(retryAfter: nil, random: 0.5) == .seconds(10))
        let top = high.nextDelay(retryAfter: nil, random: 0.999_999)
        #expect(top > .milliseconds(11_999) && top <= .seconds(12))
    }
}
