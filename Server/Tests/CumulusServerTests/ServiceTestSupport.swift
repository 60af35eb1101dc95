import Cumulus
import CumulusServer
import Foundation
import Testing

/// A service on a fresh SQLite file in a temporary directory.
struct ServiceFixture {
    let directory: URL
    var path: String { directory.appendingPathComponent("cumulus.sqlite").path }
    var service: CloudService

    static func make(
        recordSizeLimit: Int = RecordEncoder.defaultSizeLimit, notificationIdleLimit: Duration = .seconds(600)
    ) async throws -> ServiceFixture {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-service-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("cumulus.sqlite").path
        return ServiceFixture(
            directory: directory,
            service: try await CloudService.open(
                path: path, recordSizeLimit: recordSizeLimit, notificationIdleLimit: notificationIdleLimit,
                logger: quietLogger))
    }

    /// Closes the service and opens the same file again.
    mutating func reopen() async throws {
        try await service.close()
        service = try await CloudService.open(path: path, logger: quietLogger)
    }

    func tearDown() async throws {
        try? await service.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

func caller(
    _ user: String?, scope: DatabaseScope = .private, container: String = "iCloud.test",
    environment: CloudEnvironment = .development
) -> Caller {
    Caller(container: container, environment: environment, scope: scope, user: user)
}

let notesZone = ZoneID(zoneName: "Notes")

func note(_ name: String, title: String = "t", zone: ZoneID = notesZone, tag: String? = nil) -> Record {
    Record(
        recordType: "Note", recordName: name, zoneID: zone, fields: ["title": .string(title)],
        metadata: tag.map { RecordMetadata(changeTag: $0, zoneID: zone) })
}

extension CloudService {
    func modify(
        _ operations: [RecordOperation], zone: ZoneID = notesZone, atomic: Bool = false, as who: Caller
    ) async throws -> [RecordResult] {
        guard
            case .records(let results) = try await perform(
                .modifyRecords(operations: operations, zoneID: zone, atomic: atomic), as: who)
        else { throw CloudError(.internalError, reason: "not records") }
        return results
    }

    func lookup(_ names: [String], zone: ZoneID = notesZone, as who: Caller) async throws -> [RecordResult] {
        guard
            case .records(let results) = try await perform(
                .lookupRecords(recordNames: names, zoneID: zone, desiredKeys: nil), as: who)
        else { throw CloudError(.internalError, reason: "not records") }
        return results
    }

    func createZone(_ zone: ZoneID = notesZone, as who: Caller) async throws {
        _ = try await perform(.modifyZones([.create(zone)]), as: who)
    }

    func zoneChanges(_ request: ZoneChangesRequest, as who: Caller) async throws -> Result<ZoneChanges, CloudError> {
        guard case .zoneChanges(let results) = try await perform(.fetchZoneChanges([request]), as: who) else {
            throw CloudError(.internalError, reason: "not zone changes")
        }
        return results[0]
    }

    func databaseChanges(since token: SyncToken?, limit: Int? = nil, as who: Caller) async throws -> DatabaseChanges {
        guard
            case .databaseChanges(let changes) = try await perform(
                .fetchDatabaseChanges(syncToken: token, resultsLimit: limit), as: who)
        else { throw CloudError(.internalError, reason: "not database changes") }
        return changes
    }
}
