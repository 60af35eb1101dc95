import Cumulus
import CumulusConformance
import CumulusServer
import Foundation
import Testing

/// After an outage: a watching device says the server is away as soon as
/// its notification channel breaks, and once the channel is back, a run
/// waiting out its retry stops waiting. Timing-sensitive (bounds in
/// seconds), so it runs in a `swift test` call of its own.
@Suite("Outage recovery", .serialized)
struct OutageRecoveryTests {
    @Test("the status turns at the outage, and a change after it arrives without sitting out the retry wait")
    func outageAndReturn() async throws {
        let server = try await RestorableServer.start(.sqlite)
        let devices = DeviceDirectories()
        defer { devices.remove() }
        do {
            try await story(server, devices)
        } catch {
            await server.remove()
            throw error
        }
        await server.remove()
    }

    private func story(_ server: RestorableServer, _ devices: DeviceDirectories) async throws {
        // Polls once an hour, and waits 30 s after its first failure: only the channel can bring it back sooner.
        var configuration = SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600))
        configuration.retryPolicy = RetryPolicy(initialDelay: .seconds(30), maximumDelay: .seconds(60), jitter: 0)
        let database = try await server.database(
            "alice", notificationBackoff: RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(1)))
        let engine = try await SyncEngine<ConformanceNote>(
            database: database, directory: devices.directory("watching"), configuration: configuration)
        try await RevocationReachesDevicesTests.waitUntilListening(engine)

        let stopped = ContinuousClock.now
        await server.stop()
        let noticed = await RevocationReachesDevicesTests.time(
            until: .temporarilyUnavailable, of: engine, from: stopped)
        #expect(noticed != nil, "the device did not notice the outage")
        if let noticed { print("the outage showed on the device after \(noticed)") }
        // The engine's run failed and waits out its 30 s; the server comes back well before.
        try await Task.sleep(for: .seconds(2))
        try await server.restart()
        let written = ContinuousClock.now
        let other = try await server.database("alice")
        let zone = ZoneID(zoneName: ConformanceNote.cloudRecordType)
        let record = try RecordEncoder(zoneID: zone).encode(ConformanceNote(id: "after", title: "after the outage"))
        _ = try await other.modifyRecords([RecordOperation(.create, record)], zoneID: zone, atomic: true)

        var arrived: Duration?
        while ContinuousClock.now - written < RevocationReachesDevicesTests.bound {
            if await engine.model(withIdentifier: "after") != nil {
                arrived = ContinuousClock.now - written
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(arrived != nil, "the change did not arrive while the run sat out its retry wait")
        if let arrived { print("a change after the outage reached the device in \(arrived)") }
        #expect(await engine.accountStatus.first { _ in true } == .available)
        await engine.close()
    }
}
