import Cumulus
import Foundation
import Synchronization
import Testing

@testable import CumulusServerCore
@testable import CumulusTesting

/// The bound on notification channels per user, a rule of the core, over
/// the in-memory storage (the record server's tests run it on SQLite and
/// PostgreSQL).
@Suite("Notification channels per user, in memory")
struct ChannelLimitTests {
    @Test("opening one more channel than the limit closes the user's least recently used one only")
    func oldestChannelCloses() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let service = RecordService(
            storage: InMemoryStorage(), now: { clock.withLock { $0 } }, publish: { _ in })
        let alice = Caller(container: "iCloud.test", environment: .development, scope: .private, user: "_alice")
        let bob = Caller(container: "iCloud.test", environment: .development, scope: .private, user: "_bob")
        let bobsToken = try await service.openChannel(for: bob)
        var tokens: [String] = []
        for _ in 0...ServerLimits.channelsPerUser {
            clock.withLock { $0 += 1 }
            tokens.append(try await service.openChannel(for: alice))
        }
        await #expect {
            _ = try await service.pollChannel(token: tokens[0], cursor: nil, timeout: .zero)
        } throws: { ($0 as? CloudError)?.code == .notFound }
        for token in tokens.dropFirst() + [bobsToken] {
            _ = try await service.pollChannel(token: token, cursor: nil, timeout: .zero)
        }
    }
}
