import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("CloudService records")
struct ServiceRecordTests {
    @Test func createThenUpdateWithTagsAndConflicts() async throws {
        let fixture = try await ServiceFixture.make()
        let service = fixture.service
        let alice = caller("alice")
        try await service.createZone(as: alice)

        let created = try await service.modify([RecordOperation(.create, note("a"))], as: alice)
        let record = try #require(created[0].record)
        let tag = try #require(record.changeTag)
        #expect(record.metadata?.created?.userRecordName == "alice")

        let again = try await service.modify([RecordOperation(.create, note("a"))], as: alice)
        #expect(again[0].error?.code == .exists)
        #expect(again[0].error?.serverRecord == record)

        let updated = try await service.modify([RecordOperation(.update, note("a", title: "u", tag: tag))], as: alice)
        let newTag = try #require(updated[0].record?.changeTag)
        #expect(newTag != tag)

        let stale = try await service.modify([RecordOperation(.update, note("a", title: "x", tag: tag))], as: alice)
        #expect(stale[0].error?.code == .conflict)
        #expect(stale[0].error?.serverRecord?.changeTag == newTag)

        let missing = try await service.modify([RecordOperation(.forceDelete, note("zz"))], as: alice)
        #expect(missing[0].error?.code == .notFound)
        try await fixture.tearDown()
    }

    @Test func atomicRequestInCustomZoneFailsWhole() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        _ = try await fixture.service.modify([RecordOperation(.create, note("a"))], as: alice)
        let results = try await fixture.service.modify(
            [RecordOperation(.create, note("b")), RecordOperation(.create, note("a"))], atomic: true, as: alice)
        #expect(results[0].error?.code == .atomicError)
        #expect(results[1].error?.code == .exists)
        #expect(try await fixture.service.lookup(["b"], as: alice)[0].error?.code == .notFound)

