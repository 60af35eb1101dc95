import Cumulus
import CumulusTesting
import Foundation
import Testing

/// Version 1 of the app with a mark that syncs: an engine that does not
/// keep it on the device.
struct SyncedMarkNote: SimModel {
    static let version = 1
    static let fields = SimNoteV1.fields
    static var cloudRecordType: String { SimNote.cloudRecordType }
    static var cloudEncryptedFields: Set<String> { SimVersions.encryptedFields }

    var id: String
    var title: String
    var body: String
    var count: Int
    var tags: [String]
    var mark: String?
    var cloudMetadata: RecordMetadata?

    init(_ note: SimNote) {
        id = note.id
        title = note.title
        body = note.body ?? ""
        count = note.count
        tags = note.tags
        mark = note.mark
        cloudMetadata = note.cloudMetadata
    }

    var note: SimNote {
        SimNote(id: id, title: title, body: body, count: count, tags: tags, mark: mark, cloudMetadata: cloudMetadata)
    }
}

/// The checks of the notes' local-only mark, shown to fail on devices
/// made to break them.
@Suite("Simulation checks of local-only fields")
struct LocalFieldSelfTests {
    func note(_ id: String, _ serial: Int, mark: String? = nil) -> SimNote {
        SimNote(id: id, title: "T\(serial)", body: "B\(serial)", count: serial, tags: ["G\(serial)"], mark: mark)
    }

    @Test("a mark is kept through a restart and never shown elsewhere; one lost or another device's is reported")
    func marksOnDevices() async throws {
        let simulator = Simulator(seed: 1, options: SimulationOptions(seeds: [1], operations: 0))
        try await simulator.setUp()
        defer { simulator.tearDown() }
        let (first, second) = (simulator.devices[0], simulator.devices[1])
        try await first.engine?.upload(note: note("alice-1", 1, mark: "d0.a"))
        first.marks["alice-1"] = "d0.a"
        for device in [first, second] { _ = try await simulator.sync(device, duringRetries: false) }
        try await simulator.restart(first)
        try await simulator.checkLocalFields()
        #expect(await first.engine?.note(withIdentifier: "alice-1")?.mark == "d0.a")
        #expect(await second.engine?.note(withIdentifier: "alice-1")?.mark == nil)
        #expect(simulator.stats.marksChecked == 1)

        // The app set another mark than the one the simulator expects: a mark lost.
        var remarked = try #require(await first.engine?.note(withIdentifier: "alice-1"))
        remarked.mark = "d0.b"
        try await first.engine?.upload(note: remarked)
        let lost = await #expect(throws: InvariantBroken.self) { try await simulator.checkLocalFields() }
        #expect(lost?.invariant == .localFieldsKept)
        first.marks["alice-1"] = "d0.b"
        try await simulator.checkLocalFields()

        // The second device shows the first's mark: a mark that travelled.
        let synced = try #require(await second.engine?.note(withIdentifier: "alice-1"))
        var travelled = synced
        travelled.mark = "d0.b"
        try await second.engine?.upload(note: travelled)
        let shown = await #expect(throws: InvariantBroken.self) { try await simulator.checkLocalFields() }
        #expect(shown?.invariant == .localFieldsStayLocal)
    }

    @Test("a change of the mark alone that queues a change, or a mark on the server, is reported")
    func syncedMark() async throws {
        let simulator = Simulator(seed: 1, options: SimulationOptions(seeds: [1], operations: 0))
        try await simulator.setUp()
        defer { simulator.tearDown() }
        let device = simulator.devices[0]
        let engine = try await SyncEngine<SyncedMarkNote>(
            database: device.handle, directory: simulator.root.appendingPathComponent("synced-mark"),
            configuration: Simulator.configuration(
                clock: simulator.clock, randomSeed: 0, encryption: simulator.keys.encryption(current: 0)))
        device.engine = engine
        try await engine.upload(SyncedMarkNote(note("alice-1", 1, mark: "d0.a")))
        try await engine.sync()
        // The engine syncs the mark, so a change of it alone is a change to send.
        let queued = await #expect(throws: InvariantBroken.self) { try await simulator.perform(.mark, on: device) }
        #expect(queued?.invariant == .localFieldsStayLocal)
        #expect(queued?.detail.contains("took the pending changes from 0 to 1") == true)

        try await engine.sync()
        let onServer = await #expect(throws: InvariantBroken.self) { try await simulator.checkLocalFields() }
        #expect(onServer?.invariant == .localFieldsStayLocal)
        #expect(onServer?.detail.contains("holds local-only field mark on the server") == true)
    }
}
