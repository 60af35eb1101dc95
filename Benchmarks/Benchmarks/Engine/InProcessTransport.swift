import Cumulus
import CumulusServerCore
import CumulusTesting
import Foundation

/// A `CloudTransport` that answers from an `InMemoryCloudServer` in this
/// process, so that `RemoteCloudDatabase` sends its real request bodies
/// without HTTP: each body is read with the server's own wire decoder
/// (`CloudRequest.decode` of `CumulusServerCore`), carried out by an
/// `InMemoryCloudDatabase` (the same core rules), and answered as the
/// server writes answers. It counts what each `records/modify` sends.
///
/// It serves the private database's record, zone, subscription and
/// `users/current` requests, which is what a manually synced engine asks
/// for; the others answer `BAD_REQUEST`.
struct InProcessTransport: CloudTransport {
    /// The device the requests reach the server as.
    let database: InMemoryCloudDatabase
    /// What the `records/modify` requests sent so far weighed.
    let modifications = ModifyCounter()

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        do {
            let operation = try Self.operation(of: request.url)
            let body = request.body ?? []
            let decoded = try CloudRequest.decode(operation, body: body)
            if case .modifyRecords(let operations, _, _) = decoded {
                modifications.add(bodyBytes: body.count, operations: operations.count)
            }
            let response = try await answer(decoded)
            return CloudHTTPResponse(status: 200, headers: Self.jsonHeaders, body: try response.encodedBody())
        } catch let error as CloudError {
            return CloudHTTPResponse(status: error.httpStatus, headers: Self.jsonHeaders, body: error.encodedBody())
        }
    }

    private static let jsonHeaders = ["Content-Type": "application/json; charset=utf-8"]

    /// The operation of a `/database/1/{container}/{environment}/private/{operation}` path.
    private static func operation(of url: URL) throws -> CloudOperation {
        let parts = url.path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "database", "1", container, environment, database, then the operation's one to three parts.
        guard parts.count > 6, parts[1] == "database", parts[5] == "private",
            let operation = CloudOperation(rawValue: parts[6...].joined(separator: "/"))
        else { throw CloudError(.badRequest, reason: "\(url.path) is not served in process") }
        return operation
    }

    /// Carries `request` out on the in-memory database, as the server's routes would.
    private func answer(_ request: CloudRequest) async throws -> CloudResponse {
        switch request {
        case .modifyRecords(let operations, let zoneID, let atomic):
            return .records(try await database.modifyRecords(operations, zoneID: zoneID, atomic: atomic))
        case .lookupRecords(let names, let zoneID, let desiredKeys):
            return .records(try await database.lookupRecords(names, zoneID: zoneID, desiredKeys: desiredKeys))
        case .fetchZoneChanges(let requests):
            return .zoneChanges(try await database.fetchZoneChanges(requests))
        case .fetchDatabaseChanges(let syncToken, let resultsLimit):
            return .databaseChanges(
                try await database.fetchDatabaseChanges(since: syncToken, resultsLimit: resultsLimit))
        case .listZones:
            return .zones(try await database.listZones())
        case .lookupZones(let zoneIDs):
            return .zoneResults(try await database.lookupZones(zoneIDs))
        case .modifyZones(let operations):
            return .zoneResults(try await database.modifyZones(operations))
        case .modifySubscriptions(let operations):
            return .subscriptionResults(try await database.modifySubscriptions(operations))
        case .listSubscriptions:
            return .subscriptions(try await database.listSubscriptions())
        case .lookupSubscriptions(let identifiers):
            return .subscriptionResults(try await database.lookupSubscriptions(identifiers))
        case .currentUser:
            return .user(try await database.currentUser())
        default:
            throw CloudError(.badRequest, reason: "\(request.operation.rawValue) is not served in process")
        }
    }
}

/// The `records/modify` requests a transport sent: how many, with how many
/// operations, and the bytes of their bodies.
final class ModifyCounter: @unchecked Sendable {
    // Safety: `totals` is read and written only while `lock` is held.
    private let lock = NSLock()
    private var totals = Totals()

    /// A reading of the counter; subtract two to get what was sent between them.
    struct Totals: Sendable {
        /// `records/modify` requests.
        var requests = 0
        /// Record operations in them.
        var operations = 0
        /// Bytes of their bodies, as sent.
        var bodyBytes = 0

        static func - (later: Totals, earlier: Totals) -> Totals {
            Totals(
                requests: later.requests - earlier.requests, operations: later.operations - earlier.operations,
                bodyBytes: later.bodyBytes - earlier.bodyBytes)
        }
    }

    /// Counts one request.
    func add(bodyBytes: Int, operations: Int) {
        lock.lock()
        defer { lock.unlock() }
        totals.requests += 1
        totals.operations += operations
        totals.bodyBytes += bodyBytes
    }

    /// What was counted so far.
    var reading: Totals {
        lock.lock()
        defer { lock.unlock() }
        return totals
    }
}
