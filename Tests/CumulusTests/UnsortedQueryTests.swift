import CloudCodable
import CloudProtocol
import CumulusTesting
import Foundation
import Testing

/// A query without a sort key pages through the matches in byte order of
/// their names, whatever else the zone holds, as a query sorted by the
/// records' own names would.
@Suite("Queries without a sort key")
struct UnsortedQueryTests {
    @Test("every page, followed by its marker, lists the matches of the type in byte order of their names")
    func pagesInByteOrder() async throws {
        let server = InMemoryCloudServer()
        let database = server.database(signedInAs: "alice")
        let zone = ZoneID(zoneName: "Mixed")
        _ = try await database.modifyZones([.create(zone)])
        // Names whose byte order differs from a linguistic one, among other types, over several storage batches.
        var generator = SystemRandomNumberGenerator()
        var records: [Record] = []
        for index in 0..<700 {
            let stem = ["é", "e\u{301}", "B", "b", "_", "~", "Z"][index % 7]
            let type = index % 3 == 0 ? "Other" : "Note"
            let count = Int64.random(in: 0..<100, using: &generator)
            records.append(
                Record(
                    recordType: type, recordName: "\(stem)\(index)", zoneID: zone,
                    fields: ["count": .int64(count)]))
        }
        for start in stride(from: 0, to: records.count, by: 200) {
            let batch = records[start..<min(start + 200, records.count)]
            let results = try await database.modifyRecords(
                batch.map { RecordOperation(.create, $0) }, zoneID: zone, atomic: true)
            #expect(results.allSatisfy { $0.record != nil })
        }
        let query = RecordQuery(recordType: "Note", filters: [QueryFilter("count", .lessThan, .int64(40))])
        let expected =
            records
            .filter {
                $0.recordType == "Note"
                    && ($0["count"].flatMap { if case .int64(let n) = $0 { n } else { nil } } ?? 100) < 40
            }
            .map(\.recordName)
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(expected.count > 100)

        var found: [String] = []
        var marker: String?
        repeat {
            let page = try await database.queryRecords(
                query, zoneID: zone, resultsLimit: 17, continuationMarker: marker, desiredKeys: nil)
            #expect(page.records.count <= 17)
            found += page.records.map(\.recordName)
            marker = page.continuationMarker
        } while marker != nil
        #expect(found.map { Array($0.utf8) } == expected.map { Array($0.utf8) })

        // The same query sorted by the records' names gives the same pages.
        let sorted = RecordQuery(recordType: "Note", filters: query.filters, sort: [QuerySort("___recordID")])
        let first = try await database.queryRecords(
            sorted, zoneID: zone, resultsLimit: 17, continuationMarker: nil, desiredKeys: nil)
        #expect(first.records.map { Array($0.recordName.utf8) } == expected.prefix(17).map { Array($0.utf8) })
    }
}

/// Record names are identities in queries too: compared, matched by prefix
/// and sorted by their bytes.
@Suite("Queries on record names")
struct RecordNameQueryTests {
    static let zone = ZoneID(zoneName: "Names")

    static func database(names: [String]) async throws -> InMemoryCloudDatabase {
        let database = InMemoryCloudServer().database(signedInAs: "alice")
        _ = try await database.modifyZones([.create(zone)])
        let records = names.map { Record(recordType: "Note", recordName: $0, zoneID: zone) }
        for start in stride(from: 0, to: records.count, by: 200) {
            let batch = records[start..<min(start + 200, records.count)]
            _ = try await database.modifyRecords(batch.map { RecordOperation(.create, $0) }, zoneID: zone, atomic: true)
        }
        return database
    }

    static func names(
        _ database: InMemoryCloudDatabase, _ filters: [QueryFilter], sort: [QuerySort] = [], pageSize: Int = 200
    ) async throws -> [[UInt8]] {
        var found: [[UInt8]] = []
        var marker: String?
        repeat {
            let page = try await database.queryRecords(
                RecordQuery(recordType: "Note", filters: filters, sort: sort), zoneID: zone, resultsLimit: pageSize,
                continuationMarker: marker, desiredKeys: nil)
            found += page.records.map { Array($0.recordName.utf8) }
            marker = page.continuationMarker
        } while marker != nil
        return found
    }

    @Test("a name is equal to, begins with and sorts by its bytes, not by canonical equivalence")
    func namesAreBytes() async throws {
        let composed = "\u{E9}"
        let decomposed = "e\u{301}"
        let database = try await Self.database(names: [
            composed, decomposed, composed + "x", decomposed + "x", "ex", "f",
        ])
        let id = "___recordID"
        #expect(try await Self.names(database, [QueryFilter(id, .equals, .string(composed))]) == [Array(composed.utf8)])
        #expect(
            try await Self.names(database, [QueryFilter(id, .beginsWith, .string(composed))])
                == [composed, composed + "x"].map { Array($0.utf8) })
        #expect(
            try await Self.names(database, [QueryFilter(id, .beginsWith, .string("e"))])
                == ["ex", decomposed, decomposed + "x"].map { Array($0.utf8) })
        #expect(
            try await Self.names(database, [QueryFilter(id, .in, .stringList([decomposed]))])
                == [Array(decomposed.utf8)])
        #expect(
            try await Self.names(database, [QueryFilter(id, .notEquals, .string(composed))]).count == 5)
        let byBytes = [composed, decomposed, composed + "x", decomposed + "x", "ex", "f"].map { Array($0.utf8) }
            .sorted { $0.lexicographicallyPrecedes($1) }
        #expect(try await Self.names(database, [], sort: [QuerySort(id)]) == byBytes)
        #expect(try await Self.names(database, [], sort: [QuerySort(id, ascending: false)]) == byBytes.reversed())
    }

    @Test("a name prefix pages through exactly the names that begin with it, the prefix itself first")
    func prefixPages() async throws {
        var names = (0..<450).map { "p-\($0)" } + (0..<300).map { "a-\($0)" } + (0..<300).map { "q-\($0)" }
        names += ["p-", "p", "p\u{301}-1"]
        let database = try await Self.database(names: names)
        let expected = names.filter { $0.utf8.starts(with: "p-".utf8) }.map { Array($0.utf8) }
            .sorted { $0.lexicographicallyPrecedes($1) }
        let found = try await Self.names(
            database, [QueryFilter("___recordID", .beginsWith, .string("p-"))], pageSize: 17)
        #expect(found.first == Array("p-".utf8))
        #expect(found == expected)
    }
}