        // In the default zone atomic has no effect.
        let zone = ZoneID.defaultZone
        _ = try await fixture.service.modify([RecordOperation(.create, note("a", zone: zone))], zone: zone, as: alice)
        let mixed = try await fixture.service.modify(
            [RecordOperation(.create, note("b", zone: zone)), RecordOperation(.create, note("a", zone: zone))],
            zone: zone, atomic: true, as: alice)
        #expect(mixed[0].record != nil)
        #expect(mixed[1].error?.code == .exists)
        try await fixture.tearDown()
    }

    @Test func requestRules() async throws {
        let fixture = try await ServiceFixture.make(recordSizeLimit: 100)
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        let tooMany = (0..<201).map { RecordOperation(.create, note("r\($0)")) }
        await #expect(throws: CloudError.self) { try await fixture.service.modify(tooMany, as: alice) }
        await #expect(throws: CloudError.self) {
            try await fixture.service.modify(
                [RecordOperation(.create, note("d")), RecordOperation(.forceUpdate, note("d"))], as: alice)
        }
        let big = note("big", title: String(repeating: "x", count: 200))
        let other = note("o", zone: .defaultZone)
        var retyped = note("a")
        let results = try await fixture.service.modify(
            [
                RecordOperation(.create, big), RecordOperation(.create, other), RecordOperation(.create, note("a")),
                RecordOperation(.create, note("")),
            ],
            as: alice)
        #expect(results[0].error?.code == .badRequest)
        #expect(results[1].error?.code == .badRequest)
        #expect(results[2].record != nil)
        #expect(UUID(uuidString: results[3].record?.recordName ?? "") != nil)
        retyped.recordType = "Other"
        let typeChange = try await fixture.service.modify([RecordOperation(.forceReplace, retyped)], as: alice)
        #expect(typeChange[0].error?.code == .badRequest)
        let missingZone = try await fixture.service.modify(
            [RecordOperation(.create, note("z", zone: ZoneID(zoneName: "Nope")))], zone: ZoneID(zoneName: "Nope"),
            as: alice)
        #expect(missingZone[0].error?.code == .zoneNotFound)
        try await fixture.tearDown()
    }

    @Test func referencesValidateAndCascade() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        var child = note("child")
        child.fields["parent"] = .reference(Reference(recordName: "parent", action: .deleteSelf))
        var grandchild = note("grandchild")
        grandchild.fields["parent"] = .reference(Reference(recordName: "child", action: .deleteSelf))
        var dangling = note("dangling")
        dangling.fields["target"] = .reference(Reference(recordName: "missing", action: .validate))
        let results = try await fixture.service.modify(
            [
                RecordOperation(.create, note("parent")), RecordOperation(.create, child),
                RecordOperation(.create, grandchild), RecordOperation(.create, dangling),
            ],
            as: alice)
        #expect(results[3].error?.code == .validatingReferenceError)
        #expect(results[0..<3].allSatisfy { $0.record != nil })

        let deleted = try await fixture.service.modify([RecordOperation(.forceDelete, note("parent"))], as: alice)
        #expect(deleted[0] == .deleted(recordName: "parent", zoneID: notesZone))
        let lookup = try await fixture.service.lookup(["child", "grandchild"], as: alice)
        #expect(lookup.allSatisfy { $0.error?.code == .notFound })
        try await fixture.tearDown()
    }

    @Test func quotaStopsSavesNotDeletes() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        _ = try await fixture.service.modify([RecordOperation(.create, note("a"))], as: alice)
        try await fixture.service.setQuotaExceeded(
            true, forUser: "alice", container: "iCloud.test", environment: .development)
        let saved = try await fixture.service.modify([RecordOperation(.create, note("b"))], as: alice)
        #expect(saved[0].error?.code == .quotaExceeded)
        let deleted = try await fixture.service.modify([RecordOperation(.forceDelete, note("a"))], as: alice)
        #expect(deleted[0].error == nil)
        try await fixture.tearDown()
    }

    @Test func twoHundredRecordsInOneRequest() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        let operations = (0..<200).map { RecordOperation(.create, note("r\($0)"), desiredKeys: []) }
        let results = try await fixture.service.modify(operations, as: alice)
        #expect(results.allSatisfy { $0.record?.fields.isEmpty == true })
        let tags = Set(results.compactMap { $0.record?.changeTag })
        #expect(tags.count == 200)
        try await fixture.tearDown()
    }

    @Test func queryFiltersSortsAndPages() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        let operations = (0..<5).map { index -> RecordOperation in
            var record = note("n\(index)", title: "title \(index)")
            record.fields["rank"] = .int64(Int64(10 - index))
            return RecordOperation(.create, record)
        }
        _ = try await fixture.service.modify(operations, as: alice)
        let query = RecordQuery(
            recordType: "Note", filters: [QueryFilter("rank", .greaterThan, .int64(6))], sort: [QuerySort("rank")])
        var names: [String] = []
        var marker: String?
        repeat {
            guard
                case .query(let page) = try await fixture.service.perform(
                    .queryRecords(
                        query, zoneID: notesZone, resultsLimit: 2, continuationMarker: marker, desiredKeys: nil),
                    as: alice)
            else {
                Issue.record("not a query answer")
                break
            }
            names += page.records.map(\.recordName)
            marker = page.continuationMarker
        } while marker != nil
        #expect(names == ["n3", "n2", "n1", "n0"])
        await #expect(throws: CloudError.self) {
            try await fixture.service.perform(
                .queryRecords(
                    RecordQuery(recordType: "Note", filters: [QueryFilter("rank", .beginsWith, .int64(1))]),
                    zoneID: notesZone, resultsLimit: nil, continuationMarker: nil, desiredKeys: nil),
                as: alice)
        }
        try await fixture.tearDown()
    }

    @Test func concurrentUpdatesWithOneTagLetExactlyOneWin() async throws {
        let fixture = try await ServiceFixture.make()
        let service = fixture.service
        let alice = caller("alice")
        try await service.createZone(as: alice)
        let created = try await service.modify([RecordOperation(.create, note("a"))], as: alice)
        let tag = try #require(created[0].record?.changeTag)
        let results = try await withThrowingTaskGroup(of: RecordResult.self) { group in
            for index in 0..<8 {
                group.addTask {
                    try await service.modify(
                        [RecordOperation(.update, note("a", title: "writer \(index)", tag: tag))], as: alice)[0]
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter { $0.record != nil }.count == 1)
        #expect(results.filter { $0.error?.code == .conflict }.count == 7)
        try await fixture.tearDown()
    }
}
