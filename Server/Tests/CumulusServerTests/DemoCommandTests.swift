import Cumulus
import Foundation
import Testing

@Suite("cumulus demo")
struct DemoCommandTests {
    @Test("demo --server runs one device against a running server: what it adds, a second run finds")
    func oneDeviceAgainstAServer() async throws {
        let server = try await RunningServer.start()
        let journal = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: journal) }
        do {
            let token = try await server.user("alice").token
            let arguments = [
                "demo", "--server", server.baseURL.absoluteString, "--token", server.apiToken, "--user-token", token,
                "--container", server.container, "--listen", "0", "--journal", journal.path,
            ]
            let first = try await CumulusCommandTests.run(arguments)
            #expect(first.contains("The account holds 0 notes (DemoNote records in the zone DemoNote)."))
            let added = try #require(first.first { $0.hasPrefix("Added ") })

            // Another device of the same user (another journal) sees the note.
            let other = try await CumulusCommandTests.run(
                Array(arguments.dropLast(2)) + ["--journal", journal.appendingPathComponent("other").path])
            #expect(other.contains("The account holds 1 note (DemoNote records in the zone DemoNote):"))
            let title = added.dropFirst("Added \"".count).prefix { $0 != "\"" }
            #expect(other.contains("  \(title)"))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("demo --server says what its count of notes leaves out: other types, other zones")
    func otherRecordTypes() async throws {
        let server = try await RunningServer.start()
        let journal = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-demo-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: journal) }
        do {
            let token = try await server.user("alice").token
            let arguments = [
                "demo", "--server", server.baseURL.absoluteString, "--token", server.apiToken, "--user-token", token,
                "--container", server.container, "--listen", "0",
            ]
            let first = try await CumulusCommandTests.run(arguments + ["--journal", journal.path])
            #expect(!first.contains { $0.hasPrefix("It also holds") }, "nothing else yet")

            // Another app of alice's: 8 places in a zone of their own, and 2 sketches beside the notes.
            let database = try await server.database(signedInAs: "alice")
            let places = ZoneID(zoneName: "Places")
            _ = try await database.modifyZones([.create(places)])
            let saved = try await database.modifyRecords(
                (1...8).map {
                    RecordOperation(.create, Record(recordType: "Place", recordName: "p\($0)", zoneID: places))
                },
                zoneID: places, atomic: true)
            let notes = ZoneID(zoneName: "DemoNote")
            _ = try await database.modifyRecords(
                (1...2).map {
                    RecordOperation(.create, Record(recordType: "Sketch", recordName: "s\($0)", zoneID: notes))
                },
                zoneID: notes, atomic: true)
            #expect(saved.allSatisfy { $0.record != nil })

            let second = try await CumulusCommandTests.run(
                arguments + ["--journal", journal.appendingPathComponent("other").path])
            #expect(second.contains("The account holds 1 note (DemoNote records in the zone DemoNote):"))
            #expect(
                second.contains(
                    "It also holds 10 records the demo does not count: 2 Sketch in the zone DemoNote, "
                        + "8 Place in the zone Places."))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("demo --server without the tokens is a usage error")
    func serverNeedsTokens() async throws {
        await #expect(throws: (any Error).self) {
            _ = try await CumulusCommandTests.run(["demo", "--server", "http://127.0.0.1:1"])
        }
    }
}
