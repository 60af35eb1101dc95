import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// Issue #32 in production: a device on a new version writes a field the
/// operator has not deployed. The change waits, refused, and goes out on
/// its own once the field is deployed.
@Suite("A field production has not deployed", .timeLimit(.minutes(1)))
struct SchemaRefusalTests {
    let clock = ManualClock()
    let server = InMemoryCloudServer(environment: .production)
    var devices: VersionedDevices { VersionedDevices(server: server, clock: clock) }

    /// Teaches development the fields of `model` as the developer's device
    /// on that version does (the engine's own fields included), then deploys them.
    func deploy<Model: CloudCodable>(_ model: Model) async throws -> Int {
        let developer = try await devices.engine(
            Model.self, database: server.database(signedInAs: "developer", environment: .development))
        try await developer.upload(model)
        try await developer.sync()
        #expect(await developer.pendingChangeCount == 0)
        await developer.close()
        return try await server.deploySchema()
    }

    /// Production with version 1's fields deployed, and a note version 1 saved there.
    func productionWithVersion1() async throws -> SyncEngine<NoteV1> {
        // id, title, body and the engine's write lineage.
        #expect(try await deploy(NoteV1(id: "sample", title: "t", body: "b")) == 4)
        let v1 = try await devices.engine(NoteV1.self)
        try await v1.upload(NoteV1(id: "n", title: "Draft"))
        try await v1.sync()
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft")])
        return v1
    }

    /// Version 2 rates the note and syncs: production refuses the rating.
    func refusedRating(_ v2: SyncEngine<NoteV2>) async throws {
        try await v2.sync()
        var rated = try #require(await v2.model(withIdentifier: "n"))
        rated.rating = 5
        try await v2.upload(rated)
        try await v2.sync()
        #expect(await v2.pendingChangeCount == 1)
        #expect(await v2.refusedChanges["n"]?.code == .badRequest)
        #expect(await v2.model(withIdentifier: "n")?.rating == 5)
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft")])
    }

    @Test("a refused field waits queued, is not resent before the interval, and goes out once deployed")
    func refusedUntilDeployed() async throws {
        let v1 = try await productionWithVersion1()
        // The modify requests of this device alone: deploying makes others.
        let sent = SentOperations()
        let v2 = try await devices.engine(NoteV2.self, database: sent.recording(server.database(signedInAs: "alice")))
        let events = Collected(v2.events)
        try await refusedRating(v2)
        #expect(sent.on("n").count == 1)

        sent.reset()
        try await v2.sync()
        clock.advance(by: .seconds(299))
        try await v2.sync()
        #expect(sent.requestCount == 0)
        #expect(await v2.pendingChangeCount == 1)
        _ = await events.waitUntil { $0.contains { isFailure($0, "n") } }
        #expect(events.values.filter { isFailure($0, "n") }.count == 1)

        // After the interval it is tried again, and refused again: nothing is deployed yet.
        clock.advance(by: .seconds(2))
        try await v2.sync()
        #expect(sent.requestCount == 1)
        #expect(await v2.refusedChanges["n"]?.code == .badRequest)

        #expect(try await deploy(NoteV2(id: "sample", title: "t", rating: 1)) == 1)
        try await v2.sync()
        #expect(sent.requestCount == 1)
        clock.advance(by: .seconds(301))
        try await v2.sync()
        #expect(sent.requestCount == 2)
        #expect(await v2.pendingChangeCount == 0)
        #expect(await v2.refusedChanges.isEmpty)
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Draft"), "rating": .int64(5)])

        // Version 1 goes on editing in production without losing the rating.
        try await v1.sync()
        var renamed = try #require(await v1.model(withIdentifier: "n"))
        renamed.title = "Final"
        try await v1.upload(renamed)
        try await v1.sync()
        try await devices.expectServerFields("n", ["id": .string("n"), "title": .string("Final"), "rating": .int64(5)])
    }

    @Test("an engine that syncs on its own sends the refused change once deployed and the interval passed")
    func automaticRetryAfterDeploy() async throws {
        _ = try await productionWithVersion1()
        let v2 = try await devices.engine(NoteV2.self) {
            $0.automaticSync = true
            $0.pollInterval = .seconds(3_600)
        }
        try await v2.sync()
        var rated = try #require(await v2.model(withIdentifier: "n"))
        rated.rating = 5
        try await v2.upload(rated)
        #expect(await eventually { await v2.refusedChanges["n"]?.code == .badRequest })
        #expect(try await deploy(NoteV2(id: "sample", title: "t", rating: 1)) == 1)

        // Six intervals, within the poll interval: only the refusal's retry can send it.
        var arrived = false
        for _ in 0..<6 where !arrived {
            clock.advance(by: .seconds(301))
            arrived = await eventually { await devices.stored("n")?.fields["rating"] == .int64(5) }
        }
        #expect(arrived)
        #expect(await eventually { await v2.pendingChangeCount == 0 })
        #expect(await v2.refusedChanges.isEmpty)
        await v2.close()
    }
}
