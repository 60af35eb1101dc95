import Cumulus
import CumulusTesting

/// A backend the ``CloudDatabaseConformance`` checks run against: the
/// in-memory server, or the HTTP client against the Cumulus record server.
///
/// Each check gets a fresh backend, and names its users `alice` and `bob`.
public protocol ConformanceBackend: Sendable {
    /// A new device signed in as `user` on the database of `scope`.
    func database(signedInAs user: String, scope: DatabaseScope) async throws -> any CloudDatabase

    /// The faults the backend can inject, or `nil` when it cannot: the fault
    /// checks then pass without checking anything.
    var faults: (any ConformanceFaults)? { get }

    /// Gives `user` (a name as ``database(signedInAs:scope:)`` takes it) an
    /// email address other users find them by, or none; `discoverable:
    /// false` keeps it out of lookups.
    func setEmailAddress(_ address: String?, discoverable: Bool, forUser user: String) async throws

    /// Gives `user` the name other users see (or none), as an identity
    /// token's name claims or the operator do. By default it throws
    /// `UNSUPPORTED`, and the checks of names fail.
    func setName(_ name: UserNameComponents?, forUser user: String) async throws

    /// The asset controls of the backend, or `nil` when it has none: the
    /// asset checks then leave out what needs them (expiry, the size limit,
    /// collection). `nil` by default.
    var assets: (any ConformanceAssetControls)? { get }
}

extension ConformanceBackend {
    /// No asset controls.
    public var assets: (any ConformanceAssetControls)? { nil }

    /// Throws `UNSUPPORTED`: a backend that cannot name its users.
    public func setName(_ name: UserNameComponents?, forUser user: String) async throws {
        throw CloudError(.unsupported, reason: "\(Self.self) cannot name its users")
    }

    /// A new device signed in as `user` on the private database.
    public func database(signedInAs user: String) async throws -> any CloudDatabase {
        try await database(signedInAs: user, scope: .private)
    }
}

/// Fault injection as the conformance checks need it.
public protocol ConformanceFaults: Sendable {
    /// The next `count` requests from any device fail with `fault`.
    func inject(_ fault: InjectedFault, count: Int) async throws
    /// Another device deletes a zone of `user`'s private database.
    func deleteZone(_ zoneID: ZoneID, ownedBy user: String) async throws
    /// Every sync token of the zone of `user`'s private database expires.
    func expireChangeTokens(in zoneID: ZoneID, ownedBy user: String) async throws
    /// The device signs out.
    func signOut(_ database: any CloudDatabase) async throws
    /// The device switches to `user`.
    func signIn(_ database: any CloudDatabase, as user: String) async throws
    /// `user`'s storage is full (or no longer).
    func setQuotaExceeded(_ exceeded: Bool, forUser user: String) async throws
}

/// What the asset checks need of a backend beyond the protocol.
public protocol ConformanceAssetControls: Sendable {
    /// The largest asset the server accepts, in bytes: the checks upload
    /// one of that size and one byte more, so keep it small (the in-memory
    /// backend's is 1 MiB).
    var assetSizeLimit: Int64 { get }
    /// How long a receipt works and an asset no record holds is kept
    /// (`AssetSettings.gracePeriod` of the server's `RecordService`).
    var assetGracePeriod: Duration { get }
    /// Moves the server's clock forward by `duration`: receipts, upload
    /// and download URLs and unheld assets age (the service's `now`).
    func passTime(_ duration: Duration) async throws
    /// Runs the server's collector (`RecordService.collectAssets()`).
    func collectAssets() async throws
    /// How many assets the server keeps bytes of.
    func storedAssetCount() async throws -> Int
}

/// The in-memory server as a conformance backend.
public struct InMemoryBackend: ConformanceBackend {
    /// The server the devices talk to.
    public let server: InMemoryCloudServer

    /// A backend on `server`, by default a fresh one whose largest asset is 1 MiB.
    public init(server: InMemoryCloudServer = InMemoryCloudServer(assetSizeLimit: 1 << 20)) {
        self.server = server
    }

    /// A new handle signed in as `user`.
    public func database(signedInAs user: String, scope: DatabaseScope) async throws -> any CloudDatabase {
        server.database(scope: scope, signedInAs: user)
    }

    /// Faults injected into the in-memory server.
    public var faults: (any ConformanceFaults)? { InMemoryFaults(server: server) }

    /// The in-memory server's asset controls.
    public var assets: (any ConformanceAssetControls)? { InMemoryAssetControls(server: server) }

    /// Sets the address on the in-memory server.
    public func setEmailAddress(_ address: String?, discoverable: Bool, forUser user: String) async throws {
        try await server.setEmailAddress(address, discoverable: discoverable, forUser: user)
    }

    /// Sets the name on the in-memory server.
    public func setName(_ name: UserNameComponents?, forUser user: String) async throws {
        try await server.setName(name, forUser: user)
    }
}

struct InMemoryFaults: ConformanceFaults {
    let server: InMemoryCloudServer

    func inject(_ fault: InjectedFault, count: Int) async throws {
        server.inject(fault, count: count)
    }

    func deleteZone(_ zoneID: ZoneID, ownedBy user: String) async throws {
        await server.deleteZone(zoneID, ownedBy: user)
    }

    func expireChangeTokens(in zoneID: ZoneID, ownedBy user: String) async throws {
        await server.expireChangeTokens(in: zoneID, ownedBy: user)
    }

    func signOut(_ database: any CloudDatabase) async throws {
        try handle(database).signOut()
    }

    func signIn(_ database: any CloudDatabase, as user: String) async throws {
        try handle(database).signIn(as: user)
    }

    func setQuotaExceeded(_ exceeded: Bool, forUser user: String) async throws {
        server.setQuotaExceeded(exceeded, forUser: user)
    }

    private func handle(_ database: any CloudDatabase) throws -> InMemoryCloudDatabase {
        guard let handle = database as? InMemoryCloudDatabase else {
            throw CloudError(.badRequest, reason: "not an in-memory database: \(type(of: database))")
        }
        return handle
    }
}

struct InMemoryAssetControls: ConformanceAssetControls {
    let server: InMemoryCloudServer

    var assetSizeLimit: Int64 { server.assetSizeLimit }
    var assetGracePeriod: Duration { server.assetGracePeriod }

    func passTime(_ duration: Duration) async throws { server.skipTime(duration) }

    func collectAssets() async throws { await server.collectAssets() }

    func storedAssetCount() async throws -> Int { await server.storedAssetCount() }
}
