import Cumulus
import CumulusTesting
import Foundation
import Testing

/// The in-memory server's environments: development learns the schema,
/// production takes only what was deployed, and each keeps its own data.
@Suite("InMemoryCloudServer environments")
struct InMemoryEnvironmentTests {
    let server = InMemoryCloudServer(environment: .production)
    let rated = Record(recordType: "Note", recordName: "n", fields: ["title": .string("T"), "rating": .int64(5)])

    func create(_ record: Record, on database: InMemoryCloudDatabase) async throws -> RecordResult {
        try #require(
            try await database.modifyRecords([RecordOperation(.create, record)], zoneID: .defaultZone, atomic: false)
                .first)
    }

    @Test("a server is in development unless made for production, and so are its handles")
    func defaultEnvironment() {
        let development = InMemoryCloudServer()
        #expect(development.environment == .development)
        #expect(development.database(signedInAs: "alice").environment == .development)
        #expect(server.environment == .production)
        #expect(server.database(signedInAs: "alice").environment == .production)
        #expect(server.database(signedInAs: "alice", environment: .development).environment == .development)
    }

    @Test("production refuses a field until it is deployed; a handle on development teaches it")
    func refusedUntilDeployed() async throws {
        let phone = server.database(signedInAs: "alice")
        let refused = try await create(rated, on: phone)
        #expect(refused.error?.code == .badRequest)
        #expect(refused.error?.reason.contains("production schema") == true)
        #expect(try await server.deploySchema() == 0)

        let developer = server.database(signedInAs: "developer", environment: .development)
        #expect(try await create(rated, on: developer).record?["rating"] == .int64(5))
        // Each environment holds its own data.
        #expect(await server.storedRecords(in: .defaultZone, of: "alice").isEmpty)
        #expect(await server.storedRecords(in: .defaultZone, of: "developer").isEmpty)
        #expect(await server.storedRecords(in: .defaultZone, of: "developer", environment: .development).count == 1)

        #expect(try await server.deploySchema() == 2)
        #expect(try await server.deploySchema() == 0)
        #expect(try await create(rated, on: phone).record?["rating"] == .int64(5))
        // Production keeps the deployed type.
        let mistyped = Record(recordType: "Note", recordName: "m", fields: ["rating": .string("five")])
        #expect(try await create(mistyped, on: phone).error?.code == .badRequest)
    }

    @Test("learnSchema teaches development a record's fields without touching production's data")
    func learnSchema() async throws {
        try await server.learnSchema(from: [
            rated, Record(recordType: "Tag", recordName: "t", fields: ["name": .string("x")]),
        ])
        #expect(try await server.deploySchema() == 3)
        #expect(await server.storedRecords(in: .defaultZone, of: "developer").isEmpty)
        let phone = server.database(signedInAs: "alice")
        #expect(try await create(rated, on: phone).record != nil)

        // A type development already has otherwise is refused, and nothing is learned.
        let clash = Record(
            recordType: "Note", recordName: "c", fields: ["rating": .string("five"), "extra": .int64(1)])
        await #expect(throws: CloudError.self) { try await server.learnSchema(from: [clash]) }
        #expect(try await server.deploySchema() == 0)
    }

    @Test("a write in one environment notifies only the handles of that environment")
    func notificationsStayInTheirEnvironment() async throws {
        let developer = server.database(signedInAs: "alice", environment: .development)
        let phone = server.database(signedInAs: "alice")
        let stream = phone.notifications()
        let heard = Task {
            var count = 0
            for await notification in stream where notification == .databaseChanged {
                count += 1
                if count == 2 { break }
            }
            return count
        }
        _ = try await create(rated, on: developer)
        try await server.deploySchema()
        _ = try await create(Record(recordType: "Note", recordName: "p", fields: ["title": .string("P")]), on: phone)
        // Only the production write reaches the production handle.
        try await Task.sleep(for: .milliseconds(100))
        heard.cancel()
        #expect(await heard.value == 1)
    }
}
