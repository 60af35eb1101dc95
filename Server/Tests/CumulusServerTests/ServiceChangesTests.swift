import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("CloudService changes")
struct ServiceChangesTests {
    @Test func zoneChangesPageAndKeepTombstones() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        _ = try await fixture.service.modify((0..<5).map { RecordOperation(.create, note("r\($0)")) }, as: alice)
        _ = try await fixture.service.modify([RecordOperation(.forceDelete, note("r0"))], as: alice)

        var token: SyncToken?
        var seen: [RecordResult] = []
        var more = true
        while more {
            let page = try await fixture.service.zoneChanges(
                ZoneChangesRequest(zoneID: notesZone, syncToken: token, resultsLimit: 2), as: alice
            ).get()
            #expect(page.records.count <= 2)
            seen += page.records
            token = page.syncToken
            more = page.moreComing
        }
        #expect(seen.count == 5)
        #expect(seen.last == .deleted(recordName: "r0", zoneID: notesZone))
        let empty = try await fixture.service.zoneChanges(
            ZoneChangesRequest(zoneID: notesZone, syncToken: token), as: alice
        ).get()
        #expect(empty.records.isEmpty && !empty.moreComing)
        try await fixture.tearDown()
    }

    @Test func recreatedOrExpiredZoneExpiresTokens() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        let first = try await fixture.service.zoneChanges(ZoneChangesRequest(zoneID: notesZone), as: alice).get()
        try await fixture.service.expireChangeTokens(
            in: notesZone, ownedBy: "alice", container: "iCloud.test", environment: .development)
        let expired = try await fixture.service.zoneChanges(
            ZoneChangesRequest(zoneID: notesZone, syncToken: first.syncToken), as: alice)
        #expect(throws: CloudError.self) { try expired.get() }
        if case .failure(let error) = expired { #expect(error.code == .changeTokenExpired) }

        let second = try await fixture.service.zoneChanges(ZoneChangesRequest(zoneID: notesZone), as: alice).get()
        _ = try await fixture.service.perform(.modifyZones([.delete(notesZone)]), as: alice)
        try await fixture.service.createZone(as: alice)
        let afterRecreate = try await fixture.service.zoneChanges(
            ZoneChangesRequest(zoneID: notesZone, syncToken: second.syncToken), as: alice)
        if case .failure(let error) = afterRecreate {
            #expect(error.code == .changeTokenExpired)
        } else {
            Issue.record("a token of the deleted zone still worked")
        }
        try await fixture.tearDown()
    }

    @Test func databaseChangesReportZones() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        let fresh = try await fixture.service.databaseChanges(since: nil, as: alice)
        #expect(fresh.changedZones == [.defaultZone])
        try await fixture.service.createZone(as: alice)
        _ = try await fixture.service.perform(.modifyZones([.create(ZoneID(zoneName: "B"))]), as: alice)
        let paged = try await fixture.service.databaseChanges(since: fresh.syncToken, limit: 1, as: alice)
        #expect(paged.changedZones == [notesZone] && paged.moreComing)
        _ = try await fixture.service.perform(.modifyZones([.delete(notesZone)]), as: alice)
        let rest = try await fixture.service.databaseChanges(since: paged.syncToken, as: alice)
        #expect(rest.changedZones == [ZoneID(zoneName: "B")])
        #expect(rest.deletedZones == [notesZone])

        try await fixture.service.expireDatabaseChangeTokens(
            ownedBy: "alice", container: "iCloud.test", environment: .development)
        await #expect(throws: CloudError.self) {
            try await fixture.service.databaseChanges(since: rest.syncToken, as: alice)
        }
        try await fixture.tearDown()
    }

    @Test func usersAndContainersAreIsolated() async throws {
        let fixture = try await ServiceFixture.make()
        let alice = caller("alice")
        try await fixture.service.createZone(as: alice)
        _ = try await fixture.service.modify([RecordOperation(.create, note("a"))], as: alice)
        let bob = caller("bob")
        #expect(try await fixture.service.lookup(["a"], as: bob)[0].error?.code == .zoneNotFound)
        let elsewhere = caller("alice", container: "iCloud.other")
        #expect(try await fixture.service.lookup(["a"], as: elsewhere)[0].error?.code == .zoneNotFound)
        let production = caller("alice", environment: .production)
        #expect(try await fixture.service.lookup(["a"], as: production)[0].error?.code == .zoneNotFound)
        let sharedZones = try await fixture.service.perform(.listZones, as: caller("alice", scope: .shared))
        #expect(sharedZones == .zones([]))
        try await fixture.tearDown()
    }

    @Test func publicDatabaseBelongsToCreators() async throws {
        let fixture = try await ServiceFixture.make()
        let zone = ZoneID.defaultZone
        let alice = caller("alice", scope: .public)
        let bob = caller("bob", scope: .public)
        let server = caller(nil, scope: .public)
        let created = try await fixture.service.modify(
            [RecordOperation(.create, note("p", zone: zone))], zone: zone, as: alice)
        #expect(created[0].record != nil)
        #expect(try await fixture.service.lookup(["p"], zone: zone, as: bob)[0].record != nil)
        let denied = try await fixture.service.modify(
            [RecordOperation(.forceUpdate, note("p", title: "b", zone: zone))], zone: zone, as: bob)
        #expect(denied[0].error?.code == .accessDenied)
        let byServer = try await fixture.service.modify(
            [RecordOperation(.forceUpdate, note("p", title: "s", zone: zone))], zone: zone, as: server)
        #expect(byServer[0].record?["title"] == .string("s"))
        await #expect(throws: CloudError.self) { try await fixture.service.perform(.currentUser, as: server) }
        await #expect(throws: CloudError.self) { try await fixture.service.perform(.listZones, as: caller(nil)) }
        let customZone = try await fixture.service.perform(.modifyZones([.create(notesZone)]), as: alice)
        if case .zoneResults(let results) = customZone, case .failure(let error) = results[0] {
            #expect(error.code == .badRequest)
        } else {
            Issue.record("a custom zone was created in the public database")
        }
        try await fixture.tearDown()
    }
}
