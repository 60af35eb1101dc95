import CumulusTesting
import Foundation

@testable import Cumulus

/// Histories with shares: alice's devices sync her zone on her private
/// database; bob's and carol's devices get an engine on their shared
/// database once they accepted a share of it.
extension Simulator {
    /// The owner's zone as participants name it.
    var sharedZoneID: ZoneID { ZoneID(zoneName: zone.zoneName, ownerRecordName: sharingOwner) }

    /// One or two devices of the owner, and two or three of the
    /// participants; the owner shares the zone at once (unless
    /// `sharingAtOnce` is `false`) and most of the invited participants
    /// accept, so that the history spends its steps on a share.
    func setUpSharing(sharingAtOnce: Bool = true) async throws {
        let owners = random.int(in: 1...2)
        let participants = random.int(in: 2...3)
        for index in 0..<(owners + participants) {
            let directory = root.appendingPathComponent("device\(index)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let device: SimulationDevice
            if index < owners {
                device = SimulationDevice(
                    index: index, handle: server.database(signedInAs: sharingOwner), directory: directory)
            } else {
                let user = index == owners ? participantUsers[0] : random.pick(participantUsers)
                device = SimulationDevice(
                    index: index, handle: server.database(scope: .shared, signedInAs: user), directory: directory)
                device.participant = user
                device.publicHandle = server.database(scope: .public, signedInAs: user)
            }
            device.version = initialVersion()
            if options.versions { device.sendsFieldDeltas = random.chance(0.7) }
            devices.append(device)
            try await open(device)
        }
        for user in participantUsers { inspectors[user] = server.database(scope: .shared, signedInAs: user) }
        let names = devices.map { $0.participant ?? sharingOwner }
        record(
            "\(owners) devices of \(sharingOwner), participants' devices: \(names.dropFirst(owners)), "
                + "field deltas \(devices.map(\.sendsFieldDeltas))")
        guard sharingAtOnce else { return }
        _ = try await sync(devices[0], duringRetries: false)
        try await shareZone(on: devices[0])
        for device in devices where device.participant != nil && device.engine == nil && random.chance(0.8) {
            try await accept(on: device)
        }
        try await checkSharing(accessBefore: [:])
    }

    // MARK: The owner's operations

    /// The share the server holds now, read without a handle.
    func storedShare() async -> Record? {
        await server.storedRecords(in: zone, of: sharingOwner).first { $0.recordType == ShareDetails.recordType }
    }

    /// Shares the zone with some participants, each read-only or read-write.
    func shareZone(on device: SimulationDevice) async throws {
        guard device.participant == nil, let engine = device.engine, await storedShare() == nil else { return }
        var participants: [ShareParticipant] = []
        var names: [String] = []
        for user in participantUsers where random.chance(0.75) {
            let permission = randomPermission()
            participants.append(ShareParticipant(lookupInfo: .user(user), permission: permission))
            names.append("\(user):\(permission.rawValue)")
        }
        try await sharingRequest("d\(device.index) shares the zone with \(names)", kind: "share") {
            _ = try await engine.shareZone(title: "Notes", participants: participants, publicPermission: .none)
        }
    }

    /// Changes one participant's permission.
    func setPermission(on device: SimulationDevice) async throws {
        guard device.participant == nil, let engine = device.engine else { return }
        try await changeShare(on: engine, device: device, kind: "setPermission") { share, user in
            let permission = self.randomPermission()
            share.setPermission(permission) { $0.isUser(user) }
            return "sets \(user)'s permission to \(permission.rawValue)"
        }
    }

    /// Invites a user who is not a participant (again).
    func addParticipant(on device: SimulationDevice) async throws {
        guard device.participant == nil, let engine = device.engine else { return }
        let found: Share?
        do {
            found = try await engine.fetchZoneShare()
        } catch let error as CloudError {
            return record("d\(device.index) fetching the share failed: \(error.code)")
        }
        guard var share = found else { return }
        let absent = participantUsers.filter { user in !share.participants.contains { $0.isUser(user) } }
        guard !absent.isEmpty else { return }
        let user = random.pick(absent)
        let permission = randomPermission()
        share.addParticipant(.user(user), permission: permission)
        try await sharingRequest(
            "d\(device.index) adds \(user) as \(permission.rawValue)", kind: "addParticipant"
        ) { _ = try await engine.saveShare(share) }
    }

    /// Removes one participant.
    func removeParticipant(on device: SimulationDevice) async throws {
        guard device.participant == nil, let engine = device.engine else { return }
        try await changeShare(on: engine, device: device, kind: "removeParticipant") { share, user in
            share.removeParticipants { $0.isUser(user) }
            return "removes \(user)"
        }
    }

    func stopSharing(on device: SimulationDevice) async throws {
        guard device.participant == nil, let engine = device.engine else { return }
        let found: Share?
        do {
            found = try await engine.fetchZoneShare()
        } catch let error as CloudError {
            return record("d\(device.index) fetching the share failed: \(error.code)")
        }
        guard let share = found else { return }
        try await sharingRequest("d\(device.index) stops sharing", kind: "stopSharing") {
            try await engine.stopSharing(share)
        }
    }

    /// Fetches the share, lets `change` change it for one of its
    /// participants, and saves it.
    private func changeShare(
        on engine: any SimulatedEngine, device: SimulationDevice, kind: String,
        _ change: (inout Share, String) -> String
    ) async throws {
        let found: Share?
        do {
            found = try await engine.fetchZoneShare()
        } catch let error as CloudError {
            return record("d\(device.index) fetching the share failed: \(error.code)")
        }
        guard var share = found else { return }
        let present = participantUsers.filter { user in share.participants.contains { $0.isUser(user) } }
        guard !present.isEmpty else { return }
        let what = change(&share, random.pick(present))
        try await sharingRequest("d\(device.index) \(what)", kind: kind) { _ = try await engine.saveShare(share) }
    }

    private func randomPermission() -> SharePermission {
        random.chance(0.5) ? .readWrite : .readOnly
    }

    /// Makes a request of sharing; one that fails with a ``CloudError`` is
    /// the world's doing (a fault, a share changed meanwhile).
    private func sharingRequest(_ what: String, kind: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
            stats.sharing[kind, default: 0] += 1
            record(what)
        } catch let error as CloudError {
            record("\(what): failed, \(error.code)")
        } catch {
            throw InvariantBroken(invariant: .unexpectedError, detail: "\(what) threw \(error)")
        }
    }

