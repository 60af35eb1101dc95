import Crypto
import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("CloudService accounts and persistence")
struct ServiceAccountTests {
    private func isHex(_ text: String, count: Int) -> Bool {
        text.count == count && text.allSatisfy { "0123456789abcdef".contains($0) }
    }

    @Test("containers whose names differ only in case are separate", arguments: TestStore.single)
    func containerNamesAreExact(_ store: TestStore) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-containers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try await store.makeServices(directory: directory)
        do {
            let service = stores.services[0]
            // Normalization cannot come up: container names are ASCII (NameRules.checkNewContainerName).
            let names = ["iCloud.cafe", "iCloud.Cafe", "iCloud.CAFE"]
            var tokens: [String] = []
            for name in names { tokens.append(try await service.addContainer(named: name)) }
            var users: [String] = []
            for name in names { users.append(try await service.addUser(named: "alice", container: name).webAuthToken) }
            for (index, name) in names.enumerated() {
                for (other, token) in tokens.enumerated() {
                    #expect(try await service.authenticateContainer(named: name, apiToken: token) == (index == other))
                }
                for (other, token) in users.enumerated() {
                    #expect(try await (service.user(container: name, webAuthToken: token) != nil) == (index == other))
                }
            }
            // A record in one is not in the others.
            let alice = Caller(container: names[0], environment: .development, scope: .private, user: "_alice")
            _ = try await service.modify(
                [RecordOperation(.create, note("n", zone: .defaultZone))], zone: .defaultZone, as: alice)
            let twin = Caller(container: names[1], environment: .development, scope: .private, user: "_alice")
            #expect(try await service.lookup(["n"], zone: .defaultZone, as: twin)[0].record == nil)
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }

    @Test func accountsStoreOnlyHashes() async throws {
        var fixture = try await ServiceFixture.make()
        let token = try await fixture.service.addContainer(named: "iCloud.test")
        #expect(isHex(token, count: 64))
        await #expect(throws: CloudError.self) { try await fixture.service.addContainer(named: "iCloud.test") }
        let (recordName, webToken) = try await fixture.service.addUser(named: "alice", container: "iCloud.test")
        #expect(recordName.hasPrefix("_") && isHex(String(recordName.dropFirst()), count: 32))
        #expect(isHex(webToken, count: 64))
        await #expect(throws: CloudError.self) {
            try await fixture.service.addUser(named: "alice", container: "iCloud.test")
        }
        do {
            _ = try await fixture.service.addUser(named: "bob", container: "iCloud.missing")
            Issue.record("a user was added to a missing container")
        } catch let error as CloudError {
            #expect(error.code == .notFound)
        }
        let pem = P256.Signing.PrivateKey().publicKey.pemRepresentation
        let keyID = try await fixture.service.addServerKey(container: "iCloud.test", publicKeyPEM: pem)
        #expect(isHex(keyID, count: 64))
        await #expect(throws: CloudError.self) {
            try await fixture.service.addServerKey(container: "iCloud.test", publicKeyPEM: "not a key")
        }

        try await fixture.reopen()
        #expect(try await fixture.service.authenticateContainer(named: "iCloud.test", apiToken: token))
        #expect(try await !fixture.service.authenticateContainer(named: "iCloud.test", apiToken: webToken))
        #expect(try await fixture.service.user(container: "iCloud.test", webAuthToken: webToken) == recordName)
        #expect(try await fixture.service.user(container: "iCloud.test", webAuthToken: token) == nil)
        #expect(try await fixture.service.serverKey(container: "iCloud.test", keyID: keyID) == pem)

        try await fixture.service.close()
        for file in try FileManager.default.contentsOfDirectory(atPath: fixture.directory.path) {
            var isDirectory: ObjCBool = false
            let path = fixture.directory.appendingPathComponent(file)
            // The assets' directory holds no asset here.
            guard FileManager.default.fileExists(atPath: path.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            let bytes = try Data(contentsOf: path)
            #expect(bytes.range(of: Data(token.utf8)) == nil)
            #expect(bytes.range(of: Data(webToken.utf8)) == nil)
        }
        try await fixture.tearDown()
    }

    @Test func recordsTagsAndTokensSurviveReopening() async throws {
        var fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        let created = try await fixture.service.modify([RecordOperation(.create, note("a"))], as: alice)
        let tag = try #require(created[0].record?.changeTag)
        let changes = try await fixture.service.zoneChanges(ZoneChangesRequest(zoneID: notesZone), as: alice).get()
        let database = try await fixture.service.databaseChanges(since: nil, as: alice)

        try await fixture.reopen()
        #expect(try await fixture.service.lookup(["a"], as: alice)[0].record == created[0].record)
        let updated = try await fixture.service.modify(
            [RecordOperation(.update, note("a", title: "again", tag: tag))], as: alice)
        let newTag = try #require(updated[0].record?.changeTag)
        #expect(newTag != tag)
        let since = try await fixture.service.zoneChanges(
            ZoneChangesRequest(zoneID: notesZone, syncToken: changes.syncToken), as: alice
        ).get()
        #expect(since.records.map(\.record?.changeTag) == [newTag])
        let databaseSince = try await fixture.service.databaseChanges(since: database.syncToken, as: alice)
        #expect(databaseSince.changedZones == [notesZone])
        try await fixture.tearDown()
    }

    @Test func schemaKeepsFirstFieldTypes() async throws {
        var fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        _ = try await fixture.service.modify([RecordOperation(.create, note("a"))], as: alice)
        try await fixture.reopen()
        let lookup = try await fixture.service.fieldTypes(container: "iCloud.test", environment: .development)
        #expect(lookup("Note", "title") == .string)
        #expect(lookup("Note", "other") == nil)
        let production = try await fixture.service.fieldTypes(container: "iCloud.test", environment: .production)
        #expect(production("Note", "title") == nil)
        try await fixture.tearDown()
    }
}
