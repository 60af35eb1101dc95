import Cumulus
import CumulusTesting
import Foundation
import Testing

extension CloudDatabaseConformance {
    /// Five notes with a title, a priority, a score, a date and tags; `e` has only a title.
    private func seedQueryRecords(_ database: any CloudDatabase) async throws {
        func day(_ n: Int) -> FieldValue { .timestamp(Date(timeIntervalSince1970: Double(n) * 86_400)) }
        try await database.create([
            note(
                "a",
                [
                    "title": .string("apple"), "priority": .int64(3), "score": .double(0.5), "due": day(1),
                    "tags": .stringList(["fruit", "red"]),
                ]),
            note(
                "b",
                [
                    "title": .string("banana"), "priority": .int64(1), "score": .double(1.5), "due": day(3),
                    "tags": .stringList(["fruit"]),
                ]),
            note(
                "c",
                [
                    "title": .string("apricot"), "priority": .int64(2), "score": .double(-1), "due": day(2),
                    "tags": .stringList(["orange"]),
                ]),
            note(
                "d",
                [
                    "title": .string("cherry"), "priority": .int64(3), "score": .double(2), "due": day(5),
                    "tags": .stringList([]),
                ]),
            note("e", ["title": .string("date")]),
            Record(recordType: "Task", recordName: "t", zoneID: notesZone, fields: ["title": .string("apple")]),
        ])
    }

    private func names(
        _ database: any CloudDatabase, _ filters: [QueryFilter], sort: [QuerySort] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String] {
        let result = try await database.queryRecords(
            RecordQuery(recordType: "Note", filters: filters, sort: sort), zoneID: notesZone, resultsLimit: nil,
            continuationMarker: nil, desiredKeys: nil)
        #expect(result.continuationMarker == nil, sourceLocation: sourceLocation)
        return result.records.map(\.recordName)
    }

