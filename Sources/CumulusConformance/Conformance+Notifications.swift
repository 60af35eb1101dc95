import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    func notificationsReachEveryDevice() async throws {
        let phone = try await deviceWithZone()
        let laptop = try await device()
        _ = try await phone.modifySubscriptions([.save(Subscription(subscriptionID: "notes", zoneID: notesZone))])
        let phoneHears = NotificationRecorder(phone)
        let laptopHears = NotificationRecorder(laptop)
        await listening(phoneHears, laptopHears)

        try await phone.create([note("a")])
        let expected: [CloudNotification] = [.zoneChanged(notesZone, subscriptionID: "notes"), .databaseChanged]
        #expect(await laptopHears.wait { $0.count >= 2 } == expected)
        // The device that wrote hears it too.
        #expect(await phoneHears.wait { $0.count >= 2 } == expected)
    }

    func notificationsOnlyForSubscribedZones() async throws {
        let phone = try await deviceWithZone()
        try await phone.makeZone(ZoneID(zoneName: "Quiet"))
        _ = try await phone.modifySubscriptions([
            .save(Subscription(subscriptionID: "notes-1", zoneID: notesZone)),
            .save(Subscription(subscriptionID: "notes-2", zoneID: notesZone)),
        ])
        let laptop = NotificationRecorder(try await device())
        await listening(laptop)

        let quiet = ZoneID(zoneName: "Quiet")
        try await phone.create([note("q", in: quiet)], in: quiet)
        try await phone.create([note("a")])
        // Two quick writes may come as one batch (a poll hears each changed zone once).
        let subscribed: [CloudNotification] = [
            .zoneChanged(notesZone, subscriptionID: "notes-1"), .zoneChanged(notesZone, subscriptionID: "notes-2"),
        ]
        let received = await laptop.wait { Set(subscribed).isSubset(of: Set($0)) && $0.last == .databaseChanged }
        // The subscribed zone's notifications, once each, in subscription order; none for the quiet zone.
        #expect(received.filter { $0 != .databaseChanged } == subscribed)
    }

    func eachCallIsANewStream() async throws {
        let phone = try await deviceWithZone()
        let laptop = try await device()
        let first = NotificationRecorder(laptop)
        let second = NotificationRecorder(laptop)
        await listening(first, second)
        try await phone.create([note("a")])
        await first.wait(for: .databaseChanged)
        await second.wait(for: .databaseChanged)

        // A stream whose reader stopped does not keep the others from hearing.
        first.stop()
        try await phone.create([note("b")])
        await second.wait { $0.count >= 2 }
    }

    func notificationsAreIsolated() async throws {
        let alice = try await deviceWithZone()
        let bob = try await deviceWithZone("bob")
        _ = try await bob.modifySubscriptions([.save(Subscription(subscriptionID: "bob-notes", zoneID: notesZone))])
        let bobHears = NotificationRecorder(bob)
        let bobPublic = NotificationRecorder(try await backend.database(signedInAs: "bob", scope: .public))
        await listening(bobHears, bobPublic)

        try await alice.create([note("alice's")])
        // Then bob writes: what bob hears first is his own write.
        try await bob.create([note("bob's")])
        let received = await bobHears.wait { $0.count >= 2 }
        #expect(received == [.zoneChanged(notesZone, subscriptionID: "bob-notes"), .databaseChanged])
        #expect(await bobPublic.received.isEmpty)
    }

    func zoneChangesNotify() async throws {
        let phone = try await device()
        let laptop = NotificationRecorder(try await device())
        await listening(laptop)
        try await phone.makeZone()
        await laptop.wait { $0.count >= 1 }
        _ = try await phone.modifySubscriptions([.save(Subscription(subscriptionID: "notes", zoneID: notesZone))])
        _ = try await phone.modifyZones([.delete(notesZone)])
        let received = await laptop.wait { $0.count >= 3 }
        #expect(
            received == [.databaseChanged, .zoneChanged(notesZone, subscriptionID: "notes"), .databaseChanged])
        // Creating a zone that exists changes nothing and notifies nobody; reading changes
        // nothing either. Creating the deleted zone again notifies its subscription, which stayed.
        try await phone.makeZone(.defaultZone)
        _ = try await phone.fetchDatabaseChanges(since: nil, resultsLimit: nil)
        try await phone.makeZone()
        let all = await laptop.wait { $0.count >= 5 }
        #expect(Array(all.dropFirst(3)) == [.zoneChanged(notesZone, subscriptionID: "notes"), .databaseChanged])
    }
}
