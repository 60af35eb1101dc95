import Cumulus
import CumulusTesting
import Foundation
import Testing

/// Each check of the simulator, shown to fail on a history made to break
/// it: the invariants are not vacuous.
@Suite("Simulation checks")
struct SimulationSelfTests {
    let options = SimulationOptions(seeds: [1], operations: 0)

    func note(_ id: String, _ serial: Int) -> SimNote {
        SimNote(id: id, title: "T\(serial)", body: "B\(serial)", count: serial, tags: ["G\(serial)"])
    }

    @Test("the oracle accepts a merge and reports a superseded value")
    func lostEdit() {
        var oracle = Oracle()
        let created = note("alice-1", 1)
        oracle.created(created, device: 0, tick: 1)
        oracle.edited(created, field: .title, to: "T2", device: 0, tick: 2)
        oracle.edited(created, field: .body, to: "B3", device: 1, tick: 3)
        var merged = created
        merged.title = "T2"
        merged.body = "B3"
        #expect(oracle.violations(owner: "alice", stored: [merged]).isEmpty)
        // The body edit of device 1 lost to a copy that still had B1:
        var lost = merged
        lost.body = "B1"
        let violations = oracle.violations(owner: "alice", stored: [lost])
        #expect(violations.map(\.0) == [.noLostEdit])
    }

    @Test("the oracle reports a missing record and one a delete that saw everything did not remove")
    func presence() {
        var oracle = Oracle()
        oracle.created(note("alice-1", 1), device: 0, tick: 1)
        oracle.created(note("alice-2", 2), device: 0, tick: 2)
        oracle.deleted("alice-2", device: 0, tick: 3, lastSync: nil)
        #expect(oracle.violations(owner: "alice", stored: [note("alice-1", 1)]).isEmpty)
        #expect(oracle.violations(owner: "alice", stored: []).map(\.0) == [.presence])
        let both = [note("alice-1", 1), note("alice-2", 2)]
        #expect(oracle.violations(owner: "alice", stored: both).map(\.0) == [.presence])
        // A later edit on another device may bring it back.
        oracle.edited(note("alice-2", 2), field: .count, to: "7", device: 1, tick: 4)
        var back = note("alice-2", 2)
        back.count = 7
        #expect(oracle.violations(owner: "alice", stored: [note("alice-1", 1), back]).isEmpty)
    }

    @Test("a record in another user's zone is reported")
    func ownRecordsOnly() async throws {
        let simulator = Simulator(seed: 1, options: options)
        try await simulator.setUp()
        defer { simulator.tearDown() }
        try await simulator.checkOwnRecordsOnly()
        let intruder = simulator.server.database(signedInAs: "bob")
        let engine = try await SyncEngine<SimNote>(
            database: intruder, directory: simulator.root.appendingPathComponent("intruder"),
            configuration: SyncConfiguration(automaticSync: false))
        try await engine.upload(note("alice-1", 1))
        try await engine.sync()
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkOwnRecordsOnly() }
        #expect(broken?.invariant == .ownRecordsOnly)
    }

    @Test("a device that differs from the server is reported")
    func convergence() async throws {
        let simulator = Simulator(seed: 1, options: options)
        try await simulator.setUp()
        defer { simulator.tearDown() }
        let device = simulator.devices[0]
        try await device.engine?.upload(note: note("alice-1", 1))
        for device in simulator.devices { _ = try await simulator.sync(device, duringRetries: false) }
        try await simulator.checkConvergence(of: "alice")
        _ = await simulator.server.deleteZone(simulator.zone, ownedBy: "alice")
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkConvergence(of: "alice") }
        #expect(broken?.invariant == .convergence)
    }

    @Test("a journal that does not open is reported")
    func journalOpens() async throws {
        let simulator = Simulator(seed: 1, options: options)
        try await simulator.setUp()
        defer { simulator.tearDown() }
        let device = simulator.devices[0]
        try await device.engine?.upload(note: note("alice-1", 1))
        device.engine = nil
        device.events = nil
        // Damage every journal file before its end: the journal must refuse it.
        let files = try FileManager.default.contentsOfDirectory(at: device.directory, includingPropertiesForKeys: nil)
        for file in files {
            let original = try Data(contentsOf: file)
            try (Data("{\"damaged\n".utf8) + original).write(to: file)
        }
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.open(device) }
        #expect(broken?.invariant == .journalOpens)
    }
}
