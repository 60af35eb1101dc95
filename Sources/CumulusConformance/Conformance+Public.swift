import Cumulus
import CumulusTesting
import Testing

/// The public database's change feed and query subscriptions (Cumulus
/// additions to the CloudKit Web Services dialect).
extension CloudDatabaseConformance {
    static let publicChecks: [Check] = [
        Check("the public feed pages with tokens, and lists deletions") { try await $0.publicFeedPages() },
        Check("the public feed is read with the API token alone; writes are not") {
            try await $0.publicFeedIsReadAnonymously()
        },
        Check("query subscriptions hear creates, updates and deletes of matching records") {
            try await $0.querySubscriptionsNotify()
        },
        Check("query subscriptions hear only records their user may read") {
            try await $0.querySubscriptionsHearReadableRecords()
        },
        Check("query subscriptions leave zone subscriptions as they were") {
            try await $0.querySubscriptionsBesideZoneSubscriptions()
        },
    ]

    func publicFeedPages() async throws {
        let zone = ZoneID.defaultZone
        let alice = try await backend.database(signedInAs: "alice", scope: .public)
        let bob = try await backend.database(signedInAs: "bob", scope: .public)
        try await alice.create((1...5).map { note("a\($0)", in: zone, ["v": .int64(Int64($0))]) }, in: zone)
        try await bob.create([note("b1", in: zone)], in: zone)
        // Alice's private default zone is another zone: none of it is in the feed.
        try await device("alice").create([note("secret", in: zone)], in: zone)

        let (pages, token) = try await bob.allZoneChanges(zone, since: nil, limit: 2)
        #expect(pages.count == 3)
        #expect(pages.flatMap(\.records).savedNames == ["a1", "a2", "a3", "a4", "a5", "b1"])
        // The feed carries a record as a public lookup answers it.
        let a1 = try #require(pages[0].records.first?.record)
        #expect(try await bob.fetch("a1", in: zone) == a1)
        #expect(a1.zoneID == zone)

        var edit = try #require(try await alice.fetch("a3", in: zone))
        edit["v"] = .int64(30)
        try await alice.apply(
            [RecordOperation(.update, edit), RecordOperation(.forceDelete, note("a2", in: zone))], in: zone)
        try await bob.create([note("b2", in: zone)], in: zone)
        let since = try await bob.zoneChanges(zone, since: token)
        #expect(since.records.savedNames == ["a3", "b2"])
        #expect(since.records.deletedNames == ["a2"])
        #expect(since.records.first?.record?["v"] == .int64(30))
        #expect(!since.moreComing)
        let none = try await alice.zoneChanges(zone, since: since.syncToken)
        #expect(none.records.isEmpty && !none.moreComing && none.syncToken == since.syncToken)

        // Only the default zone: the public database has no other.
        let missing = try await bob.fetchZoneChanges([ZoneChangesRequest(zoneID: notesZone)])
        #expect(missing[0].failureCode == .zoneNotFound)
    }

    func publicFeedIsReadAnonymously() async throws {
        guard let faults = backend.faults else { return }
        let zone = ZoneID.defaultZone
        let alice = try await backend.database(signedInAs: "alice", scope: .public)
        let reader = try await backend.database(signedInAs: "bob", scope: .public)
        try await faults.signOut(reader)
        try await alice.create([note("p", in: zone)], in: zone)

        let changes = try await reader.zoneChanges(zone, since: nil)
        #expect(changes.records.savedNames == ["p"])
        #expect(try await reader.fetch("p", in: zone) == changes.records.first?.record)
        await expectCloudError(.authenticationRequired) {
            try await reader.modifyRecords([RecordOperation(.create, note("q", in: zone))], zoneID: zone, atomic: false)
        }
        await expectCloudError(.authenticationRequired) {
            try await reader.modifySubscriptions([
                .save(Subscription(subscriptionID: "s", query: RecordQuery(recordType: "Note")))
            ])
        }
        #expect(try await alice.zoneChanges(zone, since: changes.syncToken).records.isEmpty)
    }

    func querySubscriptionsNotify() async throws {
        let zone = ZoneID.defaultZone
        let alice = try await backend.database(signedInAs: "alice", scope: .public)
        let bob = try await backend.database(signedInAs: "bob", scope: .public)
        let big = RecordQuery(recordType: "Note", filters: [QueryFilter("v", .greaterThanOrEquals, .int64(10))])
        _ = try await bob.modifySubscriptions([
            .save(Subscription(subscriptionID: "big", query: big)),
            .save(Subscription(subscriptionID: "big-deleted", query: big, firesOn: [.deleted])),
        ])
        let bobHears = NotificationRecorder(bob)
        await listening(bobHears)

        let n1 = try #require(try await alice.create([note("n1", in: zone, ["v": .int64(20)])], in: zone).first)
        var n2 = try #require(try await alice.create([note("n2", in: zone, ["v": .int64(1)])], in: zone).first)
        let other = Record(recordType: "Other", recordName: "o1", zoneID: zone, fields: ["v": .int64(20)])
        try await alice.create([other], in: zone)
        var edit = n1
        edit["v"] = .int64(30)
        try await alice.apply([RecordOperation(.update, edit)], in: zone)
        n2["v"] = .int64(2)
        n2 = try #require(try await alice.apply([RecordOperation(.update, n2)], in: zone).first)
        n2["v"] = .int64(15)
        try await alice.apply([RecordOperation(.update, n2)], in: zone)
        try await alice.apply([RecordOperation(.forceDelete, note("n1", in: zone))], in: zone)
        try await alice.apply([RecordOperation(.forceDelete, other)], in: zone)

        func heard(_ id: String, _ name: String, _ reason: QueryNotification.Reason) -> CloudNotification {
            .queryChanged(QueryNotification(subscriptionID: id, recordName: name, zoneID: zone, reason: reason))
        }
        let expected = [
            heard("big", "n1", .created), heard("big", "n1", .updated), heard("big", "n2", .updated),
            heard("big", "n1", .deleted), heard("big-deleted", "n1", .deleted),
        ]
        // The records that never matched (n2 at 1 and 2, the other type) fire nothing.
        let received = await bobHears.wait { $0.count >= expected.count }
        #expect(received.count == expected.count)
        #expect(Array(received.prefix(3)) == Array(expected.prefix(3)))
        #expect(Set(received.suffix(2)) == Set(expected.suffix(2)))
    }

