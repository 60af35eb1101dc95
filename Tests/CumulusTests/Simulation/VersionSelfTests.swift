import Cumulus
import CumulusTesting
import Foundation
import Testing

/// Each check of the histories of mixed versions, shown to fail on a step
/// made to break it: a device that writes the server as a broken engine
/// would (the mutants of issue #32's rules).
@Suite("Simulation checks of mixed versions")
struct VersionSelfTests {
    func note(_ id: String, _ serial: Int, body: String? = nil, rating: Int? = nil) -> SimNote {
        SimNote(id: id, title: "T\(serial)", body: body, count: serial, tags: ["G\(serial)"], rating: rating)
    }

    @Test("the field oracle accepts a device's own values and reports an unknown field changed")
    func unknownFields() {
        var fields = FieldOracle()
        let created = note("alice-1", 1, body: "B1", rating: 5)
        fields.created(created, fields: SimNoteV2.fields, device: 1)
        #expect(fields.check([created], device: 1, versions: [2], tick: 1) { _ in false }.isEmpty)
        // Version 1 edits the title and keeps the rating it does not know.
        var edited = created
        edited.title = "T2"
        fields.wrote("T2", in: .title, of: "alice-1", device: 0)
        #expect(fields.check([edited], device: 0, versions: [1], tick: 2) { _ in false }.isEmpty)
        // The mutant "an upload replaces the record with the model's fields": the rating is gone.
        var dropped = edited
        dropped.title = "T3"
        dropped.rating = nil
        fields.wrote("T3", in: .title, of: "alice-1", device: 0)
        let violations = fields.check([dropped], device: 0, versions: [1], tick: 3) { _ in false }
        #expect(violations.map(\.0) == [.unknownFieldsKept])
        #expect(fields.changes == 3)
    }

