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
}

extension ConformanceBackend {
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

/// The in-memory server as a conformance backend.
public struct InMemoryBackend: ConformanceBackend {
    /// The server the devices talk to.
    public let server: InMemoryCloudServer

    /// A backend on `server`, a fresh one by default.
    public init(server: InMemoryCloudServer = InMemoryCloudServer()) {
        self.server = server
    }

    /// A new handle signed in as `user`.
    public func database(signedInAs user: String, scope: DatabaseScope) async throws -> any CloudDatabase {
        server.database(scope: scope, signedInAs: user)
    }

    /// Faults injected into the in-memory server.
    public var faults: (any ConformanceFaults)? { InMemoryFaults(server: server) }

    /// Sets the address on the in-memory server.
    public func setEmailAddress(_ address: String?, discoverable: Bool, forUser user: String) async throws {
        try await server.setEmailAddress(address, discoverable: discoverable, forUser: user)
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
