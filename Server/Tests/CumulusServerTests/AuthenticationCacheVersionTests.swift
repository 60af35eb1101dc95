import Foundation
import Synchronization
import Testing

@testable import CumulusServer

/// The cache's side of revocation: what it holds is dropped when the
/// credentials version moves on, a finding made under an older version is
/// never kept, and a credential that expires is trusted no longer.
@Suite("Authentication cache and credential versions")
struct AuthenticationCacheVersionTests {
    @Test("a new version drops every entry; the same one keeps them")
    func newVersionDrops() {
        let cache = AuthenticationCache(size: 10, lifetime: .seconds(60))
        let first = CredentialsVersion(local: 0, stored: 0)
        cache.synchronize(with: first)
        cache.rememberUser("_a", webAuthToken: "ta", container: "c", foundUnder: first)
        cache.rememberValidAPIToken("api", container: "c", foundUnder: first)
        cache.synchronize(with: first)
        #expect(cache.user(webAuthToken: "ta", container: "c") == "_a")
        cache.synchronize(with: CredentialsVersion(local: 0, stored: 1))
        #expect(cache.user(webAuthToken: "ta", container: "c") == nil)
        #expect(!cache.isValidAPIToken("api", container: "c"))
        #expect(cache.count == 0)
    }

    @Test("a finding made before the version moved on is not kept")
    func staleFindingRefused() {
        let cache = AuthenticationCache(size: 10, lifetime: .seconds(60))
        let before = CredentialsVersion(local: 3, stored: 0)
        cache.synchronize(with: before)
        // Another request saw the revocation while this one read the store.
        cache.synchronize(with: CredentialsVersion(local: 4, stored: 0))
        cache.rememberUser("_a", webAuthToken: "ta", container: "c", foundUnder: before)
        #expect(cache.user(webAuthToken: "ta", container: "c") == nil)
    }

    @Test("a credential is trusted until it expires when that is sooner than the lifetime")
    func expiryBoundsTrust() {
        let now = Mutex(ContinuousClock.now)
        let cache = AuthenticationCache(size: 10, lifetime: .seconds(60), now: { now.withLock { $0 } })
        cache.rememberUser("_a", webAuthToken: "ta", container: "c", for: .seconds(5))
        cache.rememberUser("_b", webAuthToken: "tb", container: "c", for: .seconds(-1))
        #expect(cache.user(webAuthToken: "ta", container: "c") == "_a")
        #expect(cache.user(webAuthToken: "tb", container: "c") == nil)
        now.withLock { $0 += .seconds(5) }
        #expect(cache.user(webAuthToken: "ta", container: "c") == nil)
    }
}
