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

    func queryNegatedComparators() async throws {
        let database = try await deviceWithZone()
        try await seedQueryRecords(database)
        // `e` has no priority and no tags: it matches none of these.
        #expect(try await names(database, [QueryFilter("priority", .notIn, .int64List([3]))]) == ["b", "c"])
        #expect(try await names(database, [QueryFilter("priority", .notIn, .int64List([]))]) == ["a", "b", "c", "d"])
        #expect(try await names(database, [QueryFilter("title", .notBeginsWith, .string("ap"))]) == ["b", "d", "e"])
        #expect(try await names(database, [QueryFilter("tags", .notListContains, .string("fruit"))]) == ["c", "d"])
        // A field of another type matches none either.
        #expect(try await names(database, [QueryFilter("priority", .notIn, .doubleList([3]))]).isEmpty)
        #expect(try await names(database, [QueryFilter("tags", .notListContains, .int64(1))]).isEmpty)
        #expect(try await names(database, [QueryFilter("priority", .notBeginsWith, .string("x"))]).isEmpty)
    }

    func queryTokens() async throws {
        let database = try await deviceWithZone()
        try await database.create([
            note("a", ["title": .string("Crème brûlée, with berries")]),
            note("b", ["title": .string("berry tart")]),
            note("c", ["title": .string("Apple-pie & cream!")]),
            note("d", ["title": .int64(7)]),
        ])
        func tokens(_ comparator: QueryComparator, _ words: String) async throws -> [String] {
            try await names(database, [QueryFilter("title", comparator, .string(words))])
        }
        // Whole words, whatever the case, diacritics and punctuation.
        #expect(try await tokens(.containsAllTokens, "creme BRULEE") == ["a"])
        #expect(try await tokens(.containsAllTokens, "pie, apple") == ["c"])
        #expect(try await tokens(.containsAllTokens, "berry cream").isEmpty)
        #expect(try await tokens(.containsAnyTokens, "berry cream") == ["b", "c"])
        #expect(try await tokens(.containsAnyTokens, "berr 7").isEmpty)
    }

    func querySystemFieldNames() async throws {
        let database = try await deviceWithZone()
        try await seedQueryRecords(database)
        let user = try await database.currentUser().userRecordName
        func reference(_ name: String) -> Reference { Reference(recordName: name, zoneID: notesZone) }
        #expect(try await names(database, [QueryFilter("___recordID", .equals, .reference(reference("b")))]) == ["b"])
        #expect(try await names(database, [QueryFilter("___recordID", .equals, .string("c"))]) == ["c"])
        #expect(
            try await names(
                database, [QueryFilter("___recordID", .in, .referenceList([reference("d"), reference("a")]))])
                == ["a", "d"])
        #expect(
            try await names(database, [QueryFilter("___recordID", .notIn, .stringList(["a", "e"]))]) == ["b", "c", "d"])
        #expect(try await names(database, [QueryFilter("___recordID", .greaterThan, .string("c"))]) == ["d", "e"])
        #expect(
            try await names(database, [], sort: [QuerySort("___recordID", ascending: false)])
                == ["e", "d", "c", "b", "a"])
        let everyone = ["a", "b", "c", "d", "e"]
        #expect(try await names(database, [QueryFilter("___createdBy", .equals, .string(user))]) == everyone)
        #expect(
            try await names(database, [QueryFilter("___modifiedBy", .equals, .reference(Reference(recordName: user)))])
                == everyone)
        #expect(try await names(database, [QueryFilter("___createdBy", .notEquals, .string(user))]).isEmpty)
        #expect(
            try await names(database, [], sort: [QuerySort("___createdBy"), QuerySort("title", ascending: false)])
                == ["e", "d", "b", "c", "a"])
    }

    func querySystemFieldTimes() async throws {
        let database = try await deviceWithZone()
        // Created in the reverse of their names' order, a little apart so
        // that the server's millisecond stamps differ.
        var saved: [String: Record] = [:]
        for name in ["z", "y", "x"] {
            try await Task.sleep(for: .milliseconds(3))
            let record = try #require(try await database.create([note(name, ["n": .int64(1)])]).first)
            saved[name] = record
        }
        try await Task.sleep(for: .milliseconds(3))
        var changed = try #require(saved["z"])
        changed["n"] = .int64(2)
        saved["z"] = try requireRecord(try await database.modify(RecordOperation(.update, changed)))

        // The expected orders come from the stamps the server gave, ties by name.
        func stamp(_ name: String, _ keyPath: KeyPath<RecordMetadata, RecordStamp?>) throws -> Int64 {
            try #require(saved[name]?.metadata?[keyPath: keyPath]).timestamp
        }
        func order(_ keyPath: KeyPath<RecordMetadata, RecordStamp?>, ascending: Bool) throws -> [String] {
            let keyed = try saved.keys.map { (try stamp($0, keyPath), $0) }
            return keyed.sorted { $0.0 != $1.0 ? (ascending ? $0.0 < $1.0 : $0.0 > $1.0) : $0.1 < $1.1 }.map(\.1)
        }
        #expect(
            try await names(database, [], sort: [QuerySort("___createTime")]) == (try order(\.created, ascending: true))
        )
        #expect(
            try await names(database, [], sort: [QuerySort("___createTime", ascending: false)])
                == (try order(\.created, ascending: false)))
        #expect(
            try await names(database, [], sort: [QuerySort("___modTime", ascending: false)])
                == (try order(\.modified, ascending: false)))

        // Filters compare with the stamps to the millisecond.
        func time(_ ms: Int64) -> FieldValue { .timestamp(Date(timeIntervalSince1970: Double(ms) / 1000)) }
        let yCreated = try stamp("y", \.created)
        let expectedBefore = try saved.keys.filter { try stamp($0, \.created) < yCreated }.sorted()
        #expect(try await names(database, [QueryFilter("___createTime", .lessThan, time(yCreated))]) == expectedBefore)
        #expect(
            try await names(database, [QueryFilter("___createTime", .equals, time(yCreated))])
                == (try saved.keys.filter { try stamp($0, \.created) == yCreated }.sorted()))
        let xModified = try stamp("x", \.modified)
        let expectedAfter = try saved.keys.filter { try stamp($0, \.modified) > xModified }.sorted()
        #expect(try await names(database, [QueryFilter("___modTime", .greaterThan, time(xModified))]) == expectedAfter)
        // The update moved `z`'s modification time past its creation time.
        #expect(try stamp("z", \.modified) >= (try stamp("z", \.created)))
    }

    func queryRefusesBadComparisons() async throws {
        let database = try await deviceWithZone()
        let bad = [
            QueryFilter("tags", .lessThan, .stringList(["a"])),
            QueryFilter("data", .greaterThan, .bytes(Data([1]))),
            QueryFilter("title", .beginsWith, .int64(1)),
            QueryFilter("title", .in, .string("apple")),
            QueryFilter("tags", .listContains, .stringList(["fruit"])),
            QueryFilter("title", .notIn, .string("apple")),
            QueryFilter("title", .notBeginsWith, .int64(1)),
            QueryFilter("tags", .notListContains, .stringList(["fruit"])),
            QueryFilter("title", .containsAllTokens, .int64(1)),
            QueryFilter("title", .containsAnyTokens, .string(" ,. ")),
            QueryFilter("___recordID", .equals, .int64(1)),
            QueryFilter("___recordID", .listContains, .string("a")),
            QueryFilter("___createTime", .lessThan, .string("2020")),
            QueryFilter("___modTime", .in, .int64List([1])),
            QueryFilter("___createdBy", .equals, .timestamp(Date(timeIntervalSince1970: 0))),
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
