import Cumulus
import CumulusServer
import Foundation
import Testing

/// The schema is learned in `development` and fixed in `production` until
/// deployed, on every store and across users and servers.
@Suite("Schema environments")
struct SchemaEnvironmentTests {
    @Test(
        "production accepts only deployed fields and types; development learns them",
        arguments: TestStore.available)
    func productionNeedsADeployedSchema(_ store: TestStore) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-schema-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let stores = try await store.makeServices(directory: directory)
        do {
            try await check(stores.services)
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
        try? FileManager.default.removeItem(at: directory)
    }

    private func check(_ services: [CloudService]) async throws {
        // With two servers, each user writes through another server than the deploy.
        let first = services[0]
        let second = services[services.count - 1]
        let bobProduction = caller("_bob", environment: .production)
        let aliceProduction = caller("_alice", environment: .production)
        try await second.createZone(as: bobProduction)
        try await first.createZone(as: aliceProduction)

        // Nothing is deployed: production refuses the field and names it, for every user.
        let refused = try await second.modify([RecordOperation(.create, note("n1", title: "x"))], as: bobProduction)
        let error = try #require(refused[0].error)
        #expect(error.code == .badRequest && error.reason.contains("'title'"), "\(error)")
        #expect(try await second.lookup(["n1"], as: bobProduction)[0].record == nil)

        // Development learns the field from bob's first write; alice's other type is refused there.
        let bobDevelopment = caller("_bob")
        try await first.createZone(as: bobDevelopment)
        let typed = Record(recordType: "Note", recordName: "n2", zoneID: notesZone, fields: ["title": .int64(7)])
        #expect(try await first.modify([RecordOperation(.create, typed)], as: bobDevelopment)[0].error == nil)
        let aliceDevelopment = caller("_alice")
        try await second.createZone(as: aliceDevelopment)
        let clash = try await second.modify([RecordOperation(.create, note("n3", title: "x"))], as: aliceDevelopment)
        #expect(clash[0].error?.code == .badRequest)

        // Deploying copies development's types; production then takes them, from any user and server.
        #expect(try await first.deploySchema(container: "iCloud.test") == 1)
        #expect(try await first.deploySchema(container: "iCloud.test") == 0)
        #expect(try await second.modify([RecordOperation(.create, typed)], as: aliceProduction)[0].error == nil)
        let wrongType = try await first.modify([RecordOperation(.create, note("n4", title: "x"))], as: bobProduction)
        #expect(wrongType[0].error?.code == .badRequest)
        let untaught = Record(
            recordType: "Note", recordName: "n5", zoneID: notesZone, fields: ["title": .int64(1), "body": .int64(2)])
        let unknown = try await second.modify([RecordOperation(.create, untaught)], as: bobProduction)
        #expect(unknown[0].error?.reason.contains("'body'") == true, "\(unknown[0])")

        // Clearing needs no schema entry: production clears a deployed field and one it never had.
        var edit = try #require(try await first.lookup(["n2"], as: aliceProduction)[0].record)
        edit.fields = [:]
        let cleared = try await first.modify(
            [RecordOperation(.update, edit, clearedFields: ["title", "undeployed"])], as: aliceProduction)
        #expect(cleared[0].record?.fields.isEmpty == true, "\(cleared[0])")
    }
}
