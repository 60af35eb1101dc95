import CloudCodable
import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// The simulation's test cipher, and the check that the server holds the
/// encrypted field sealed, shown to fail on inputs made to break them.
@Suite("Simulation checks of encrypted fields")
struct EncryptionSelfTests {
    let cipher = SimulationFieldCipher()
    let key = SHA256.hash(Array("key".utf8))
    let plaintext = Array("{\"title\":\"a secret\"}".utf8)
    let associatedData = Array("SimNote\u{0}alice-1\u{0}title".utf8)

    @Test("the test cipher opens what it sealed, with a fresh nonce each time")
    func roundTrip() throws {
        let first = try cipher.seal(plaintext, key: key, authenticating: associatedData)
        let second = try cipher.seal(plaintext, key: key, authenticating: associatedData)
        #expect(first != second)
        #expect(try cipher.open(first, key: key, authenticating: associatedData) == plaintext)
        #expect(try cipher.open(second, key: key, authenticating: associatedData) == plaintext)
        // Longer than one keystream block, and empty.
        let long = [UInt8](repeating: 7, count: 100)
        #expect(try cipher.open(cipher.seal(long, key: key, authenticating: []), key: key, authenticating: []) == long)
        #expect(try cipher.open(cipher.seal([], key: key, authenticating: []), key: key, authenticating: []) == [])
        #expect(first.count == plaintext.count + SimulationFieldCipher.nonceCount + SimulationFieldCipher.tagCount)
    }

    @Test("the test cipher refuses another key, other associated data, a changed byte and a cut value")
    func refusals() throws {
        let sealed = try cipher.seal(plaintext, key: key, authenticating: associatedData)
        #expect(throws: SimulationFieldCipher.OpenFailure.self) {
            try cipher.open(sealed, key: SHA256.hash(Array("other".utf8)), authenticating: associatedData)
        }
        #expect(throws: SimulationFieldCipher.OpenFailure.self) {
            try cipher.open(sealed, key: key, authenticating: Array("SimNote\u{0}alice-2\u{0}title".utf8))
        }
        for index in [0, SimulationFieldCipher.nonceCount, sealed.count - 1] {
            var changed = sealed
            changed[index] ^= 1
            #expect(throws: SimulationFieldCipher.OpenFailure.self) {
                try cipher.open(changed, key: key, authenticating: associatedData)
            }
        }
        #expect(throws: SimulationFieldCipher.OpenFailure.self) {
            try cipher.open(Array(sealed.prefix(40)), key: key, authenticating: associatedData)
        }
    }

    func note(_ id: String, title: String) -> SimNote {
        SimNote(id: id, title: title, body: "B1", count: 1, tags: ["G1"])
    }

    @Test("a device's note is sealed on the server and read back; a title not sealed is reported")
    func notSealed() async throws {
        let simulator = Simulator(seed: 1, options: SimulationOptions(seeds: [1], operations: 0))
        try await simulator.setUp()
        defer { simulator.tearDown() }
        let device = simulator.devices[0]
        try await device.engine?.upload(note: note("alice-1", title: "T1"))
        _ = try await simulator.sync(device, duringRetries: false)
        try await simulator.checkEncryptedFields()
        #expect(try await simulator.storedNotes(of: "alice").map(\.title) == ["T1"])

        // What an engine that forgets to seal would leave (the server's schema refuses a string: the field is BYTES).
        var record = try RecordEncoder(zoneID: simulator.zone).encode(SimNoteV1(note("alice-2", title: "T2")))
        record.fields["title"] = .bytes(Data("T2".utf8))
        let results = try await device.handle.modifyRecords(
            [RecordOperation(.create, record)], zoneID: simulator.zone, atomic: true)
        #expect(results.first?.record != nil)
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkEncryptedFields() }
        #expect(broken?.invariant == .encryptedOnServer)
        #expect(broken?.detail.contains("alice-2.title is not sealed") == true)
    }

    /// A cipher that leaves the value in clear: sealing and opening are the identity.
    struct ClearCipher: FieldCipher {
        func seal(_ plaintext: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) -> [UInt8] { plaintext }
        func open(_ sealed: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) -> [UInt8] { sealed }
    }

    @Test("an envelope that holds the value in clear is reported")
    func valueInClear() async throws {
        let simulator = Simulator(seed: 1, options: SimulationOptions(seeds: [1], operations: 0))
        simulator.keys = SimulationKeys(seed: 1, cipher: ClearCipher())
        try await simulator.setUp()
        defer { simulator.tearDown() }
        let device = simulator.devices[0]
        try await device.engine?.upload(note: note("alice-1", title: "T1"))
        _ = try await simulator.sync(device, duringRetries: false)
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkEncryptedFields() }
        #expect(broken?.invariant == .encryptedOnServer)
        #expect(broken?.detail.contains("alice-1.title holds T1 in clear") == true)
    }

    @Test("a value sealed with a key the history does not have is reported")
    func foreignKey() async throws {
        let simulator = Simulator(seed: 1, options: SimulationOptions(seeds: [1], operations: 0))
        try await simulator.setUp()
        defer { simulator.tearDown() }
        // Another history's keys: the same identifiers, other bytes.
        var configuration = SyncConfiguration(automaticSync: false)
        configuration.fieldEncryption = SimulationKeys(seed: 2).encryption(current: 0)
        let foreign = try await SyncEngine<SimNoteV1>(
            database: simulator.server.database(signedInAs: "alice"),
            directory: simulator.root.appendingPathComponent("foreign"), configuration: configuration)
        try await foreign.upload(SimNoteV1(note("alice-1", title: "T1")))
        try await foreign.sync()
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkEncryptedFields() }
        #expect(broken?.invariant == .encryptedOnServer)
        #expect(broken?.detail.contains("does not open") == true)
    }

    @Test("a sealed value moved to another record is reported")
    func movedValue() async throws {
        let simulator = Simulator(seed: 1, options: SimulationOptions(seeds: [1], operations: 0))
        try await simulator.setUp()
        defer { simulator.tearDown() }
        let encoder = RecordEncoder(zoneID: simulator.zone)
        let sealed = try simulator.keys.reader.seal(
            encoder.encode(SimNoteV1(note("alice-1", title: "T1"))), fields: SimVersions.encryptedFields)
        var moved = try encoder.encode(SimNoteV1(note("alice-2", title: "T2")))
        moved.fields["title"] = sealed.fields["title"]
        // A sync creates the zone.
        _ = try await simulator.sync(simulator.devices[0], duringRetries: false)
        let results = try await simulator.devices[0].handle.modifyRecords(
            [RecordOperation(.create, moved)], zoneID: simulator.zone, atomic: true)
        #expect(results.first?.record != nil)
        let broken = await #expect(throws: InvariantBroken.self) { try await simulator.checkEncryptedFields() }
        #expect(broken?.invariant == .encryptedOnServer)
        #expect(broken?.detail.contains("alice-2.title does not open") == true)
    }
}