    func querySubscriptionsHearReadableRecords() async throws {
        let zone = ZoneID.defaultZone
        let everything = RecordQuery(recordType: "Note")
        let bobPublic = try await backend.database(signedInAs: "bob", scope: .public)
        let bobPrivate = try await device("bob")
        let alicePrivate = try await device("alice")
        for database in [bobPublic, bobPrivate, alicePrivate] {
            _ = try await database.modifySubscriptions([.save(Subscription(subscriptionID: "all", query: everything))])
        }
        let bobPublicHears = NotificationRecorder(bobPublic)
        let bobPrivateHears = NotificationRecorder(bobPrivate)
        let aliceHears = NotificationRecorder(alicePrivate)
        await listening(bobPublicHears, bobPrivateHears, aliceHears)

        func created(_ name: String) -> CloudNotification {
            .queryChanged(QueryNotification(subscriptionID: "all", recordName: name, zoneID: zone, reason: .created))
        }
        // Alice's private record is hers alone to hear of.
        try await alicePrivate.create([note("secret", in: zone)], in: zone)
        #expect(await aliceHears.wait { $0.count >= 2 } == [created("secret"), .databaseChanged])
        let alicePublic = try await backend.database(signedInAs: "alice", scope: .public)
        try await alicePublic.create([note("open", in: zone)], in: zone)
        #expect(await bobPublicHears.wait { !$0.isEmpty } == [created("open")])
        try await bobPrivate.create([note("mine", in: zone)], in: zone)
        #expect(await bobPrivateHears.wait { $0.count >= 2 } == [created("mine"), .databaseChanged])
        #expect(await aliceHears.received == [created("secret"), .databaseChanged])
    }

    func querySubscriptionsBesideZoneSubscriptions() async throws {
        let phone = try await deviceWithZone()
        let one = RecordQuery(recordType: "Note", filters: [QueryFilter("v", .equals, .int64(1))])
        let query = Subscription(subscriptionID: "q", query: one, firesOn: [.created], zoneID: notesZone)
        let zone = Subscription(subscriptionID: "zone", zoneID: notesZone)
        let saved = try await phone.modifySubscriptions([.save(zone), .save(query)])
        #expect(saved == [.subscription(zone), .subscription(query)])
        #expect(try await phone.listSubscriptions() == [query, zone])
        #expect(try await phone.lookupSubscriptions(["q"]) == [.subscription(query)])

        let laptop = NotificationRecorder(try await device())
        await listening(laptop)
        try await phone.create([note("a", ["v": .int64(2)])])
        let first = await laptop.wait { $0.count >= 2 }
        #expect(first == [.zoneChanged(notesZone, subscriptionID: "zone"), .databaseChanged])
        try await phone.create([note("b", ["v": .int64(1)])])
        let b = CloudNotification.queryChanged(
            QueryNotification(subscriptionID: "q", recordName: "b", zoneID: notesZone, reason: .created))
        let all = await laptop.wait { $0.contains(b) && $0.last == .databaseChanged }
        #expect(Array(all.dropFirst(2)) == [.zoneChanged(notesZone, subscriptionID: "zone"), b, .databaseChanged])

        // A query subscription that can never fire, or in the shared database, is refused.
        let never = try await phone.modifySubscriptions([
            .save(Subscription(subscriptionID: "never", query: one, firesOn: [], zoneID: notesZone))
        ])
        expectSubscriptionFailure(never, .badRequest)
        // A query records/query would refuse makes the whole request a BAD_REQUEST.
        await expectCloudError(.badRequest) {
            try await phone.modifySubscriptions([
                .save(Subscription(subscriptionID: "fine", query: one)),
                .save(Subscription(subscriptionID: "typeless", query: RecordQuery(recordType: ""))),
            ])
        }
        let shared = try await backend.database(signedInAs: "alice", scope: .shared)
        let inShared = try await shared.modifySubscriptions([.save(Subscription(subscriptionID: "s", query: one))])
        expectSubscriptionFailure(inShared, .badRequest)
        let missing = try await phone.modifySubscriptions([
            .save(Subscription(subscriptionID: "m", query: one, zoneID: ZoneID(zoneName: "Missing")))
        ])
        expectSubscriptionFailure(missing, .zoneNotFound)
        #expect(try await phone.listSubscriptions() == [query, zone])
    }

    private func expectSubscriptionFailure(
        _ results: [SubscriptionResult], _ code: CloudError.Code, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard results.count == 1, case .failure(let error) = results[0] else {
            Issue.record("expected one failure, got \(results)", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == code, sourceLocation: sourceLocation)
    }
}