    // MARK: The participants' operations

    /// The device's user accepts the share the owner holds: when they are
    /// invited, their devices get an engine on the shared zone; when they
    /// are not, the server must refuse.
    func accept(on device: SimulationDevice) async throws {
        guard let user = device.participant, let publicHandle = device.publicHandle,
            let share = await storedShare(), let shortGUID = share.shareDetails?.shortGUID
        else { return }
        let invited = share.shareDetails?.participants.contains { $0.role != .owner && $0.isUser(user) } ?? false
        let metadata: ShareMetadata
        do {
            metadata = try await publicHandle.accept(try await publicHandle.shareMetadata(shortGUID: shortGUID))
        } catch let error as CloudError {
            return record("d\(device.index) \(user) accepts: failed, \(error.code)")
        }
        guard invited else {
            throw InvariantBroken(
                invariant: .participantsOnly, detail: "\(user), not a participant, accepted the share \(shortGUID)")
        }
        stats.sharing["accept", default: 0] += 1
        record("d\(device.index) \(user) accepts as \(metadata.participantPermission.rawValue)")
        for other in devices where other.participant == user && other.engine == nil {
            other.sharedZone = metadata.zoneID
            try await open(other)
        }
    }

    /// The participant leaves the share through the device's engine.
    func leave(on device: SimulationDevice) async throws {
        guard device.participant != nil, let engine = device.engine else { return }
        let found: Share?
        do {
            found = try await device.handle.fetchShare(named: ShareDetails.zoneShareName, in: engine.zoneID)
        } catch let error as CloudError {
            return record("d\(device.index) fetching the share failed: \(error.code)")
        }
        guard let share = found else { return }
        try await sharingRequest("d\(device.index) \(device.participant!) leaves", kind: "leave") {
            try await engine.leave(share)
        }
    }

