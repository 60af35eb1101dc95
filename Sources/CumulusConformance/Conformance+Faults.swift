import Cumulus
import CumulusTesting
import Testing

extension CloudDatabaseConformance {
    func throttling() async throws {
        guard let faults = backend.faults else { return }
        let database = try await deviceWithZone()
        try await faults.inject(.throttled(retryAfter: .seconds(7)), count: 2)
        for _ in 0..<2 {
            let error = await expectCloudError(.throttled) { try await database.create([note("a")]) }
            #expect(error?.retryAfter == .seconds(7))
            #expect(error?.isTransient == true)
        }
        #expect(try await database.fetch("a") == nil)
        try await database.create([note("a")])
        #expect(try await database.fetch("a") != nil)
    }

    func networkFailureBefore() async throws {
        guard let faults = backend.faults else { return }
        let database = try await deviceWithZone()
        try await faults.inject(.networkFailure(), count: 1)
        await expectCloudError(.networkFailure) { try await database.create([note("a")]) }
        // The request never arrived: nothing was written, and retrying works.
        #expect(try await database.fetch("a") == nil)
        try await database.create([note("a")])
    }

    func lostAcknowledgement() async throws {
        guard let faults = backend.faults else { return }
        let database = try await deviceWithZone()
        let token = try await database.zoneChanges(since: nil).syncToken
        try await faults.inject(.networkFailure(afterApplying: true), count: 1)
        await expectCloudError(.networkFailure) { try await database.create([note("a", ["v": .int64(1)])]) }
        // The write happened: the retry meets EXISTS with the server's record…
        let stored = try #require(try await database.fetch("a"))
        let retry = try await database.modify(RecordOperation(.create, note("a", ["v": .int64(1)])))
        #expect(expectFailure(retry, .exists)?.serverRecord == stored)
        // …and the change is in the zone's history.
        #expect(try await database.zoneChanges(since: token).records == [.record(stored)])

        // An update whose answer is lost: the retry with the old tag conflicts.
        var edit = stored
        edit["v"] = .int64(2)
        try await faults.inject(.networkFailure(afterApplying: true), count: 1)
        await expectCloudError(.networkFailure) { try await database.modify(RecordOperation(.update, edit)) }
        let conflict = expectFailure(try await database.modify(RecordOperation(.update, edit)), .conflict)
        #expect(conflict?.serverRecord?.fields == ["v": .int64(2)])
    }

    func transientServerErrors() async throws {
        guard let faults = backend.faults else { return }
        let database = try await deviceWithZone()
        try await faults.inject(.tryAgainLater(retryAfter: .seconds(2)), count: 1)
        try await faults.inject(.internalError(), count: 1)
        let busy = await expectCloudError(.tryAgainLater) { try await database.listZones() }
        #expect(busy?.retryAfter == .seconds(2))
        let failed = await expectCloudError(.internalError) { try await database.create([note("a")]) }
        #expect(failed?.isTransient == true)
        #expect(try await database.fetch("a") == nil)
        #expect(await database.accountStatus() == .available)
    }

    func zoneDeletedBehindTheBack() async throws {
        guard let faults = backend.faults else { return }
        let database = try await deviceWithZone()
        let saved = try #require(try await database.create([note("a")]).first)
        let databaseToken = try await database.fetchDatabaseChanges(since: nil, resultsLimit: nil).syncToken
        let zoneToken = try await database.zoneChanges(since: nil).syncToken
        let hears = NotificationRecorder(try await device())
        await listening(hears)

        try await faults.deleteZone(notesZone, ownedBy: try await database.currentUser().userRecordName)
        await hears.wait(for: .databaseChanged)

        var edit = saved
        edit["v"] = .int64(1)
        expectFailure(try await database.modify(RecordOperation(.update, edit)), .zoneNotFound)
        let changes = try await database.fetchZoneChanges([ZoneChangesRequest(zoneID: notesZone, syncToken: zoneToken)])
        #expect(changes[0].failureCode == .zoneNotFound)
        let databaseChanges = try await database.fetchDatabaseChanges(since: databaseToken, resultsLimit: nil)
        #expect(databaseChanges.deletedZones == [notesZone])
        #expect(databaseChanges.changedZones.isEmpty)
    }

    func expiredChangeTokens() async throws {
        guard let faults = backend.faults else { return }
        let database = try await deviceWithZone()
        try await database.create([note("a"), note("b")])
        let token = try await database.zoneChanges(since: nil).syncToken
        try await faults.expireChangeTokens(in: notesZone, ownedBy: try await database.currentUser().userRecordName)

        let results = try await database.fetchZoneChanges([
            ZoneChangesRequest(zoneID: notesZone, syncToken: token), ZoneChangesRequest(zoneID: .defaultZone),
        ])
        #expect(results[0].failureCode == .changeTokenExpired)
        #expect(try results[1].get().records.isEmpty)
        // Starting over works, and its token is good.
        let restart = try await database.zoneChanges(since: nil)
        #expect(restart.records.savedNames == ["a", "b"])
        try await database.create([note("c")])
        #expect(try await database.zoneChanges(since: restart.syncToken).records.savedNames == ["c"])
    }

    func signOutAndSwitchUser() async throws {
        guard let faults = backend.faults else { return }
        let device = try await deviceWithZone("alice")
        try await device.create([note("alice's")])
        let hears = NotificationRecorder(device)
        await listening(hears)

        try await faults.signOut(device)
        await hears.wait(for: .accountChanged)
        await expectCloudError(.authenticationRequired) { try await device.currentUser() }
        await expectCloudError(.authenticationRequired) { try await device.listZones() }
        #expect(await device.accountStatus() == .noAccount)

        try await faults.signIn(device, as: "bob")
        await hears.wait { $0.filter { $0 == .accountChanged }.count == 2 }
        let bob = try await self.device("bob").currentUser()
        #expect(try await device.currentUser() == bob)
        #expect(await device.accountStatus() == .available)
        // Bob's data now, not Alice's.
        #expect(try await device.listZones().map(\.zoneID) == [.defaultZone])

        // The device now hears Bob's changes, and no longer Alice's.
        try await (try await self.device("alice")).create([note("more")])
        try await device.create([note("bob's", in: .defaultZone)], in: .defaultZone)
        let received = await hears.wait { $0.count >= 3 }
        #expect(received == [.accountChanged, .accountChanged, .databaseChanged])
    }

    func quotaExceeded() async throws {
        guard let faults = backend.faults else { return }
        let database = try await deviceWithZone()
        let saved = try await database.create([note("a"), note("b")])
        let user = try await database.currentUser().userRecordName
        try await faults.setQuotaExceeded(true, forUser: user)

        expectFailure(try await database.modify(RecordOperation(.create, note("c"))), .quotaExceeded)
        expectFailure(try await database.modify(RecordOperation(.forceUpdate, saved[0])), .quotaExceeded)
        let results = try await database.modifyRecords(
            [RecordOperation(.create, note("d")), RecordOperation(.delete, saved[1])], zoneID: notesZone,
            atomic: false)
        expectFailure(results[0], .quotaExceeded)
        #expect(results[1] == .deleted(recordName: "b", zoneID: notesZone))
        // Another user is not affected.
        let bob = try await deviceWithZone("bob")
        try await bob.create([note("c")])

        try await faults.setQuotaExceeded(false, forUser: user)
        try await database.create([note("c")])
    }
}
