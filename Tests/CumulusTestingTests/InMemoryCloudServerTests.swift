import Cumulus
import CumulusConformance
import CumulusTesting
import Foundation
import Testing

/// What the in-memory server does beyond the conformance suite: its clock,
/// its fault-injection controls and its inspection helpers.
@Suite("InMemoryCloudServer")
struct InMemoryCloudServerTests {
    actor Flag {
        private(set) var isSet = false
        func set() { isSet = true }
    }

    @Test("timestamps come from the injected clock")
    func timestamps() async throws {
        let clock = ManualClock()
        let server = InMemoryCloudServer(clock: clock, startDate: Date(timeIntervalSince1970: 1_000_000))
        let database = server.database(signedInAs: "alice")
        let created = try #require(try await database.create([note("a", in: .defaultZone)], in: .defaultZone).first)
        #expect(created.metadata?.created == RecordStamp(timestamp: 1_000_000_000, userRecordName: "alice"))
        #expect(created.metadata?.modified == created.metadata?.created)

        clock.advance(by: .seconds(90))
        let updated = try requireRecord(try await database.modify(RecordOperation(.update, created), in: .defaultZone))
        #expect(updated.metadata?.created?.timestamp == 1_000_000_000)
        #expect(updated.metadata?.modified?.timestamp == 1_000_090_000)
    }

    @Test("latency makes each request wait on the clock")
    func latency() async throws {
        let clock = ManualClock()
        let server = InMemoryCloudServer(clock: clock)
        let database = server.database(signedInAs: "alice")
        server.setLatency(.seconds(2))
        let done = Flag()
        let request = Task {
            let zones = try await database.listZones()
            await done.set()
            return zones
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        #expect(await !done.isSet)
        clock.advance(by: .seconds(1))
        #expect(try await request.value.count == 1)

        // A handle's own latency wins; nil goes back to the server's.
        database.setLatency(.zero)
        _ = try await database.listZones()
        database.setLatency(nil)
        let again = Task { try await database.currentUser() }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(2))
        #expect(try await again.value.userRecordName == "alice")

        // A request cancelled while it waits throws and does nothing.
        let cancelled = Task { try await database.create([note("a", in: .defaultZone)], in: .defaultZone) }
        await clock.waitForSleepers(count: 1)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(await server.storedRecords(in: .defaultZone, of: "alice").isEmpty)
    }

    @Test("faults can aim at kinds of requests and at one handle")
    func aimedFaults() async throws {
        let server = InMemoryCloudServer()
        let phone = server.database(signedInAs: "alice")
        let laptop = server.database(signedInAs: "alice")
        server.inject(.internalError(), count: 1, on: [.modifyRecords])
        _ = try await phone.listZones()
        await expectCloudError(.internalError) {
            try await phone.create([note("a", in: .defaultZone)], in: .defaultZone)
        }
        try await phone.create([note("a", in: .defaultZone)], in: .defaultZone)

        // The handle's own fault first, then the server's; the other handle only meets the server's.
        phone.inject(.throttled(retryAfter: .seconds(1)))
        server.inject(.tryAgainLater(), count: 2)
        await expectCloudError(.throttled) { try await phone.listZones() }
        await expectCloudError(.tryAgainLater) { try await phone.listZones() }
        await expectCloudError(.tryAgainLater) { try await laptop.listZones() }
        _ = try await phone.listZones()
        _ = try await laptop.listZones()

        // Faults that nobody met can be withdrawn.
        phone.inject(.networkFailure(), count: 5)
        server.inject(.networkFailure(), count: 5)
        phone.removeInjectedFaults()
        server.removeInjectedFaults()
        _ = try await phone.listZones()
        _ = try await laptop.listZones()
    }

    @Test("a fault after applying a read still throws; the read happened")
    func faultAfterApplyingRead() async throws {
        let server = InMemoryCloudServer()
        let database = server.database(signedInAs: "alice")
        database.inject(InjectedFault(error: CloudError(.internalError, reason: "late"), afterApplying: true))
        await expectCloudError(.internalError) { try await database.listZones() }
        #expect(server.requestCount(of: .listZones) == 1)
    }

    @Test("requests are counted by kind")
    func requestCounts() async throws {
        let server = InMemoryCloudServer()
        let database = server.database(signedInAs: "alice")
        _ = try await database.listZones()
        _ = try await database.listZones()
        _ = await database.accountStatus()
        server.inject(.networkFailure())
        _ = try? await database.create([note("a", in: .defaultZone)], in: .defaultZone)
        #expect(server.requestCount(of: .listZones) == 2)
        #expect(server.requestCount(of: .currentUser) == 1)
        #expect(server.requestCount(of: .modifyRecords) == 1)
        #expect(server.requestCount() == 4)
        server.resetRequestCounts()
        #expect(server.requestCount() == 0)
    }

    @Test("a signed-out handle needs a sign-in; signing in as the same user changes nothing")
    func signedOutHandle() async throws {
        let server = InMemoryCloudServer()
        let database = server.database(signedInAs: nil)
        #expect(database.signedInUser == nil)
        #expect(await database.accountStatus() == .noAccount)
        let hears = NotificationRecorder(database)
        database.signIn(as: "alice")
        database.signIn(as: "alice")
        database.signOut()
        database.signOut()
        database.signIn(as: "alice")
        #expect(await hears.wait { $0.count >= 3 } == [.accountChanged, .accountChanged, .accountChanged])
        #expect(database.signedInUser == "alice")
        #expect(try await database.currentUser().userRecordName == "alice")
    }