    // MARK: Checks

    /// The owner's zone's notes, without the share record.
    func storedSharedNotes() async throws -> [SimNote] {
        try await storedNotes(of: sharingOwner)
    }

    /// The checks after every step of a history with shares, given who had
    /// access before the step.
    func checkSharing(accessBefore: [String: SharePermission]) async throws {
        let stored = try await storedSharedNotes()
        let contents = Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0.content) })
        let tick = nextTick()
        sharingOracle.observeAccess(SharingOracle.accepted(in: await storedShare()), tick: tick)
        var violations = sharingOracle.writeViolations(
            stored: stored, unchanged: contents == zoneAtLastCheck, actor: actor?.participant, before: accessBefore)
        zoneAtLastCheck = contents
        var waiting: [Int: Set<String>] = [:]
        if let actor, actor.participant != nil, let engine = actor.engine {
            waiting[actor.index] = await engine.waitingDeletions
        }
        stats.acknowledgedWrites += sharingOracle.acknowledge(
            stored: stored, actor: actor?.index, deletionWaits: { waiting[$0]?.contains($1) ?? false },
            into: &oracle, tick: { self.nextTick() })
        violations += try await accessViolations()
        guard let first = violations.first else { return }
        throw InvariantBroken(invariant: first.0, detail: violations.prefix(4).map(\.1).joined(separator: "; "))
    }

    /// A participant without access reads nothing of the zone through their
    /// shared database; their devices that synced since they lost it hold nothing.
    private func accessViolations() async throws -> [(SimulationInvariant, String)] {
        var found: [(SimulationInvariant, String)] = []
        for user in participantUsers where sharingOracle.access[user] == nil {
            let invariant: SimulationInvariant =
                sharingOracle.lostAt[user] == nil ? .participantsOnly : .lostAccessHoldsNothing
            if let names = try await readable(by: user), !names.isEmpty {
                found.append(
                    (invariant, "\(user), without access, reads \(names.prefix(3)) through the shared database"))
            }
            for device in devices where device.participant == user {
                guard let engine = device.engine else { continue }
                // Before a sync since the loss, the device may still show what it had.
                if let lost = sharingOracle.lostAt[user], (device.lastSuccessfulSync ?? 0) < lost { continue }
                // Records the app created since that sync are its own, not the owner's.
                let held = await engine.notes.map(\.id).filter { name in
                    (device.localWrites[name] ?? .min) < (device.lastSuccessfulSync ?? 0)
                }
                stats.checkedAfterLoss += 1
                guard !held.isEmpty else { continue }
                found.append(
                    (
                        invariant,
                        "device \(device.index) of \(user), without access and synced since, holds "
                            + "\(held.sorted().prefix(3))"
                    ))
            }
        }
        return found
    }

    /// The records of the owner's zone that `user`'s shared database
    /// answers; `nil` when it answers the zone as missing.
    private func readable(by user: String) async throws -> [String]? {
        guard let inspector = inspectors[user] else { return nil }
        let names = zoneAtLastCheck.keys.sorted() + [ShareDetails.zoneShareName]
        do {
            let zones = try await inspector.listZones().map(\.zoneID)
            let results = try await inspector.lookupRecords(names, zoneID: sharedZoneID, desiredKeys: [])
            let readable = results.compactMap(\.record?.recordName)
            return zones.contains(sharedZoneID) ? readable + ["(the zone)"] : readable
        } catch let error as CloudError where error.code == .zoneNotFound {
            return nil
        }
    }
}
