import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    static let listAndPlaceQueryChecks: [Check] = [
        Check("query filters list members by prefix and lists by any or all of a list") {
            try await $0.queryListMembers()
        },
        Check("query finds locations within a distance and sorts by distance") { try await $0.queryNear() },
    ]

    private func queryNames(
        _ database: any CloudDatabase, _ filters: [QueryFilter], sort: [QuerySort] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [String] {
        let result = try await database.queryRecords(
            RecordQuery(recordType: "Note", filters: filters, sort: sort), zoneID: notesZone, resultsLimit: nil,
            continuationMarker: nil, desiredKeys: nil)
        return result.records.map(\.recordName)
    }

    func queryListMembers() async throws {
        let database = try await deviceWithZone()
        try await database.create([
            note("a", ["tags": .stringList(["fruit", "red"]), "sizes": .int64List([1, 2])]),
            note("b", ["tags": .stringList(["fresh"]), "sizes": .int64List([2])]),
            note("c", ["tags": .stringList(["orange"]), "sizes": .int64List([])]),
            note("d", ["tags": .stringList([])]),
            note("e", ["title": .string("no tags")]),
        ])
        func names(_ filter: QueryFilter) async throws -> [String] { try await queryNames(database, [filter]) }
        #expect(try await names(QueryFilter("tags", .listMemberBeginsWith, .string("fr"))) == ["a", "b"])
        #expect(try await names(QueryFilter("tags", .listMemberBeginsWith, .string("re"))) == ["a"])
        // A record without the field matches neither.
        #expect(try await names(QueryFilter("tags", .notListMemberBeginsWith, .string("fr"))) == ["c", "d"])
        #expect(try await names(QueryFilter("tags", .listContainsAny, .stringList(["red", "orange"]))) == ["a", "c"])
        #expect(try await names(QueryFilter("tags", .listContainsAll, .stringList(["red", "fruit"]))) == ["a"])
        #expect(try await names(QueryFilter("tags", .listContainsAll, .stringList(["red", "blue"]))).isEmpty)
        #expect(try await names(QueryFilter("sizes", .listContainsAny, .int64List([2, 9]))) == ["a", "b"])
        #expect(try await names(QueryFilter("sizes", .listContainsAll, .int64List([]))) == ["a", "b", "c"])
        // A list of another element type matches nothing.
        #expect(try await names(QueryFilter("sizes", .listContainsAny, .stringList(["2"]))).isEmpty)
        for bad in [
            QueryFilter("tags", .listMemberBeginsWith, .int64(1)),
            QueryFilter("tags", .listContainsAny, .string("red")),
            QueryFilter("___recordID", .listContainsAll, .stringList(["a"])),
        ] {
            await expectCloudError(.badRequest) { try await names(bad) }
        }
    }

    func queryNear() async throws {
        let database = try await deviceWithZone()
        let paris = Location(latitude: 48.8566, longitude: 2.3522)
        try await database.create([
            // About 1.2 km, 4.2 km, 344 km and 878 km from Paris.
            note("louvre", ["place": .location(Location(latitude: 48.8606, longitude: 2.3376))]),
            note("tour", ["place": .location(Location(latitude: 48.8584, longitude: 2.2945))]),
            note("london", ["place": .location(Location(latitude: 51.5074, longitude: -0.1278))]),
            note("berlin", ["place": .location(Location(latitude: 52.52, longitude: 13.405))]),
            note("nowhere", ["title": .string("Paris")]),
        ])
        #expect(try await queryNames(database, [.near("place", paris, within: 2_000)]) == ["louvre"])
        #expect(try await queryNames(database, [.near("place", paris, within: 5_000)]) == ["louvre", "tour"])
        let byDistance = [QuerySort("place", distanceFrom: paris)]
        #expect(
            try await queryNames(database, [.near("place", paris, within: 400_000)], sort: byDistance)
                == ["louvre", "tour", "london"])
        // Records without a location sort last, whatever the direction.
        #expect(
            try await queryNames(database, [], sort: byDistance) == ["louvre", "tour", "london", "berlin", "nowhere"])
        #expect(
            try await queryNames(database, [], sort: [QuerySort("place", distanceFrom: paris, ascending: false)])
                == ["berlin", "london", "tour", "louvre", "nowhere"])
        for bad in [
            QueryFilter("place", .near, .location(paris)),
            QueryFilter("place", .near, .location(paris), distance: -1),
            QueryFilter("place", .near, .string("Paris"), distance: 10),
        ] {
            await expectCloudError(.badRequest) { try await queryNames(database, [bad]) }
        }
    }
}