    @Test("a signed-out handle on the public database reads as the API token alone, and writes nothing")
    func anonymousPublicReader() async throws {
        let server = InMemoryCloudServer()
        let alice = server.database(scope: .public, signedInAs: "alice")
        _ = try await alice.create([note("a", in: .defaultZone)], in: .defaultZone)
        let reader = server.database(scope: .public, signedInAs: nil)
        let found = try await reader.lookupRecords(["a"], zoneID: .defaultZone, desiredKeys: nil)
        #expect(found.first?.record?.recordName == "a")
        let page = try await reader.queryRecords(
            RecordQuery(recordType: "Note"), zoneID: .defaultZone, resultsLimit: nil, continuationMarker: nil,
            desiredKeys: nil)
        #expect(page.records.map(\.recordName) == ["a"])
        await #expect(throws: CloudError.self) {
            try await reader.create([note("b", in: .defaultZone)], in: .defaultZone)
        }
        await #expect(throws: CloudError.self) { try await reader.currentUser() }
        // The private database still needs a user.
        let signedOut = server.database(signedInAs: nil)
        await #expect(throws: CloudError.self) { try await signedOut.listZones() }
    }

    @Test("notification streams close when their reader stops or their handle goes")
    func streamCleanup() async throws {
        let server = InMemoryCloudServer()
        var database: InMemoryCloudDatabase? = server.database(signedInAs: "alice")
        #expect(server.activeNotificationStreamCount == 0)

        // A reader that is cancelled.
        let stream = database!.notifications()
        #expect(server.activeNotificationStreamCount == 1)
        let reader = Task { for await _ in stream {} }
        reader.cancel()
        await reader.value
        #expect(server.activeNotificationStreamCount == 0)

        // A stream dropped without being read.
        do { _ = database!.notifications() }
        #expect(server.activeNotificationStreamCount == 0)

        // A handle that goes away ends its streams.
        let orphan = database!.notifications()
        let ended = Task { for await _ in orphan {} }
        #expect(server.activeNotificationStreamCount == 1)
        database = nil
        await ended.value
        #expect(server.activeNotificationStreamCount == 0)
    }

    @Test("database tokens can be expired")
    func expiredDatabaseTokens() async throws {
        let server = InMemoryCloudServer()
        let database = server.database(signedInAs: "alice")
        let token = try await database.fetchDatabaseChanges(since: nil, resultsLimit: nil).syncToken
        await server.expireDatabaseChangeTokens(ownedBy: "alice")
        await expectCloudError(.changeTokenExpired) {
            try await database.fetchDatabaseChanges(since: token, resultsLimit: nil)
        }
        #expect(try await database.fetchDatabaseChanges(since: nil, resultsLimit: nil).changedZones == [.defaultZone])
        #expect(await server.expireChangeTokens(in: ZoneID(zoneName: "Missing"), ownedBy: "alice") == false)
    }

    @Test("stored records can be read without a handle")
    func storedRecords() async throws {
        let server = InMemoryCloudServer()
        let database = server.database(signedInAs: "alice")
        try await database.makeZone()
        try await database.create([note("b"), note("a")])
        #expect(await server.storedRecords(in: notesZone, of: "alice").map(\.recordName) == ["a", "b"])
        #expect(await server.storedRecords(in: notesZone, of: "bob").isEmpty)
        #expect(server.requestCount(of: .lookupRecords) == 0)
    }

    @Test("a record over a custom size limit is refused")
    func customSizeLimit() async throws {
        let server = InMemoryCloudServer(recordSizeLimit: 100)
        #expect(server.recordSizeLimit == 100)
        let database = server.database(signedInAs: "alice")
        let result = try await database.modify(
            RecordOperation(.create, note("a", in: .defaultZone, ["t": .string(String(repeating: "x", count: 100))])),
            in: .defaultZone)
        let error = expectFailure(result, .badRequest)
        #expect(error?.reason.contains("100") == true)
    }

    @Test("concurrent writes from many devices: every write gets its own change tag")
    func concurrentWrites() async throws {
        let server = InMemoryCloudServer()
        let devices = (0..<8).map { _ in server.database(signedInAs: "alice") }
        let tags = try await withThrowingTaskGroup(of: [String].self) { group in
            for (index, device) in devices.enumerated() {
                group.addTask {
                    var tags: [String] = []
                    for step in 0..<25 {
                        let record = note("shared", in: .defaultZone, ["by": .int64(Int64(index * 100 + step))])
                        let saved = try await device.apply([RecordOperation(.forceUpdate, record)], in: .defaultZone)
                        tags.append(saved[0].changeTag!)
                    }
                    return tags
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(tags.count == 200)
        #expect(Set(tags).count == 200)
        let changes = try await devices[0].zoneChanges(.defaultZone, since: nil)
        #expect(changes.records.savedNames == ["shared"])
    }

    @Test("the server's answers name zones without an owner")
    func canonicalZoneIDs() async throws {
        let server = InMemoryCloudServer()
        let database = server.database(signedInAs: "alice")
        let owned = ZoneID(zoneName: "Notes", ownerRecordName: "alice")
        _ = try await database.modifyZones([.create(owned)])
        let saved = try await database.create([note("a", in: owned)], in: owned)
        #expect(saved[0].zoneID == notesZone)
        #expect(saved[0].metadata?.zoneID == notesZone)
        #expect(
            try await database.fetch("a", in: ZoneID(zoneName: "Notes", ownerRecordName: "__defaultOwner__")) != nil)
    }
}
