import Cumulus
import CumulusConformance
@_spi(Testing) import CumulusServer
import CumulusTesting
import Foundation
import Synchronization

/// The conformance backend of the record server: devices are
/// ``RemoteCloudDatabase``s talking HTTP to a ``RunningServer``.
struct RemoteBackend: ConformanceBackend {
    let server: RunningServer
    let network: NetworkFaults

    init(server: RunningServer) {
        self.server = server
        network = NetworkFaults()
    }

    func database(signedInAs user: String, scope: DatabaseScope) async throws -> any CloudDatabase {
        try await server.database(signedInAs: user, scope: scope, transport: FaultyTransport(faults: network))
    }

    var faults: (any ConformanceFaults)? { RemoteFaults(backend: self) }

    var assets: (any ConformanceAssetControls)? { RemoteAssetControls(server: server) }

    func setEmailAddress(_ address: String?, discoverable: Bool, forUser user: String) async throws {
        let recordName = try await server.user(user).recordName
        guard
            try await server.service.rules.setEmailAddress(
                address, discoverable: discoverable, forUser: recordName, container: server.container)
        else { throw CloudError(.notFound, reason: "the server has no user \(user)") }
    }

    func setName(_ name: UserNameComponents?, forUser user: String) async throws {
        let recordName = try await server.user(user).recordName
        try await server.service.setName(name, forUser: recordName, container: server.container)
    }
}

/// The conformance checks' faults, made real: network failures in the
/// client's transport, error answers in the server's HTTP layer, and the
/// rest through the server's own controls or another device.
struct RemoteFaults: ConformanceFaults {
    let backend: RemoteBackend
    var server: RunningServer { backend.server }

    func inject(_ fault: InjectedFault, count: Int) async throws {
        if fault.error.code == .networkFailure {
            backend.network.inject(fault, count: count)
        } else {
            precondition(!fault.afterApplying, "the server answers injected errors instead of applying")
            server.faults.inject(fault.error, count: count)
        }
    }

    func deleteZone(_ zoneID: ZoneID, ownedBy user: String) async throws {
        let name = try userName(user)
        let other = try await server.database(signedInAs: name)
        _ = try await other.modifyZones([.delete(zoneID)])
    }

    func expireChangeTokens(in zoneID: ZoneID, ownedBy user: String) async throws {
        try await server.service.expireChangeTokens(
            in: zoneID, ownedBy: user, container: server.container, environment: .development)
    }

    func signOut(_ database: any CloudDatabase) async throws {
        try remote(database).setCredentials(.user(apiToken: server.apiToken, webAuthToken: nil))
    }

    func signIn(_ database: any CloudDatabase, as user: String) async throws {
        let token = try await server.user(user).token
        try remote(database).setCredentials(.user(apiToken: server.apiToken, webAuthToken: token))
    }

    func setQuotaExceeded(_ exceeded: Bool, forUser user: String) async throws {
        try await server.service.setQuotaExceeded(
            exceeded, forUser: user, container: server.container, environment: .development)
    }

    private func userName(_ recordName: String) throws -> String {
        guard let name = server.userName(recordName: recordName) else {
            throw CloudError(.notFound, reason: "no test user has the record name \(recordName)")
        }
        return name
    }

    private func remote(_ database: any CloudDatabase) throws -> RemoteCloudDatabase {
        guard let remote = database as? RemoteCloudDatabase else {
            throw CloudError(.badRequest, reason: "not a remote database: \(type(of: database))")
        }
        return remote
    }
}

/// The asset checks' controls over the server: its clock, its size limit
/// and grace period, its collector, and the bytes its storage keeps.
struct RemoteAssetControls: ConformanceAssetControls {
    let server: RunningServer

    var assetSizeLimit: Int64 { server.service.rules.assetSettings.sizeLimit }
    var assetGracePeriod: Duration { server.service.rules.assetSettings.gracePeriod }

    func passTime(_ duration: Duration) async throws {
        let components = duration.components
        server.clock.advance(by: Double(components.seconds) + Double(components.attoseconds) / 1e18)
    }

    func collectAssets() async throws {
        try await server.service.collectAssets()
    }

    func storedAssetCount() async throws -> Int {
        try await server.service.storage.assetBytes.storedIDs().count
    }
}

/// Network failures waiting for the next database requests of a backend's devices.
final class NetworkFaults: Sendable {
    private let queue = Mutex<[InjectedFault]>([])

    func inject(_ fault: InjectedFault, count: Int) {
        queue.withLock { $0.append(contentsOf: repeatElement(fault, count: count)) }
    }

    func next() -> InjectedFault? {
        queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
    }
}

/// A transport whose database requests meet the injected network failures:
/// before the request leaves (nothing sent), or after its answer arrived
/// (the write applied, the answer lost). Notification polls never do.
struct FaultyTransport: CloudTransport {
    let faults: NetworkFaults
    let base = URLSessionTransport()

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        let isDatabaseRequest = request.url.path.hasPrefix("/database/") && !request.url.path.hasSuffix("tokens/create")
        guard isDatabaseRequest, let fault = faults.next() else { return try await base.send(request) }
        if fault.afterApplying { _ = try await base.send(request) }
        throw fault.error
    }
}
