import Cumulus
import CumulusTesting
import Testing

/// A precomposed name and its decomposed twin: equal to Swift's `String ==`,
/// different bytes to every store.
let composed = "caf\u{E9}"
let decomposed = "cafe\u{301}"

/// Whether two names are the same bytes.
func sameBytes(_ lhs: String, _ rhs: String) -> Bool {
    Array(lhs.utf8) == Array(rhs.utf8)
}

extension CloudDatabaseConformance {
    func namesWithNULAreRefused() async throws {
        let alice = try await deviceWithZone("alice")
        await expectCloudError(.badRequest) { try await alice.create([note("a\u{0}b")]) }
        await expectCloudError(.badRequest) {
            try await alice.create([Record(recordType: "No\u{0}te", recordName: "typed", zoneID: notesZone)])
        }
        await expectCloudError(.badRequest) { try await alice.create([note("field", ["ti\u{0}tle": .int64(1)])]) }
        await expectCloudError(.badRequest) {
            try await alice.create([note("ref", ["r": .reference(Reference(recordName: "x\u{0}y"))])])
        }
        await expectCloudError(.badRequest) {
            try await alice.lookupRecords(["a\u{0}b"], zoneID: notesZone, desiredKeys: nil)
        }
        await expectCloudError(.badRequest) {
            try await alice.modifyZones([.create(ZoneID(zoneName: "Odd\u{0}b"))])
        }
        await expectCloudError(.badRequest) {
            try await alice.modifySubscriptions([.save(Subscription(subscriptionID: "s\u{0}1", zoneID: notesZone))])
        }
        for query in [
            RecordQuery(recordType: "No\u{0}te"),
            RecordQuery(recordType: "Note", filters: [QueryFilter("ti\u{0}tle", .equals, .string("x"))]),
            RecordQuery(recordType: "Note", sort: [QuerySort("ti\u{0}tle")]),
        ] {
            await expectCloudError(.badRequest) {
                try await alice.modifySubscriptions([
                    .save(Subscription(subscriptionID: "q1", query: query, zoneID: notesZone))
                ])
            }
        }
        // Nothing was written under a cut name.
        #expect(try await alice.fetch("a") == nil)
        #expect(try await alice.listZones().map(\.zoneID.zoneName).sorted() == ["Notes", "_defaultZone"])
        #expect(try await alice.listSubscriptions().isEmpty)
    }

    func nulNameCannotReachAnotherUsersPublicRecord() async throws {
        let zone = ZoneID.defaultZone
        let alice = try await backend.database(signedInAs: "alice", scope: .public)
        let bob = try await backend.database(signedInAs: "bob", scope: .public)
        let original = try #require(
            try await alice.create([note("pubtwin", in: zone, ["title": .string("mine")])], in: zone).first)

