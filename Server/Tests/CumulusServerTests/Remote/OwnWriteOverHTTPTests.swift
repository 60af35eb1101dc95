@_spi(Testing) import Cumulus
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

/// An engine's upload over HTTP is one `records/modify`: its own write
/// sets off no `changes/zone`; another device's write still does.
@Suite("An engine's upload over HTTP")
struct EngineUploadRequestTests {
    @Test("an upload sends records/modify and no fetch; another device's write is fetched")
    func uploadIsOneRequest() async throws {
        let server = try await RunningServer.start()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-engine-upload-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let counting = CountingTransport()
            let device = try await server.database(signedInAs: "alice", transport: counting)
            let configuration = SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600))
            let engine = try await SyncEngine<ConformanceNote>(
                database: device, directory: directory, configuration: configuration)
            try await engine.sync()
            _ = await device.notificationChannelsOpened()
            try await Task.sleep(for: .milliseconds(500))

            let before = counting.counts
            try await engine.upload(ConformanceNote(id: "mine", title: "mine"))
            // Whatever the upload sets off happens within this second.
            try await Task.sleep(for: .seconds(1))
            let sent = counting.counts.filter { $0.value != before[$0.key] }
            #expect(sent.keys.sorted() == ["records/modify"], "\(sent)")

            let other = try await server.database(signedInAs: "alice")
            let zone = ZoneID(zoneName: ConformanceNote.cloudRecordType)
            let record = try RecordEncoder(zoneID: zone).encode(ConformanceNote(id: "theirs", title: "theirs"))
            _ = try await other.modifyRecords([RecordOperation(.create, record)], zoneID: zone, atomic: true)
            let deadline = ContinuousClock.now.advanced(by: .seconds(10))
            while await engine.models.contains(where: { $0.id == "theirs" }) == false, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(await engine.models.contains { $0.id == "theirs" })
            await engine.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

/// Counts the protocol requests it sends, by the path's operation; with
/// `naming` false, strips the writing channel's header, as a client before
/// it sent none.
final class CountingTransport: CloudTransport {
    private let base = URLSessionTransport()
    private let table = Mutex<[String: Int]>([:])
    private let naming: Bool

    init(naming: Bool = true) { self.naming = naming }

    var counts: [String: Int] { table.withLock { $0 } }

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        let parts = request.url.path.split(separator: "/")
        if parts.count >= 2, parts.first == "database" {
            let name = parts.suffix(2).joined(separator: "/")
            table.withLock { $0[name, default: 0] += 1 }
        }
        var request = request
        if !naming { request.headers[CloudRequest.writingChannelHeader] = nil }
        return try await base.send(request)
    }
}

/// Figures, not checks (run with `CUMULUS_OWN_WRITE_FIGURES=1`): an
/// engine's requests and journal `fsync`s per upload and per idle poll, and
/// the A → B latency, with A's channel named on its uploads and with the
/// header stripped by the transport (as an engine before #38), back to back.
@Suite("Own write figures", .enabled(if: ProcessInfo.processInfo.environment["CUMULUS_OWN_WRITE_FIGURES"] == "1"))
struct OwnWriteFigures {
    @Test func figures() async throws {
        let server = try await RunningServer.start()
        do {
            for naming in [false, true] {
                let (upload, idle) = try await Self.roundTrips(server, naming: naming)
                print("figures naming=\(naming) upload: \(upload)")
                print("figures naming=\(naming) 6 idle polls: \(idle)")
            }
            let count = Int(ProcessInfo.processInfo.environment["CUMULUS_OWN_WRITE_CHANGES"] ?? "200") ?? 200
            for naming in [false, true, false, true] where count > 0 {
                let (median, p99) = try await Self.latency(server, naming: naming, count: count)
                print("figures naming=\(naming) A→B \(count) changes: median \(median), p99 \(p99)")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static func roundTrips(_ server: RunningServer, naming: Bool) async throws -> (String, String) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-figures-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let counting = CountingTransport(naming: naming)
        let user = "figures-\(naming)-\(UUID().uuidString.prefix(8))"
        let device = try await server.database(signedInAs: user, transport: counting)
        var engine = try await SyncEngine<ConformanceNote>(
            database: device, directory: directory,
            configuration: SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600)))
        try await engine.sync()
        try await Task.sleep(for: .seconds(1))
        let before = (counting.counts, engine.journalSyncCount)
        let began = Date().timeIntervalSince1970
        try await engine.upload(ConformanceNote(id: "mine", title: "mine"))
        try await Task.sleep(for: .seconds(1))
        // The window, to match a trace of the process's fsyncs against it.
        print("figures naming=\(naming) upload window \(began) \(Date().timeIntervalSince1970)")
        let upload = Self.describe(counting.counts, since: before.0, syncs: engine.journalSyncCount - before.1)
        await engine.close()

        engine = try await SyncEngine<ConformanceNote>(
            database: device, directory: directory,
            configuration: SyncConfiguration(automaticSync: true, pollInterval: .milliseconds(500)))
        try await Task.sleep(for: .seconds(1))
        let idleStart = (counting.counts, engine.journalSyncCount)
        let idleBegan = Date().timeIntervalSince1970
        try await Task.sleep(for: .milliseconds(3000))
        print("figures naming=\(naming) idle window \(idleBegan) \(Date().timeIntervalSince1970)")
        let idle = Self.describe(counting.counts, since: idleStart.0, syncs: engine.journalSyncCount - idleStart.1)
        await engine.close()
        return (upload, idle)
    }

    static func describe(_ counts: [String: Int], since: [String: Int], syncs: Int) -> String {
        let delta = counts.compactMap { key, value -> String? in
            let added = value - (since[key] ?? 0)
            return added > 0 ? "\(key) ×\(added)" : nil
        }.sorted()
        return "\(delta.joined(separator: ", ")); \(syncs) journal fsyncs"
    }

    static func latency(_ server: RunningServer, naming: Bool, count: Int) async throws -> (Duration, Duration) {
        let base = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-latency-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        let user = "latency-\(naming)-\(UUID().uuidString.prefix(8))"
        let configuration = SyncConfiguration(automaticSync: true, pollInterval: .seconds(3600))
        let sender = try await SyncEngine<ConformanceNote>(
            database: try await server.database(signedInAs: user, transport: CountingTransport(naming: naming)),
            directory: base.appendingPathComponent("a"), configuration: configuration)
        let receiver = try await SyncEngine<ConformanceNote>(
            database: try await server.database(signedInAs: user), directory: base.appendingPathComponent("b"),
            configuration: configuration)
        try await sender.sync()
        try await receiver.sync()
        try await Task.sleep(for: .milliseconds(500))
        var arrivals = receiver.changes.makeAsyncIterator()
        let clock = ContinuousClock()
        var samples: [Duration] = []
        for index in 0..<count {
            let id = "latency \(index)"
            let start = clock.now
            try await sender.upload(ConformanceNote(id: id, title: id))
            arrival: while let change = await arrivals.next() {
                if case .updated(let notes) = change, notes.contains(where: { $0.id == id }) { break arrival }
            }
            samples.append(clock.now - start)
        }
        await sender.close()
        await receiver.close()
        samples.sort()
        return (samples[samples.count / 2], samples[min(samples.count - 1, samples.count * 99 / 100)])
    }
}
