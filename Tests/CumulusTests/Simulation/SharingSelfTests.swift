import Cumulus
import CumulusTesting
import Foundation
import Testing

/// Each check of the histories with shares, shown to fail on an input
/// made to break it.
@Suite("Simulation checks with shares")
struct SharingSelfTests {
    var options: SimulationOptions {
        var options = SimulationOptions(seeds: [1], operations: 0)
        options.sharing = true
        return options
    }

    func note(_ id: String, _ serial: Int) -> SimNote {
        SimNote(id: id, title: "T\(serial)", body: "B\(serial)", count: serial, tags: ["G\(serial)"])
    }

    @Test("a read-only or removed participant's value on the server, or a zone changed in their step, is reported")
    func refusedWrites() {
        var sharing = SharingOracle()
        sharing.observeAccess(["bob": .readOnly, "carol": .readWrite], tick: 1)
        sharing.wrote("T5~bob", by: "bob")
        sharing.wrote("T6~carol", by: "carol")
        sharing.wrote("T7~carol", by: "carol")
        var stored = note("alice-1", 1)
        stored.title = "T6~carol"
        #expect(
            sharing.writeViolations(stored: [stored], unchanged: false, actor: "carol", before: sharing.access).isEmpty)
        // bob may only read: neither his value nor any change in his step may reach the server.
        stored.title = "T5~bob"
        let readOnly = sharing.writeViolations(stored: [stored], unchanged: false, actor: "bob", before: sharing.access)
        #expect(readOnly.map(\.0) == [.refusedWritesStayOut, .refusedWritesStayOut])
        // carol, removed, writes nothing either.
        let before = sharing.access
        sharing.observeAccess(["bob": .readOnly], tick: 2)
        #expect(sharing.lostAt["carol"] == 2)
        stored.title = "T7~carol"
        let removed = sharing.writeViolations(stored: [stored], unchanged: true, actor: "bob", before: before)
        #expect(removed.map(\.0) == [.refusedWritesStayOut])
    }

    @Test("a participant's edit counts once the server shows it, and is then checked like any other")
    func acknowledgedEdits() {
        var oracle = Oracle()
        var sharing = SharingOracle()
        sharing.observeAccess(["bob": .readWrite], tick: 1)
        let created = note("alice-1", 1)
        oracle.created(created, device: 0, tick: 2)
        sharing.wrote("T7~bob", by: "bob")
        sharing.queue(.edited(created, field: .title, value: "T7~bob", device: 2))
        // Refused: it never reaches the server, and is never counted.
        sharing.wrote("B8~bob", by: "bob")
        sharing.queue(.edited(created, field: .body, value: "B8~bob", device: 2))
        var acknowledged = created
        acknowledged.title = "T7~bob"
        #expect(
            sharing.writeViolations(stored: [acknowledged], unchanged: false, actor: "bob", before: sharing.access)
                .isEmpty)
        var tick = 10
        sharing.acknowledge(
            stored: [acknowledged], actor: 2, deletionWaits: { _, _ in false }, into: &oracle,
            tick: {
                tick += 1
                return tick
            })
        #expect(sharing.unacknowledged.count == 1)
        #expect(oracle.violations(owner: "alice", stored: [acknowledged]).isEmpty)
        // The server going back to the title before bob's acknowledged edit loses it.
        #expect(oracle.violations(owner: "alice", stored: [created]).map(\.0) == [.noLostEdit])
    }

    /// A history with shares set up without a share, with alice-1 synced
    /// on the owner's first device.
    func sharedHistory() async throws -> (Simulator, owner: SimulationDevice, bob: SimulationDevice) {
        let simulator = Simulator(seed: 1, options: options)
        try await simulator.setUpSharing(sharingAtOnce: false)
        let owner = simulator.devices[0]
        let bob = try #require(simulator.devices.first { $0.participant == "bob" })
        try await owner.engine?.upload(note: note("alice-1", 1))
        _ = try await simulator.sync(owner, duringRetries: false)
        try await simulator.checkSharing(accessBefore: [:])
        return (simulator, owner, bob)
    }

    @Test("a device that holds the owner's records after its user lost access and synced is reported")
    func lostAccess() async throws {
        let (simulator, owner, bob) = try await sharedHistory()
        defer { simulator.tearDown() }
        let engine = try #require(owner.engine)
        _ = try await engine.shareZone(
            title: nil, participants: [ShareParticipant(lookupInfo: .user("bob"), permission: .readWrite)],
            publicPermission: .none)
        try await simulator.accept(on: bob)
        _ = try await simulator.sync(bob, duringRetries: false)
        #expect(await bob.engine?.notes.map(\.id) == ["alice-1"])
        try await simulator.checkSharing(accessBefore: [:])

        var share = try #require(try await engine.fetchZoneShare())
        share.removeParticipants { $0.isUser("bob") }
        _ = try await engine.saveShare(share)
        try await simulator.checkSharing(accessBefore: ["bob": .readWrite])
        // A device that kept the records through a sync: an engine that
        // reads the owner's zone as if nothing had happened.
        let broken = try await SyncEngine<SimNoteV1>(
            database: simulator.server.database(signedInAs: "alice"),
            directory: simulator.root.appendingPathComponent("broken"),
            configuration: Simulator.configuration(
                clock: simulator.clock, randomSeed: 0, encryption: simulator.keys.encryption(current: 0)))
        try await broken.sync()
        bob.engine = broken
        bob.lastSuccessfulSync = simulator.nextTick()
        let caught = await #expect(throws: InvariantBroken.self) { try await simulator.checkSharing(accessBefore: [:]) }
        #expect(caught?.invariant == .lostAccessHoldsNothing)
    }

    @Test("a shared database that answers a user who is not a participant is reported")
    func sharedDatabaseOfOutsider() async throws {
        let (simulator, _, _) = try await sharedHistory()
        defer { simulator.tearDown() }
        // bob was never invited; a handle that reads alice's zone stands for a server that lets him.
        simulator.inspectors["bob"] = simulator.server.database(signedInAs: "alice")
        let caught = await #expect(throws: InvariantBroken.self) { try await simulator.checkSharing(accessBefore: [:]) }
        #expect(caught?.invariant == .participantsOnly)
    }

    @Test("a user who is not invited and gets into the share is reported")
    func outsiderAccepts() async throws {
        let (simulator, owner, _) = try await sharedHistory()
        defer { simulator.tearDown() }
        let directory = simulator.root.appendingPathComponent("carol")
        let carol = SimulationDevice(
            index: simulator.devices.count,
            handle: simulator.server.database(scope: .shared, signedInAs: "carol"), directory: directory)
        carol.participant = "carol"
        carol.publicHandle = simulator.server.database(scope: .public, signedInAs: "carol")
        simulator.devices.append(carol)
        // A share open to anyone with its URL: a server that lets carol in although alice invited only bob.
        _ = try await owner.engine?.shareZone(
            title: nil, participants: [ShareParticipant(lookupInfo: .user("bob"), permission: .readOnly)],
            publicPermission: .readOnly)
        let caught = await #expect(throws: InvariantBroken.self) { try await simulator.accept(on: carol) }
        #expect(caught?.invariant == .participantsOnly)
    }
}
