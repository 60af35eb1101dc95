import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    func zonesListAndLookup() async throws {
        let database = try await device()
        #expect(try await database.listZones().map(\.zoneID) == [.defaultZone])
        try await database.makeZone(ZoneID(zoneName: "B"))
        try await database.makeZone(ZoneID(zoneName: "A"))
        let zones = try await database.listZones()
        #expect(zones.map(\.zoneID) == [.defaultZone, ZoneID(zoneName: "A"), ZoneID(zoneName: "B")])
        #expect(zones.allSatisfy { $0.syncToken != nil })

        let results = try await database.lookupZones([ZoneID(zoneName: "B"), ZoneID(zoneName: "Missing")])
        try #require(results.count == 2)
        guard case .zone(let zone) = results[0] else {
            Issue.record("expected zone B, got \(results[0])")
            return
        }
        #expect(zone.zoneID == ZoneID(zoneName: "B"))
        guard case .failure(let error) = results[1] else {
            Issue.record("expected ZONE_NOT_FOUND, got \(results[1])")
            return
        }
        #expect(error.code == .zoneNotFound)

        // A zone's token moves with its changes and answers changes/zone.
        try await database.create([note("a", in: ZoneID(zoneName: "B"))], in: ZoneID(zoneName: "B"))
        let moved = try await database.lookupZones([ZoneID(zoneName: "B")])
        guard case .zone(let after) = moved[0] else { throw CloudError(.internalError, reason: "\(moved)") }
        #expect(after.syncToken != zone.syncToken)
        let changes = try await database.zoneChanges(ZoneID(zoneName: "B"), since: after.syncToken)
        #expect(changes.records.isEmpty)
    }

    func zoneCreateIsIdempotent() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("a")])
        let again = try await database.modifyZones([.create(notesZone)])
        guard case .zone(let zone) = again.first else {
            Issue.record("creating an existing zone failed: \(again)")
            return
        }
        #expect(zone.zoneID == notesZone)
        #expect(try await database.fetch("a") != nil)
        #expect(try await database.listZones().count == 2)
    }

    func zoneDeleteRemovesRecords() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("a")])
        let results = try await database.modifyZones([.delete(notesZone)])
        #expect(results == [.deleted(notesZone)])
        #expect(try await database.listZones().map(\.zoneID) == [.defaultZone])
        let lookup = try await database.lookupRecords(["a"], zoneID: notesZone, desiredKeys: nil)
        expectFailure(lookup[0], .zoneNotFound)
        // Created again, the zone starts empty.
        try await database.makeZone()
        #expect(try await database.fetch("a") == nil)
    }

    func defaultZoneCannotBeDeleted() async throws {
        let database = try await device()
        try await database.create([note("a", in: .defaultZone)], in: .defaultZone)
        let results = try await database.modifyZones([.delete(.defaultZone), .delete(ZoneID(zoneName: "Missing"))])
        try #require(results.count == 2)
        guard case .failure(let error) = results[0], case .failure(let missing) = results[1] else {
            Issue.record("expected two failures, got \(results)")
            return
        }
        #expect(error.code == .badRequest)
        #expect(missing.code == .zoneNotFound)
        #expect(try await database.fetch("a", in: .defaultZone) != nil)

        await expectCloudError(.badRequest) {
            try await database.modifyZones([.create(ZoneID(zoneName: "X")), .delete(ZoneID(zoneName: "X"))])
        }
    }

    func zonesOnlyInPrivateDatabase() async throws {
        for scope in [DatabaseScope.public, .shared] {
            let database = try await backend.database(signedInAs: "alice", scope: scope)
            let results = try await database.modifyZones([.create(notesZone)])
            guard case .failure(let error) = results.first else {
                Issue.record("creating a zone in the \(scope) database should fail: \(results)")
                continue
            }
            #expect(error.code == .badRequest)
        }
    }

    func subscriptionsLifecycle() async throws {
        let database = try await deviceWithZone()
        #expect(try await database.listSubscriptions().isEmpty)
        let first = Subscription(subscriptionID: "notes", zoneID: notesZone)
        let second = Subscription(subscriptionID: "default", zoneID: .defaultZone)
        let saved = try await database.modifySubscriptions([.save(first), .save(second)])
        #expect(saved == [.subscription(first), .subscription(second)])
        #expect(try await database.listSubscriptions() == [second, first])

        // Saving again replaces.
        let moved = Subscription(subscriptionID: "notes", zoneID: .defaultZone)
        #expect(try await database.modifySubscriptions([.save(moved)]) == [.subscription(moved)])

        let lookup = try await database.lookupSubscriptions(["notes", "missing"])
        try #require(lookup.count == 2)
        #expect(lookup[0] == .subscription(moved))
        guard case .failure(let error) = lookup[1] else {
            Issue.record("expected NOT_FOUND, got \(lookup[1])")
            return
        }
        #expect(error.code == .notFound)

        let deleted = try await database.modifySubscriptions([.delete("notes"), .delete("missing")])
        #expect(deleted.first == .deleted("notes"))
        guard case .failure(let deleteError) = deleted.last else {
            Issue.record("expected NOT_FOUND, got \(deleted)")
            return
        }
        #expect(deleteError.code == .notFound)
        #expect(try await database.listSubscriptions() == [second])

        // Subscriptions belong to the user: another device sees them, another user does not.
        let laptop = try await device()
        #expect(try await laptop.listSubscriptions() == [second])
        let bob = try await device("bob")
        #expect(try await bob.listSubscriptions().isEmpty)
    }

    func subscriptionNeedsZone() async throws {
        let database = try await device()
        let results = try await database.modifySubscriptions([
            .save(Subscription(subscriptionID: "s", zoneID: ZoneID(zoneName: "Missing")))
        ])
        guard case .failure(let error) = results.first else {
            Issue.record("expected ZONE_NOT_FOUND, got \(results)")
            return
        }
        #expect(error.code == .zoneNotFound)
        #expect(try await database.listSubscriptions().isEmpty)
    }
}
