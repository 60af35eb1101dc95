import Cumulus
import CumulusConformance
import Foundation
import Synchronization
import Testing

/// A device's writes that name its stream's channel (the header
/// `X-Cumulus-Channel`) are not notified to that stream; another device's
/// are, and so are the writes of a device that names none.
@Suite("Own writes over HTTP")
struct OwnWriteOverHTTPTests {
    @Test("a listener's own write is not notified to its stream; another device's write is")
    func ownWriteIsNotNotified() async throws {
        let server = try await RunningServer.start()
        do {
            let device = try await server.database(signedInAs: "alice")
            let other = try await server.database(signedInAs: "alice")
            let zone = ZoneID(zoneName: "Notes")
            _ = try await device.modifyZones([.create(zone)])
            _ = try await device.modifySubscriptions([.save(Subscription(subscriptionID: "notes", zoneID: zone))])
            let listener = NotificationListener()
            let named = Collected(device.notifications(for: listener))
            let plain = Collected(device.notifications())
            #expect(await device.notificationChannelsOpened())

            func note(_ name: String) -> RecordOperation {
                RecordOperation(
                    .create, Record(recordType: "Note", recordName: name, zoneID: zone, fields: ["t": .string(name)]))
            }
            _ = try await device.modifyRecords([note("own")], zoneID: zone, atomic: false, for: listener)
            // The stream without a listener hears it; the listener's does not, a second later.
            #expect(await plain.waitForAny(within: .seconds(10)))
            try await Task.sleep(for: .seconds(1))
            #expect(named.received.isEmpty)

            _ = try await other.modifyRecords([note("theirs")], zoneID: zone, atomic: false)
            #expect(await named.waitForAny(within: .seconds(10)))
            #expect(named.received.first == .zoneChanged(zone, subscriptionID: "notes"))
            named.stop()
            plain.stop()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

/// Reads a notification stream in a task of its own and keeps what came.
final class Collected: Sendable {
    private final class Box: Sendable {
        let notifications = Mutex<[CloudNotification]>([])
    }
    private let box: Box
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(_ stream: AsyncStream<CloudNotification>) {
        let box = Box()
        let reader = Task {
            for await notification in stream { box.notifications.withLock { $0.append(notification) } }
        }
        self.box = box
        task.withLock { $0 = reader }
    }

    var received: [CloudNotification] { box.notifications.withLock { $0 } }

    /// Whether anything came within `limit`.
    func waitForAny(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while received.isEmpty, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        return !received.isEmpty
    }

    func stop() { task.withLock { $0?.cancel() } }
}