        await expectCloudError(.badRequest) {
            try await bob.create([note("pubtwin\u{0}x", in: zone, ["title": .string("twin")])], in: zone)
        }
        await expectCloudError(.badRequest) {
            try await bob.modifyRecords(
                [
                    RecordOperation(.forceUpdate, note("pubtwin\u{0}x", in: zone, ["title": .string("twin")])),
                    RecordOperation(.forceUpdate, note("pubtwin", in: zone, ["title": .string("PWNED")])),
                ], zoneID: zone, atomic: false)
        }
        await expectCloudError(.badRequest) {
            try await bob.modifyRecords(
                [RecordOperation(.forceDelete, note("pubtwin\u{0}x", in: zone))], zoneID: zone, atomic: false)
        }
        // And without the twin, bob may not touch alice's record at all.
        expectFailure(
            try await bob.modify(
                RecordOperation(.forceUpdate, note("pubtwin", in: zone, ["title": .string("x")])), in: zone),
            .accessDenied)
        let kept = try #require(try await alice.fetch("pubtwin", in: zone))
        #expect(kept == original)
        #expect(kept.metadata?.created?.userRecordName == original.metadata?.created?.userRecordName)
    }

    func recordNamesAreExactBytes() async throws {
        let alice = try await deviceWithZone("alice")
        try await alice.create([note(composed, ["v": .int64(1)]), note(decomposed, ["v": .int64(2)])])
        // A second create of either is EXISTS, not an overwrite of the other.
        expectFailure(try await alice.modify(RecordOperation(.create, note(decomposed))), .exists)
        let results = try await alice.lookupRecords([composed, decomposed], zoneID: notesZone, desiredKeys: nil)
        let first = try requireRecord(results[0])
        let second = try requireRecord(results[1])
        #expect(sameBytes(first.recordName, composed) && first["v"] == .int64(1))
        #expect(sameBytes(second.recordName, decomposed) && second["v"] == .int64(2))

        // Names that differ in case are different records.
        try await alice.create([note("Case", ["v": .int64(3)]), note("case", ["v": .int64(4)])])
        #expect(try await alice.fetch("Case")?["v"] == .int64(3))
        #expect(try await alice.fetch("case")?["v"] == .int64(4))

        // The changes name each record by its own bytes.
        let changed = try await alice.zoneChanges(since: nil).records.compactMap(\.record).map(\.recordName)
        #expect(changed.filter { sameBytes($0, composed) }.count == 1)
        #expect(changed.filter { sameBytes($0, decomposed) }.count == 1)

        // Deleting one leaves the other.
        let deleted = try await alice.modify(RecordOperation(.forceDelete, note(composed)))
        #expect(deleted.error == nil)
        #expect(try await alice.fetch(composed) == nil)
        #expect(try await alice.fetch(decomposed)?["v"] == .int64(2))
    }

    func zoneNamesAreExactBytes() async throws {
        let alice = try await device("alice")
        let precomposed = ZoneID(zoneName: "Odd" + composed)
        let twin = ZoneID(zoneName: "Odd" + decomposed)
        let created = try await alice.modifyZones([.create(precomposed), .create(twin)])
        #expect(created.count == 2)
        let names = try await alice.listZones().map(\.zoneID.zoneName)
        #expect(names.filter { sameBytes($0, precomposed.zoneName) }.count == 1)
        #expect(names.filter { sameBytes($0, twin.zoneName) }.count == 1)

        try await alice.create([note("in-twin", in: twin, ["v": .int64(1)])], in: twin)
        #expect(try await alice.fetch("in-twin", in: precomposed) == nil)
        #expect(try await alice.fetch("in-twin", in: twin)?["v"] == .int64(1))

        // Deleting the twin leaves the other zone.
        let deleted = try await alice.modifyZones([.delete(twin)])
        if case .failure(let error) = deleted.first { Issue.record("\(error)") }
        let left = try await alice.listZones().map(\.zoneID.zoneName)
        #expect(left.contains { sameBytes($0, precomposed.zoneName) })
        #expect(!left.contains { sameBytes($0, twin.zoneName) })
        let zone = ZoneID(zoneName: "Zone")
        let lower = ZoneID(zoneName: "zone")
        _ = try await alice.modifyZones([.create(zone), .create(lower)])
        try await alice.create([note("upper", in: zone)], in: zone)
        #expect(try await alice.fetch("upper", in: lower) == nil)
    }

    func fieldNamesAndTypesAreExactBytes() async throws {
        let alice = try await deviceWithZone("alice")
        // Not a dictionary literal: Swift's `Dictionary` would merge the two names.
        var record = note("fields")
        record.fields.updateValue(.int64(1), forKey: composed)
        record.fields.updateValue(.int64(2), forKey: decomposed)
        record.fields.updateValue(.int64(3), forKey: "Case")
        #expect(record.fields.count == 3)
        let saved = try await alice.create([record])
        let fetched = try #require(try await alice.fetch("fields"))
        #expect(fetched.fields.count == 3)
        #expect(fetched[composed] == .int64(1) && fetched[decomposed] == .int64(2) && fetched["Case"] == .int64(3))
        #expect(fetched.fields.keys.filter { sameBytes($0, decomposed) }.count == 1)
        #expect(saved.first?.fields == fetched.fields)

        // Record types that differ in bytes or case are different types.
        let types = ["Kind" + composed, "Kind" + decomposed, "kind" + composed]
        try await alice.create(
            types.enumerated().map { index, type in
                Record(
                    recordType: type, recordName: "typed-\(index)", zoneID: notesZone,
                    fields: ["v": .int64(Int64(index))])
            })
        for (index, type) in types.enumerated() {
            let page = try await alice.queryRecords(
                RecordQuery(recordType: type), zoneID: notesZone, resultsLimit: nil, continuationMarker: nil,
                desiredKeys: nil)
            #expect(page.records.map(\.recordName) == ["typed-\(index)"], "\(type)")
        }
        // A record cannot move to the canonically equivalent type.
        var moved = try #require(try await alice.fetch("typed-0"))
        moved.recordType = types[1]
        expectFailure(try await alice.modify(RecordOperation(.forceUpdate, moved)), .badRequest)
    }

    func subscriptionIdentifiersAreExactBytes() async throws {
        let alice = try await deviceWithZone("alice")
        let results = try await alice.modifySubscriptions([
            .save(Subscription(subscriptionID: composed, zoneID: notesZone)),
            .save(Subscription(subscriptionID: decomposed, zoneID: notesZone)),
        ])
        #expect(results.count == 2)
        #expect(try await alice.listSubscriptions().count == 2)
        _ = try await alice.modifySubscriptions([.delete(decomposed)])
        let left = try await alice.listSubscriptions().map(\.subscriptionID)
        #expect(left.count == 1 && sameBytes(left[0], composed))
    }

    func typedValuesMustMatchTheSchema() async throws {
        // The schema belongs to the container: bob's first write types the field for alice too.
        let bob = try await deviceWithZone("bob")
        let alice = try await deviceWithZone("alice")
        try await bob.create([note("typed", ["count": .int64(1)])])
        expectFailure(
            try await alice.modify(RecordOperation(.create, note("clash", ["count": .string("one")]))), .badRequest)
        #expect(try await alice.fetch("clash") == nil)
        // The right type goes through, and an empty list fits any list type.
        try await alice.create([note("fits", ["count": .int64(2)])])
        try await bob.create([note("tags", ["tags": .int64List([1])])])
        try await alice.create([note("no-tags", ["tags": .stringList([])])])
        expectFailure(
            try await alice.modify(RecordOperation(.create, note("words", ["tags": .stringList(["a"])]))), .badRequest)
    }
}
