import CloudCodable
import CloudProtocol
import Crypto
import Foundation
import Logging

/// An issuer configured for a container, as one server last read it.
struct ConfiguredIssuer: Sendable {
    /// The issuer's row.
    let stored: StoredIdentityIssuer
    /// Its stored key set, read; `nil` for a key set fetched from a URL, or
    /// a stored one that can no longer be read.
    let storedKeys: IdentityKeySet?
    /// The SHA-256 of the row: another row is another configuration.
    let digest: SHA256Digest

    /// What a token verified with `keys` under this configuration is
    /// trusted as: a token in the authentication cache is used only while
    /// its issuer's configuration and keys are still this.
    func trust(keys: IdentityKeySet) -> SHA256Digest {
        var hash = SHA256()
        hash.update(data: Data(digest))
        hash.update(data: Data(keys.digest))
        return hash.finalize()
    }
}

/// Each server's view of the identity issuers: every container's issuers,
/// read from storage again after ``IdentityTokenSettings/issuerRefreshInterval``,
/// and the key sets fetched from their URLs, kept and refreshed.
///
/// Concurrent requests that need the same read or fetch wait for one.
actor IdentityIssuerDirectory {
    private struct ContainerIssuers: Sendable {
        var issuers: [ExactName: ConfiguredIssuer]
        var loaded: ContinuousClock.Instant
    }

    /// A key set fetched from a URL: the last good one is kept when a fetch fails.
    private struct RemoteKeySet {
        var keys: IdentityKeySet?
        var fetched: ContinuousClock.Instant?
        var attempted: ContinuousClock.Instant?
    }

    private let service: any CloudServing
    private let settings: IdentityTokenSettings
    private let fetcher: KeySetFetcher
    private let logger: Logger
    private var containers: [ExactName: ContainerIssuers] = [:]
    private var loading: [ExactName: Task<ContainerIssuers, any Error>] = [:]
    private var remote: [ExactName: RemoteKeySet] = [:]
    private var fetching: [ExactName: Task<Void, Never>] = [:]
    /// The credentials version the issuers were read under.
    private var version: CredentialsVersion?

    init(service: any CloudServing, settings: IdentityTokenSettings, logger: Logger) {
        self.service = service
        self.settings = settings
        self.fetcher = KeySetFetcher(timeout: settings.keySetFetchTimeout, maximumSize: settings.maximumKeySetSize)
        self.logger = logger
    }

    /// Forgets the issuers read when `current` is not the credentials
    /// version they were read under: an issuer removed here, through
    /// another server or by the `cumulus` command is no longer trusted by
    /// the next request, whatever the refresh interval.
    func synchronize(with current: CredentialsVersion) {
        guard version != current else { return }
        version = current
        containers.removeAll()
        loading.removeAll()
    }

    /// The container's issuer named exactly `name`, or `nil`.
    func issuer(_ name: String, container: String) async throws -> ConfiguredIssuer? {
        try await issuers(of: container).issuers[ExactName(name)]
    }

    /// Whether the container signs users in with identity tokens: it has an issuer.
    func hasIssuers(container: String) async throws -> Bool {
        try await !issuers(of: container).issuers.isEmpty
    }

    /// What a cached token of `issuer` is trusted as now (see
    /// ``ConfiguredIssuer/trust(keys:)``), or `nil` when the issuer is gone
    /// or has no keys; it never fetches.
    func currentTrust(issuer name: String, container: String) async throws -> SHA256Digest? {
        guard let issuer = try await issuer(name, container: container) else { return nil }
        if let keys = issuer.storedKeys { return issuer.trust(keys: keys) }
        guard let url = issuer.stored.keySetURL, let keys = remote[ExactName(url)]?.keys else { return nil }
        return issuer.trust(keys: keys)
    }

    /// The issuer's keys: the stored set, or the set from its URL, fetched
    /// when there is none yet, when it is older than the refresh interval,
    /// or when it lacks `keyID`, at most once per minimum interval.
    ///
    /// - Throws: ``HTTPFailure``: `AUTHENTICATION_FAILED` for a stored set
    ///   that cannot be read, `TRY_AGAIN_LATER` when the URL's set was never
    ///   fetched and cannot be now.
    func keys(of issuer: ConfiguredIssuer, keyID: String?) async throws -> IdentityKeySet {
        if let keys = issuer.storedKeys { return keys }
        guard let url = issuer.stored.keySetURL else {
            throw HTTPFailure(.authenticationFailed, "The issuer's stored key set cannot be read on this server.")
        }
        let key = ExactName(url)
        if let running = fetching[key] {
            await running.value
        } else if shouldFetch(key, keyID: keyID) {
            let task = Task { await self.fetch(url) }
            fetching[key] = task
            await task.value
            fetching[key] = nil
        }
        guard let keys = remote[key]?.keys else {
            let wait = settings.minimumKeySetFetchInterval
            throw HTTPFailure(
                CloudError(
                    .tryAgainLater, reason: "The identity token's issuer's keys cannot be fetched at the moment.",
                    retryAfter: max(wait, .seconds(1))))
        }
        return keys
    }

    // MARK: Issuers

    private func issuers(of container: String) async throws -> ContainerIssuers {
        let key = ExactName(container)
        let previous = containers[key]
        if let previous, ContinuousClock.now - previous.loaded < settings.issuerRefreshInterval { return previous }
        if let running = loading[key] { return try await running.value }
        let task = Task { try await self.load(container, previous: previous) }
        loading[key] = task
        let under = version
        let loaded: ContainerIssuers
        do {
            loaded = try await task.value
        } catch {
            if loading[key] == task { loading[key] = nil }
            throw error
        }
        if loading[key] == task { loading[key] = nil }
        // A load that began before the version moved on may hold an issuer since removed.
        if version == under { containers[key] = loaded }
        return loaded
    }

    private func load(_ container: String, previous: ContainerIssuers?) async throws -> ContainerIssuers {
        let started = ContinuousClock.now
        var issuers: [ExactName: ConfiguredIssuer] = [:]
        for row in try await service.identityIssuers(container: container) {
            let name = ExactName(row.issuer)
            let digest = Self.digest(of: row)
            if let old = previous?.issuers[name], old.digest == digest {
                issuers[name] = old
                continue
            }
            var keys: IdentityKeySet?
            if let document = row.keySet {
                do {
                    keys = try await IdentityKeySet.parse(document)
                } catch {
                    logger.error(
                        "An identity issuer's stored key set cannot be read",
                        metadata: ["container": "\(container)", "issuer": "\(row.issuer)", "error": "\(error)"])
                }
            }
            issuers[name] = ConfiguredIssuer(stored: row, storedKeys: keys, digest: digest)
        }
        return ContainerIssuers(issuers: issuers, loaded: started)
    }

    /// The SHA-256 of every field of the row, each with its length first.
    private static func digest(of row: StoredIdentityIssuer) -> SHA256Digest {
        var hash = SHA256()
        func add(_ text: String?) {
            guard let text else {
                hash.update(data: [0])
                return
            }
            hash.update(data: [1])
            withUnsafeBytes(of: UInt64(text.utf8.count).bigEndian) { hash.update(bufferPointer: $0) }
            hash.update(data: Data(text.utf8))
        }
        add(row.issuer)
        add(String(row.audiences.count))
        for audience in row.audiences { add(audience) }
        add(row.keySetURL)
        add(row.keySet)
        return hash.finalize()
    }

    // MARK: Key sets from URLs

    private func shouldFetch(_ key: ExactName, keyID: String?) -> Bool {
        let entry = remote[key] ?? RemoteKeySet()
        let now = ContinuousClock.now
        if let attempted = entry.attempted, now - attempted < settings.minimumKeySetFetchInterval { return false }
        guard let keys = entry.keys, let fetched = entry.fetched else { return true }
        if now - fetched >= settings.keySetRefreshInterval { return true }
        if let keyID, !keys.keyIDs.contains(ExactName(keyID)) { return true }
        return false
    }

    private func fetch(_ url: String) async {
        let key = ExactName(url)
        remote[key, default: RemoteKeySet()].attempted = ContinuousClock.now
        do {
            let keys = try await IdentityKeySet.parse(try await fetcher.fetch(url))
            remote[key, default: RemoteKeySet()].keys = keys
            remote[key, default: RemoteKeySet()].fetched = ContinuousClock.now
        } catch {
            let kept = remote[key]?.keys == nil ? "none" : "the last good one"
            logger.warning(
                "An identity issuer's key set cannot be fetched; keeping \(kept)",
                metadata: ["url": "\(url)", "error": "\(error)"])
        }
    }
}
