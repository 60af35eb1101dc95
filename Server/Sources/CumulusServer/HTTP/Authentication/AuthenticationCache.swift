import Crypto
import Foundation
import Synchronization

/// What the HTTP layer learned from the store about credentials: API
/// tokens found valid, the users of web auth tokens, and the public keys
/// of server-to-server key IDs, so that a request does not cost two read
/// transactions before its own.
///
/// Only what the store (or, for an identity token, its issuer's
/// signature) confirmed is kept, so wrong tokens cannot fill it;
/// it holds at most its size (the least recently used entry goes first),
/// and each entry for its lifetime or until the credential expires, if
/// sooner. Entries are found by the SHA-256 of the credential, never the
/// credential itself.
///
/// Everything is dropped when the service's ``CredentialsVersion`` moves
/// on (a token revoked, a user or key removed, an API token rotated, here
/// or through another server or the `cumulus` command), and a finding made
/// under an older version is not kept. The lifetime bounds how long a
/// server that cannot hear of changes (its PostgreSQL listening connection
/// broken without its knowing) goes on trusting what it found.
public final class AuthenticationCache: Sendable {
    /// What a credential was found to be.
    enum Finding: Sendable {
        case validAPIToken
        case user(String)
        case serverKey(P256.Signing.PublicKey)
        /// The user an identity token signs in as.
        case identity(CachedIdentity)
    }

    private struct Entry {
        var container: String
        var finding: Finding
        var expires: ContinuousClock.Instant
    }

    enum Kind: UInt8 {
        case apiToken = 1
        case webAuthToken = 2
        case serverKey = 3
        case identityToken = 4
    }

    private let entries: Mutex<LRUCache<SHA256Digest, Entry>>
    /// The credentials version the entries were found under.
    private let version = Mutex<CredentialsVersion?>(nil)
    private let lifetime: Duration
    private let now: @Sendable () -> ContinuousClock.Instant

    /// Creates a cache of at most `size` entries (none when `0`), each
    /// trusted for `lifetime`.
    public convenience init(size: Int, lifetime: Duration) {
        self.init(size: size, lifetime: lifetime, now: { ContinuousClock.now })
    }

    init(size: Int, lifetime: Duration, now: @escaping @Sendable () -> ContinuousClock.Instant) {
        entries = Mutex(LRUCache(capacity: size))
        self.lifetime = lifetime
        self.now = now
    }

    /// How many credentials are held.
    public var count: Int {
        entries.withLock { $0.count }
    }

    /// Forgets everything: for when a token or key is revoked or a user removed.
    public func invalidateAll() {
        entries.withLock { $0.removeAll() }
    }

    /// Forgets everything when `current` is not the version the entries
    /// were found under, and takes it as theirs.
    func synchronize(with current: CredentialsVersion) {
        version.withLock { seen in
            guard seen != current else { return }
            seen = current
            entries.withLock { $0.removeAll() }
        }
    }

    /// Forgets every credential of one container.
    public func invalidate(container: String) {
        entries.withLock { cache in
            cache.removeAll { $0.container.utf8.elementsEqual(container.utf8) }
        }
    }

    // MARK: Lookups

    func isValidAPIToken(_ token: String, container: String) -> Bool {
        if case .validAPIToken = finding(.apiToken, container: container, credential: token) { return true }
        return false
    }

    func rememberValidAPIToken(
        _ token: String, container: String, for trust: Duration? = nil, foundUnder found: CredentialsVersion? = nil
    ) {
        remember(.validAPIToken, kind: .apiToken, container: container, credential: token, for: trust, found)
    }

    func user(webAuthToken: String, container: String) -> String? {
        if case .user(let name) = finding(.webAuthToken, container: container, credential: webAuthToken) {
            return name
        }
        return nil
    }

    func rememberUser(
        _ user: String, webAuthToken: String, container: String, for trust: Duration? = nil,
        foundUnder found: CredentialsVersion? = nil
    ) {
        remember(.user(user), kind: .webAuthToken, container: container, credential: webAuthToken, for: trust, found)
    }

    func serverKey(id: String, container: String) -> P256.Signing.PublicKey? {
        if case .serverKey(let key) = finding(.serverKey, container: container, credential: id) { return key }
        return nil
    }

    func rememberServerKey(
        _ key: P256.Signing.PublicKey, id: String, container: String, foundUnder found: CredentialsVersion? = nil
    ) {
        remember(.serverKey(key), kind: .serverKey, container: container, credential: id, for: nil, found)
    }

    func finding(_ kind: Kind, container: String, credential: String) -> Finding? {
        let key = Self.key(kind, container: container, credential: credential)
        let now = now()
        return entries.withLock { cache in
            guard let entry = cache.value(for: key) else { return nil }
            guard entry.expires > now else {
                cache.removeValue(for: key)
                return nil
            }
            return entry.finding
        }
    }

    /// Keeps a finding for the lifetime, or `trust` if shorter, unless the
    /// version moved on since it was `found`.
    func remember(
        _ finding: Finding, kind: Kind, container: String, credential: String, for trust: Duration?,
        _ found: CredentialsVersion?
    ) {
        let span = min(lifetime, trust ?? lifetime)
        guard span > .zero else { return }
        let key = Self.key(kind, container: container, credential: credential)
        let entry = Entry(container: container, finding: finding, expires: now() + span)
        version.withLock { seen in
            if let found, seen != found { return }
            entries.withLock { $0.insert(entry, for: key) }
        }
    }

    /// The SHA-256 of kind, container and credential; names hold no U+0000,
    /// so the separators keep two pairs from running together.
    private static func key(_ kind: Kind, container: String, credential: String) -> SHA256Digest {
        var hash = SHA256()
        hash.update(data: [kind.rawValue, 0])
        hash.update(data: Data(container.utf8))
        hash.update(data: [0])
        hash.update(data: Data(credential.utf8))
        return hash.finalize()
    }
}
