import CumulusServer
import Foundation
import Testing

/// The stores the conformance and security tests run against.
enum TestStore: String, Sendable, CaseIterable, CustomTestStringConvertible {
    /// One server on a SQLite file.
    case sqlite
    /// One server on a PostgreSQL database.
    case postgres
    /// Two servers, each with its own connections, on one PostgreSQL database.
    case twoPostgresServers

    var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL where a cluster is configured (or required).
    static var available: [TestStore] {
        PostgresTestDatabase.isEnabled ? allCases : [.sqlite]
    }

    /// The stores with one server.
    static var single: [TestStore] {
        available.filter { $0 != .twoPostgresServers }
    }

    /// Opens the services of a fresh store (SQLite's file in `directory`).
    func makeServices(
        directory: URL, notificationIdleLimit: Duration = .seconds(600), assetSettings: AssetSettings = AssetSettings(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> TestServices {
        switch self {
        case .sqlite:
            return try await openServices(
                directory: directory, database: nil, idle: notificationIdleLimit, assets: assetSettings, now: now)
        case .postgres, .twoPostgresServers:
            let database = try await PostgresTestDatabase.create()
            do {
                return try await openServices(
                    directory: directory, database: database, idle: notificationIdleLimit, assets: assetSettings,
                    now: now)
            } catch {
                try? await PostgresTestDatabase.drop(database)
                throw error
            }
        }
    }

    /// Opens the same store again, after its services were closed.
    func reopenServices(_ old: TestServices, directory: URL) async throws -> TestServices {
        try await openServices(
            directory: directory, database: old.database, idle: .seconds(600), assets: AssetSettings(), now: { Date() })
    }

    private func openServices(
        directory: URL, database: PostgresURL?, idle: Duration, assets: AssetSettings,
        now: @escaping @Sendable () -> Date
    ) async throws -> TestServices {
        guard let database else {
            let storage = try await SQLiteStorage(
                path: directory.appendingPathComponent("cumulus.sqlite").path, logger: quietLogger)
            return TestServices(
                services: [
                    CloudService(storage: storage, notificationIdleLimit: idle, assetSettings: assets, now: now)
                ],
                database: nil)
        }
        var services: [CloudService] = []
        do {
            // One after the other: the first creates the schema.
            for _ in 0..<(self == .twoPostgresServers ? 2 : 1) {
                let storage = try await PostgresStorage(url: database, maximumConnections: 4, logger: quietLogger)
                let broadcaster = try await PostgresChangeBroadcaster(url: database, logger: quietLogger)
                services.append(
                    CloudService(
                        storage: storage, notificationIdleLimit: idle, broadcaster: broadcaster, assetSettings: assets,
                        now: now))
            }
        } catch {
            for service in services { try? await service.close() }
            throw error
        }
        return TestServices(services: services, database: database)
    }
}

/// The services of one test's store, and its PostgreSQL database to drop.
struct TestServices: Sendable {
    let services: [CloudService]
    let database: PostgresURL?

    func close() async {
        for service in services { try? await service.close() }
        if let database { try? await PostgresTestDatabase.drop(database) }
    }
}
