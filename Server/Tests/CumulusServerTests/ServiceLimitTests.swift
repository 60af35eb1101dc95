import Cumulus
import CumulusServer
import Foundation
import Synchronization
import Testing

/// The documented limits that live in the core, on SQLite and PostgreSQL:
/// notification channels per user, and records per answer of `changes/zone`.
@Suite("Service limits")
struct ServiceLimitTests {
    @Test("opening a 17th channel closes the user's least recently used one only", arguments: TestStore.single)
    func channelsPerUser(_ store: TestStore) async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let now: @Sendable () -> Date = { clock.withLock { $0 } }
        try await withService(store, now: now) { service in
            let bobsToken = try await service.createNotificationToken(for: caller("_bob"))
            var tokens: [String] = []
            for _ in 0..<17 {
                clock.withLock { $0 += 1 }
                tokens.append(try await service.createNotificationToken(for: caller("_alice")))
            }
            await #expect {
                _ = try await service.pollNotifications(token: tokens[0], cursor: nil, timeout: .zero)
            } throws: { ($0 as? CloudError)?.code == .notFound }
            for token in tokens.dropFirst() + [bobsToken] {
                _ = try await service.pollNotifications(token: token, cursor: nil, timeout: .zero)
            }
        }
    }

    @Test(
        "the zones of one changes/zone share 200 records; the zone after the budget says moreComing",
        arguments: TestStore.single)
    func changesShareOneAnswer(_ store: TestStore) async throws {
        let now: @Sendable () -> Date = { Date() }
        try await withService(store, now: now) { service in
            let alice = caller("_alice")
            let (first, second) = (ZoneID(zoneName: "First"), ZoneID(zoneName: "Second"))
            for (zone, count) in [(first, 150), (second, 100)] {
                try await service.createZone(zone, as: alice)
                _ = try await service.modify(
                    (0..<count).map { RecordOperation(.create, note("n\($0)", zone: zone)) }, zone: zone, as: alice)
            }
            guard
                case .zoneChanges(let pages) = try await service.perform(
                    .fetchZoneChanges([ZoneChangesRequest(zoneID: first), ZoneChangesRequest(zoneID: second)]),
                    as: alice)
            else { throw CloudError(.internalError, reason: "not zone changes") }
            let firstPage = try pages[0].get()
            let secondPage = try pages[1].get()
            #expect(firstPage.records.count == 150 && !firstPage.moreComing)
            #expect(secondPage.records.count == 50 && secondPage.moreComing)
            let rest = try await service.zoneChanges(
                ZoneChangesRequest(zoneID: second, syncToken: secondPage.syncToken), as: alice
            ).get()
            #expect(rest.records.count == 50 && !rest.moreComing)
        }
    }

    private func withService(
        _ store: TestStore, now: @escaping @Sendable () -> Date, _ body: (CloudService) async throws -> Void
    ) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-limits-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try await store.makeServices(directory: directory, now: now)
        do {
            try await body(stores.services[0])
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }
}
