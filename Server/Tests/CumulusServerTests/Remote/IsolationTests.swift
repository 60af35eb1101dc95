import Cumulus
import Testing

/// One user's private data is out of every other user's reach, whatever
/// zone ID the other user's requests name.
@Suite("Isolation over HTTP")
struct IsolationTests {
    @Test(
        "bob can neither read, query, fetch the changes of, nor write alice's private zone",
        arguments: TestStore.available)
    func privateZoneIsOutOfReach(_ store: TestStore) async throws {
        let server = try await RunningServer.start(store: store)
        do {
            try await checkIsolation(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    func checkIsolation(_ server: RunningServer) async throws {
        let alice = try await server.database(signedInAs: "alice")
        let bob = try await server.database(signedInAs: "bob")
        let notes = ZoneID(zoneName: "Notes")
        _ = try await alice.modifyZones([.create(notes)])
        let secret = Record(recordType: "Note", recordName: "secret", zoneID: notes, fields: ["text": .string("mine")])
        let stored = try #require(
            try await alice.modifyRecords([RecordOperation(.create, secret)], zoneID: notes, atomic: true)[0].record)
        let aliceName = try await alice.currentUser().userRecordName

        // Alice's zone named by its owner, and by name alone (bob's own, which does not exist).
        for zone in [ZoneID(zoneName: "Notes", ownerRecordName: aliceName), notes] {
            let lookup = try await bob.lookupRecords(["secret"], zoneID: zone, desiredKeys: nil)
            #expect(lookup[0].record == nil)
            do {
                let page = try await bob.queryRecords(
                    RecordQuery(recordType: "Note"), zoneID: zone, resultsLimit: nil, continuationMarker: nil,
                    desiredKeys: nil)
                #expect(page.records.isEmpty)
            } catch let error as CloudError {
                #expect(error.code == .zoneNotFound || error.code == .accessDenied)
            }
            let changes = try await bob.fetchZoneChanges([ZoneChangesRequest(zoneID: zone)])
            if case .success(let page) = changes[0] { #expect(page.records.isEmpty) }

            var edit = stored
            edit.zoneID = zone
            edit["text"] = .string("bob was here")
            for type in [RecordOperationType.forceUpdate, .forceReplace, .update, .forceDelete] {
                let results = try await bob.modifyRecords([RecordOperation(type, edit)], zoneID: zone, atomic: false)
                #expect(results[0].error != nil, "\(type) in \(zone) reached a record")
            }
            _ = try? await bob.modifyZones([.delete(zone)])
        }

        // Alice's record and zone are as she left them.
        let after = try await alice.lookupRecords(["secret"], zoneID: notes, desiredKeys: nil)
        #expect(after[0].record == stored)
        #expect(try await alice.listZones().map(\.zoneID).contains(notes))
        #expect(try await bob.listZones().map(\.zoneID) == [.defaultZone])
    }
}
