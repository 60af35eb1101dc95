import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    func zoneChangesFromStart() async throws {
        let database = try await deviceWithZone()
        let empty = try await database.zoneChanges(since: nil)
        #expect(empty.records.isEmpty)
        #expect(!empty.moreComing)
        #expect(empty.zoneID.zoneName == notesZone.zoneName)

        let saved = try await database.create([note("a", ["v": .int64(1)]), note("b")])
        let changes = try await database.zoneChanges(since: nil)
        #expect(changes.records == saved.map(RecordResult.record))
        #expect(!changes.moreComing)
        #expect(changes.syncToken != empty.syncToken)

        // Caught up: nothing new, and the same position.
        let again = try await database.zoneChanges(since: changes.syncToken)
        #expect(again.records.isEmpty)
        #expect(!again.moreComing)
        #expect(again.syncToken == changes.syncToken)
    }

    func zoneChangesSinceToken() async throws {
        let database = try await deviceWithZone()
        let old = try await database.create([note("kept"), note("edited", ["v": .int64(0)]), note("gone")])
        let token = try await database.zoneChanges(since: nil).syncToken

        var edited = old[1]
        for value in 1...3 {
            edited["v"] = .int64(Int64(value))
            edited = try requireRecord(try await database.modify(RecordOperation(.update, edited)))
        }
        try await database.apply([RecordOperation(.delete, old[2])])
        let brief = try #require(try await database.create([note("brief")]).first)
        try await database.apply([RecordOperation(.delete, brief)])
        let fresh = try await database.create([note("fresh")])

        let changes = try await database.zoneChanges(since: token)
        #expect(
            changes.records == [
                .record(edited),
                .deleted(recordName: "gone", zoneID: notesZone),
                .deleted(recordName: "brief", zoneID: notesZone),
                .record(fresh[0]),
            ])
        #expect(!changes.moreComing)

        // Tombstones stay: a device that started before the deletions still learns of them.
        let fromStart = try await database.zoneChanges(since: nil)
        #expect(fromStart.records.deletedNames.sorted() == ["brief", "gone"])
        #expect(fromStart.records.savedNames.sorted() == ["edited", "fresh", "kept"])
    }

    func zoneChangesPaging() async throws {
        let database = try await deviceWithZone()
        let saved = try await database.create((0..<7).map { note("n\($0)") })
        let token = try await database.zoneChanges(since: nil, limit: 1).syncToken
        let (pages, last) = try await database.allZoneChanges(since: nil, limit: 3)
        #expect(pages.map(\.records.count) == [3, 3, 1])
        #expect(pages.map(\.moreComing) == [true, true, false])
        #expect(pages.flatMap(\.records) == saved.map(RecordResult.record))
        #expect(Set(pages.map(\.syncToken)).count == 3)

        // Paging on from the first single-record page gives the rest.
        let rest = try await database.allZoneChanges(since: token, limit: 4)
        #expect(rest.pages.flatMap(\.records).savedNames == (1..<7).map { "n\($0)" })
        #expect(rest.token == last)

        // 0 is not a limit.
        let results = try await database.fetchZoneChanges([
            ZoneChangesRequest(zoneID: notesZone, resultsLimit: 0)
        ])
        #expect(throws: CloudError.self) { try results[0].get() }
    }

    func zoneChangesFilters() async throws {
        let database = try await deviceWithZone()
        let task = Record(recordType: "Task", recordName: "t", zoneID: notesZone, fields: ["a": .int64(1)])
        try await database.create([note("n1", ["a": .int64(1), "b": .int64(2)]), task, note("n2")])
        let results = try await database.fetchZoneChanges([
            ZoneChangesRequest(zoneID: notesZone, resultsLimit: 1, desiredKeys: ["b"], desiredRecordTypes: ["Note"])
        ])
        let first = try results[0].get()
        #expect(first.records.map { $0.record?.fields } == [["b": .int64(2)]])
        #expect(first.moreComing)
        let second = try await database.fetchZoneChanges([
            ZoneChangesRequest(
                zoneID: notesZone, syncToken: first.syncToken, resultsLimit: 1, desiredRecordTypes: ["Note"])
        ])[0].get()
        #expect(second.records.savedNames == ["n2"])
        #expect(!second.moreComing)

        // A type that comes last does not leave an empty page behind.
        let tasks = try await database.fetchZoneChanges([
            ZoneChangesRequest(zoneID: notesZone, resultsLimit: 1, desiredRecordTypes: ["Task"])
        ])[0].get()
        #expect(tasks.records.savedNames == ["t"])
        #expect(!tasks.moreComing)
    }

    func zoneChangesFailPerZone() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("a")])
        let results = try await database.fetchZoneChanges([
            ZoneChangesRequest(zoneID: ZoneID(zoneName: "Missing")),
            ZoneChangesRequest(zoneID: notesZone, syncToken: SyncToken(rawValue: "not a token")),
            ZoneChangesRequest(zoneID: notesZone),
            ZoneChangesRequest(zoneID: .defaultZone),
        ])
        try #require(results.count == 4)
        #expect(results[0].failureCode == .zoneNotFound)
        #expect(results[1].failureCode == .badRequest)
        #expect(try results[2].get().records.savedNames == ["a"])
        #expect(try results[3].get().records.isEmpty)
    }

    func recreatedZoneExpiresTokens() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("a")])
        let token = try await database.zoneChanges(since: nil).syncToken
        _ = try await database.modifyZones([.delete(notesZone)])
        try await database.makeZone()
        let results = try await database.fetchZoneChanges([ZoneChangesRequest(zoneID: notesZone, syncToken: token)])
        #expect(results[0].failureCode == .changeTokenExpired)
        // From the start, the new zone is empty.
        #expect(try await database.zoneChanges(since: nil).records.isEmpty)
    }

    func publicDatabaseHasNoDatabaseChanges() async throws {
        // Its one zone's feed is a Cumulus addition (Conformance+Public.swift); its zones never change.
        let database = try await backend.database(signedInAs: "alice", scope: .public)
        await expectCloudError(.badRequest) { try await database.fetchDatabaseChanges(since: nil, resultsLimit: nil) }
    }

    func databaseChanges() async throws {
        let database = try await device()
        // A new database has its default zone.
        let initial = try await database.fetchDatabaseChanges(since: nil, resultsLimit: nil)
        #expect(initial.changedZones == [.defaultZone])
        #expect(initial.deletedZones.isEmpty)
        #expect(!initial.moreComing)

        try await database.makeZone()
        try await database.makeZone(ZoneID(zoneName: "Other"))
        let afterCreate = try await database.fetchDatabaseChanges(since: initial.syncToken, resultsLimit: nil)
        #expect(afterCreate.changedZones == [notesZone, ZoneID(zoneName: "Other")])

        // A write marks its zone changed; a deletion lists it as deleted; each zone once.
        try await database.create([note("a")])
        try await database.create([note("b")])
        _ = try await database.modifyZones([.delete(ZoneID(zoneName: "Other"))])
        let later = try await database.fetchDatabaseChanges(since: afterCreate.syncToken, resultsLimit: nil)
        #expect(later.changedZones == [notesZone])
        #expect(later.deletedZones == [ZoneID(zoneName: "Other")])

        let caughtUp = try await database.fetchDatabaseChanges(since: later.syncToken, resultsLimit: nil)
        #expect(caughtUp.changedZones.isEmpty && caughtUp.deletedZones.isEmpty)
        #expect(caughtUp.syncToken == later.syncToken)

        await expectCloudError(.badRequest) {
            try await database.fetchDatabaseChanges(since: SyncToken(rawValue: "garbage"), resultsLimit: nil)
        }
    }

    func databaseChangesPaging() async throws {
        let database = try await device()
        let start = try await database.fetchDatabaseChanges(since: nil, resultsLimit: nil).syncToken
        let names = (0..<5).map { ZoneID(zoneName: "Z\($0)") }
        _ = try await database.modifyZones(names.map(ZoneOperation.create))
        var token = start
        var seen: [ZoneID] = []
        var pages = 0
        while true {
            let page = try await database.fetchDatabaseChanges(since: token, resultsLimit: 2)
            seen += page.changedZones
            token = page.syncToken
            pages += 1
            try #require(pages <= 3)
            if !page.moreComing { break }
        }
        #expect(pages == 3)
        #expect(seen == names)
    }
}

extension Result where Failure == CloudError {
    /// The error's code, if this is a failure.
    var failureCode: CloudError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