    @Test("a body edit queued by version 2 and sent after the update to version 3 is the device's own")
    func queuedAcrossUpdate() {
        var fields = FieldOracle()
        let created = note("alice-1", 1, body: "B1", rating: 5)
        fields.created(created, fields: SimNoteV2.fields, device: 0)
        _ = fields.check([created], device: 0, versions: [2], tick: 1) { _ in false }
        var edited = created
        edited.body = "B2"
        fields.wrote("B2", in: .body, of: "alice-1", device: 0)
        // Version 3 does not declare the body: only the queued version 2 edit may change it.
        #expect(
            fields.check([edited], device: 0, versions: [3], tick: 2) { _ in false }.map(\.0) == [.unknownFieldsKept])
        var fresh = FieldOracle()
        fresh.created(created, fields: SimNoteV2.fields, device: 0)
        _ = fresh.check([created], device: 0, versions: [2], tick: 1) { _ in false }
        fresh.wrote("B2", in: .body, of: "alice-1", device: 0)
        #expect(fresh.check([edited], device: 0, versions: [2, 3], tick: 2) { _ in false }.isEmpty)
    }

    @Test("the field oracle reports a value the device never wrote, unless the record is exempt")
    func writtenValuesOnly() {
        var fields = FieldOracle()
        let created = note("alice-1", 1, body: "B1")
        fields.created(created, fields: SimNoteV1.fields, device: 0)
        _ = fields.check([created], device: 0, versions: [1], tick: 1) { _ in false }
        // Version 3 writes its default rating (0 for none) that nobody chose.
        var defaulted = created
        defaulted.rating = 0
        let violations = fields.check([defaulted], device: 1, versions: [3], tick: 2) { _ in false }
        #expect(violations.map(\.0) == [.writtenValuesOnly])
        // A record merged without an ancestor may take what the copy held.
        var merged = created
        merged.title = "T9"
        #expect(fields.check([merged], device: 1, versions: [3], tick: 3) { $0 == "alice-1" }.isEmpty)
        // A record that disappears and comes back is judged by the Oracle, not here.
        _ = fields.check([], device: 1, versions: [3], tick: 4) { _ in false }
        #expect(fields.check([created], device: 0, versions: [1], tick: 5) { _ in false }.isEmpty)
    }

    @Test("the oracle counts a field's absence as its value: a rating cleared by an older version is lost")
    func absentValues() {
        var oracle = Oracle()
        let created = note("alice-1", 1, body: "B1")
        oracle.created(created, device: 0, tick: 1)
        oracle.edited(created, field: .rating, to: "5", device: 1, tick: 2)
        var rated = created
        rated.rating = 5
        #expect(oracle.violations(owner: "alice", stored: [rated]).isEmpty)
        // Version 1's edit of the title replaced the record without the rating.
        oracle.edited(rated, field: .title, to: "T2", device: 0, tick: 3)
        var dropped = rated
        dropped.title = "T2"
        dropped.rating = nil
        #expect(oracle.violations(owner: "alice", stored: [dropped]).map(\.0) == [.noLostEdit])
        // Version 2 clearing it is an edit like any other.
        oracle.edited(rated, field: .rating, to: SimField.absent, device: 1, tick: 4)
        #expect(oracle.violations(owner: "alice", stored: [dropped]).isEmpty)
    }

    @Test("the versions decode what they declare; version 3 reads a record without rating as none")
    func versions() throws {
        let zone = ZoneID(zoneName: SimNote.cloudRecordType)
        let old = try RecordEncoder(zoneID: zone).encode(SimNoteV1(note("alice-1", 1, body: "B1")))
        #expect(SimVersions.decode(old, version: 3) == note("alice-1", 1))
        #expect(SimVersions.decode(old, version: 2) == note("alice-1", 1, body: "B1"))
        let new = try RecordEncoder(zoneID: zone).encode(SimNoteV3(note("alice-2", 2, rating: 7)))
        #expect(SimVersions.decode(new, version: 1) == nil)
        #expect(SimVersions.decode(new, version: 2) == nil)
        #expect(SimVersions.decode(new, version: 3) == note("alice-2", 2, rating: 7))
    }

    /// A history of mixed versions with two devices: device 0 on version
    /// 1, device 1 on version 2, and alice-1 synced on both, rated by device 1.
    func mixedHistory() async throws -> Simulator {
        var options = SimulationOptions(seeds: [1], operations: 0)
        options.versions = true
        let simulator = Simulator(seed: 1, options: options)
        try await simulator.setUp()
        let (old, new) = (simulator.devices[0], simulator.devices[1])
        for (device, version) in [(old, 1), (new, 2)] where device.version != version {
            await device.engine?.close()
            device.version = version
            try await simulator.open(device)
        }
        simulator.actor = new
        try await new.engine?.upload(note: note("alice-1", 1, body: "B1", rating: 5))
        simulator.fieldOracle.created(note("alice-1", 1, body: "B1", rating: 5), fields: SimNoteV2.fields, device: 1)
        _ = try await simulator.sync(new, duringRetries: false)
        try await simulator.checkFields()
        for device in simulator.devices where device !== new {
            simulator.actor = device
            _ = try await simulator.sync(device, duringRetries: false)
            try await simulator.checkFields()
        }
        return simulator
    }

    @Test("a step that replaces a record with an older version's fields is reported")
    func replacedByOlderVersion() async throws {
        let simulator = try await mixedHistory()
        defer { simulator.tearDown() }
        let old = simulator.devices[0]
        simulator.actor = old
        // The mutant, written as a broken engine of version 1 would send it.
        let stored = try #require(await simulator.server.storedRecords(in: simulator.zone, of: "alice").first)
        var replaced = stored
        replaced.fields = RecordFields(stored.fields.dictionary.filter { $0.key != SimField.rating.rawValue })
        _ = try await old.handle.modifyRecords(
            [RecordOperation(.replace, replaced)], zoneID: simulator.zone, atomic: true)
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkFields() }
        #expect(broken?.invariant == .unknownFieldsKept)
    }

    @Test("a device whose engine lists undecodable records other than its version's is reported")
    func undecodable() async throws {
        let simulator = try await mixedHistory()
        defer { simulator.tearDown() }
        try await simulator.checkConvergence(of: "alice")
        let new = simulator.devices[1]
        simulator.actor = new
        try await new.engine?.upload(note: note("alice-2", 2, body: "B2", rating: 6))
        _ = try await simulator.sync(new, duringRetries: false)
        // A record version 1 cannot decode, kept by a journal that does not know it.
        var undecodable = try #require(
            await simulator.server.storedRecords(in: simulator.zone, of: "alice").first {
                $0.recordName == "alice-2"
            })
        undecodable.fields = RecordFields(undecodable.fields.dictionary.filter { $0.key != SimField.body.rawValue })
        _ = try await new.handle.modifyRecords(
            [RecordOperation(.replace, undecodable)], zoneID: simulator.zone, atomic: true)
        for device in simulator.devices { _ = try await simulator.sync(device, duringRetries: false) }
        try await simulator.checkConvergence(of: "alice")
        // The simulator believing device 0 runs version 3 stands for an
        // engine that kept the record but does not decode it on updating.
        simulator.devices[0].version = 3
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkConvergence(of: "alice") }
        #expect(broken?.invariant == .undecodableKept)
    }
}
