import Cumulus
import CumulusConformance
import CumulusServer
import Foundation
import Testing

/// A restore rewinds the server: every device of every user learns it at its
/// next sync, through the private, shared and public databases alike, drops
/// what the server lost, and sends again what it had not seen acknowledged.
@Suite("Devices notice a restore", .serialized)
struct RestoreAwarenessTests {
    typealias Note = ConformanceNote

    @Test(
        "after a restore every device holds what the server holds, with the edits no answer had acknowledged",
        arguments: RestorableServer.Kind.available)
    func everyDeviceFollowsTheRestore(kind: RestorableServer.Kind) async throws {
        let server = try await RestorableServer.start(kind)
        let devices = DeviceDirectories()
        defer { devices.remove() }
        do {
            try await restoreStory(server, devices)
        } catch {
            await server.remove()
            throw error
        }
        await server.remove()
    }

    private func restoreStory(_ server: RestorableServer, _ devices: DeviceDirectories) async throws {
        let manual = SyncConfiguration(automaticSync: false)
        let zone = ZoneID(zoneName: Note.cloudRecordType)
        func engine(_ user: String, _ name: String, scope: DatabaseScope = .private, shared: ZoneID? = nil)
            async throws -> SyncEngine<Note>
        {
            var configuration = shared.map(SyncConfiguration.init(sharedZone:)) ?? manual
            configuration.automaticSync = false
            return try await SyncEngine<Note>(
                database: try await server.database(user, scope: scope), directory: devices.directory(name),
                configuration: configuration)
        }

        // Before the backup: a note in alice's zone, shared with bob, and a public note.
        let laptop = try await engine("alice", "laptop")
        try await laptop.upload(Note(id: "n1", title: "before backup"))
        try await laptop.sync()
        let share = try await laptop.shareZone(title: "Album", publicPermission: .readWrite)
        let bobShared = try await server.database("bob", scope: .shared)
        let metadata = try await bobShared.shareMetadata(shortGUID: try #require(share.shortGUID))
        _ = try await bobShared.accept(metadata)
        let sharedZone = ZoneID(zoneName: zone.zoneName, ownerRecordName: try await server.user("alice").recordName)
        let bob = try await engine("bob", "bob", scope: .shared, shared: sharedZone)
        try await bob.sync()
        let phone = try await engine("alice", "phone")
        try await phone.sync()
        let board = try await engine("alice", "board", scope: .public)
        try await board.upload(Note(id: "p1", title: "public before backup"))
        try await board.sync()
        let reader = try await engine("bob", "reader", scope: .public)
        try await reader.sync()

        try await server.backUp()

        // After the backup, acknowledged: bob's note, alice's note, a public note.
        try await bob.upload(Note(id: "n2", title: "bob after backup"))
        try await bob.sync()
        try await laptop.upload(Note(id: "n3", title: "alice after backup"))
        try await laptop.sync()
        try await phone.sync()
        try await board.upload(Note(id: "p2", title: "public after backup"))
        try await board.sync()
        try await reader.sync()
        try await bob.sync()
        #expect(Set(await bob.models.map(\.id)) == ["n1", "n2", "n3"])
        #expect(Set(await reader.models.map(\.id)) == ["p1", "p2"])
        // After the backup, never sent: edits on alice's phone (one of a note the restore loses) and bob's.
        try await phone.upload(Note(id: "n1", title: "edited on the phone"))
        try await phone.upload(Note(id: "n3", title: "n3 edited on the phone"))
        try await bob.upload(Note(id: "n4", title: "bob, not sent yet"))

        await server.stop()
        try await server.restoreAndStart()

        // The phone syncs first: its writes move the restored zone's serials past where bob's token stood.
        try await phone.sync()
        for engine in [bob, laptop, phone, bob, laptop, board, reader] { try await engine.sync() }

        let expected: [String: String] = [
            "n1": "edited on the phone", "n3": "n3 edited on the phone", "n4": "bob, not sent yet",
        ]
        for (name, device) in [("laptop", laptop), ("phone", phone), ("bob", bob)] {
            let held = Dictionary(uniqueKeysWithValues: await device.models.map { ($0.id, $0.title) })
            #expect(held == expected, "\(name) holds \(held)")
            #expect(await device.pendingChangeCount == 0, "\(name)")
        }
        let fromServer = try await server.database("alice").lookupRecords(
            ["n1", "n2", "n3", "n4"], zoneID: zone, desiredKeys: nil)
        #expect(fromServer.map { $0.record != nil } == [true, false, true, true])
        for device in [board, reader] {
            #expect(Set(await device.models.map(\.id)) == ["p1"])
        }
        for device in [laptop, phone, bob, board, reader] { await device.close() }
    }
}

extension RestoreAwarenessTests {
    @Test(
        "a restart keeps sync tokens and channels; a restore expires every token and forgets every channel",
        arguments: RestorableServer.Kind.available)
    func restartAgainstRestore(kind: RestorableServer.Kind) async throws {
        let server = try await RestorableServer.start(kind)
        do {
            let alice = try await server.user("alice").recordName
            let caller = Caller(container: server.container, environment: .development, scope: .private, user: alice)
            let zone = ZoneID(zoneName: "Notes")
            func fetch(since syncToken: SyncToken?) async throws -> Result<ZoneChanges, CloudError> {
                let service = try #require(server.service)
                guard
                    case .zoneChanges(let pages) = try await service.perform(
                        .fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: syncToken)]), as: caller),
                    let page = pages.first
                else { throw CloudError(.internalError, reason: "not a page of changes") }
                return page
            }
            func token() async throws -> SyncToken { try await fetch(since: nil).get().syncToken }
            _ = try await server.service!.perform(.modifyZones([.create(zone)]), as: caller)
            let before = try await token()
            let channel = try await server.service!.createNotificationToken(for: caller)
            try await server.backUp()

            try await server.restart()
            _ = try await fetch(since: before).get()
            _ = try await server.service!.pollNotifications(token: channel, cursor: nil, timeout: .zero)

            await server.stop()
            try await server.restoreAndStart()
            if case .failure(let error) = try await fetch(since: before) {
                #expect(error.code == .changeTokenExpired, "\(error)")
            } else {
                Issue.record("a sync token from before the restore still reads changes")
            }
            do {
                _ = try await server.service!.pollNotifications(token: channel, cursor: nil, timeout: .zero)
                Issue.record("a channel from before the restore still polls")
            } catch let error as CloudError {
                #expect(error.code == .notFound, "\(error)")
            }
            // The restored store took notice once: a restart of it keeps the new tokens.
            let after = try await token()
            try await server.restart()
            _ = try await fetch(since: after).get()
        } catch {
            await server.remove()
            throw error
        }
        await server.remove()
    }
}

/// The journal directories of a test's devices, removed at its end.
final class DeviceDirectories: Sendable {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-devices-\(UUID().uuidString)")

    func directory(_ name: String) -> URL {
        root.appendingPathComponent(name, isDirectory: true)
    }

    func remove() {
        try? FileManager.default.removeItem(at: root)
    }
}