    func queryComparators() async throws {
        let database = try await deviceWithZone()
        try await seedQueryRecords(database)
        let day2 = FieldValue.timestamp(Date(timeIntervalSince1970: 2 * 86_400))
        // With no sort, by record name.
        #expect(try await names(database, []) == ["a", "b", "c", "d", "e"])
        #expect(try await names(database, [QueryFilter("priority", .equals, .int64(3))]) == ["a", "d"])
        #expect(try await names(database, [QueryFilter("priority", .notEquals, .int64(3))]) == ["b", "c"])
        #expect(try await names(database, [QueryFilter("priority", .lessThan, .int64(3))]) == ["b", "c"])
        #expect(try await names(database, [QueryFilter("priority", .lessThanOrEquals, .int64(2))]) == ["b", "c"])
        #expect(try await names(database, [QueryFilter("score", .greaterThan, .double(0.5))]) == ["b", "d"])
        #expect(
            try await names(database, [QueryFilter("score", .greaterThanOrEquals, .double(0.5))]) == ["a", "b", "d"])
        #expect(try await names(database, [QueryFilter("due", .lessThanOrEquals, day2)]) == ["a", "c"])
        #expect(try await names(database, [QueryFilter("title", .greaterThan, .string("b"))]) == ["b", "d", "e"])
        #expect(try await names(database, [QueryFilter("title", .beginsWith, .string("ap"))]) == ["a", "c"])
        #expect(
            try await names(database, [QueryFilter("title", .in, .stringList(["date", "banana", "kiwi"]))])
                == ["b", "e"])
        #expect(try await names(database, [QueryFilter("tags", .listContains, .string("fruit"))]) == ["a", "b"])
        // Every filter must hold.
        #expect(
            try await names(
                database,
                [
                    QueryFilter("tags", .listContains, .string("fruit")),
                    QueryFilter("priority", .greaterThan, .int64(1)),
                ])
                == ["a"])
    }

    func queryMatchesSameTypeOnly() async throws {
        let database = try await deviceWithZone()
        try await seedQueryRecords(database)
        // An INT64 field never equals a DOUBLE or a STRING.
        #expect(try await names(database, [QueryFilter("priority", .equals, .double(3))]).isEmpty)
        #expect(try await names(database, [QueryFilter("priority", .lessThan, .string("9"))]).isEmpty)
        // A record without the field matches no filter on it, not even NOT_EQUALS.
        #expect(!(try await names(database, [QueryFilter("priority", .notEquals, .int64(0))]).contains("e")))
    }

    func queryRefusesBadComparisons() async throws {
        let database = try await deviceWithZone()
        let bad = [
            QueryFilter("tags", .lessThan, .stringList(["a"])),
            QueryFilter("data", .greaterThan, .bytes(Data([1]))),
            QueryFilter("title", .beginsWith, .int64(1)),
            QueryFilter("title", .in, .string("apple")),
            QueryFilter("tags", .listContains, .stringList(["fruit"])),
        ]
        for filter in bad {
            await expectCloudError(.badRequest) {
                try await database.queryRecords(
                    RecordQuery(recordType: "Note", filters: [filter]), zoneID: notesZone, resultsLimit: nil,
                    continuationMarker: nil, desiredKeys: nil)
            }
        }
        await expectCloudError(.badRequest) {
            try await database.queryRecords(
                RecordQuery(recordType: "Note"), zoneID: notesZone, resultsLimit: 0, continuationMarker: nil,
                desiredKeys: nil)
        }
    }

    func querySorts() async throws {
        let database = try await deviceWithZone()
        try await seedQueryRecords(database)
        #expect(try await names(database, [], sort: [QuerySort("title")]) == ["a", "c", "b", "d", "e"])
        #expect(
            try await names(database, [], sort: [QuerySort("title", ascending: false)]) == ["e", "d", "b", "c", "a"])
        // Records without the field come last either way; ties go by name.
        #expect(
            try await names(database, [], sort: [QuerySort("priority", ascending: false)]) == ["a", "d", "c", "b", "e"])
        #expect(
            try await names(database, [], sort: [QuerySort("priority"), QuerySort("score", ascending: false)])
                == ["b", "c", "d", "a", "e"])
        #expect(try await names(database, [], sort: [QuerySort("due", ascending: false)]) == ["d", "b", "c", "a", "e"])
    }

    func queryPages() async throws {
        let database = try await deviceWithZone()
        try await database.create((0..<7).map { note(String(format: "n%02d", $0), ["i": .int64(Int64($0))]) })
        var seen: [String] = []
        var marker: String?
        var pages = 0
        repeat {
            let page = try await database.queryRecords(
                RecordQuery(recordType: "Note", sort: [QuerySort("i", ascending: false)]), zoneID: notesZone,
                resultsLimit: 3, continuationMarker: marker, desiredKeys: nil)
            #expect(page.records.count == (pages < 2 ? 3 : 1))
            seen += page.records.map(\.recordName)
            marker = page.continuationMarker
            pages += 1
            try #require(pages <= 3)
        } while marker != nil
        #expect(seen == ["n06", "n05", "n04", "n03", "n02", "n01", "n00"])

        await expectCloudError(.badRequest) {
            try await database.queryRecords(
                RecordQuery(recordType: "Note"), zoneID: notesZone, resultsLimit: 3,
                continuationMarker: "not a marker", desiredKeys: nil)
        }
    }

    func queryTypeAndDesiredKeys() async throws {
        let database = try await deviceWithZone()
        try await seedQueryRecords(database)
        let tasks = try await database.queryRecords(
            RecordQuery(recordType: "Task"), zoneID: notesZone, resultsLimit: nil, continuationMarker: nil,
            desiredKeys: nil)
        #expect(tasks.records.map(\.recordName) == ["t"])
        let keyed = try await database.queryRecords(
            RecordQuery(recordType: "Note", filters: [QueryFilter("title", .equals, .string("apple"))]),
            zoneID: notesZone, resultsLimit: nil, continuationMarker: nil, desiredKeys: ["priority"])
        #expect(keyed.records.map(\.fields) == [["priority": .int64(3)]])
        #expect(keyed.records.first?.changeTag != nil)
    }
}
