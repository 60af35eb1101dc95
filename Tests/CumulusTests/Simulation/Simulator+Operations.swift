@_spi(Testing) import Cumulus
import CumulusTesting
import Foundation

extension Simulator {
    /// How often each operation is picked for a step.
    static let stepWeights: [(SimulationOperation, Int)] = [
        (.create, 8), (.edit, 20), (.staleEdit, 8), (.revert, 6), (.delete, 5), (.sync, 25),
        (.connectivity, 3), (.restart, 3), (.switchUser, 2), (.signOut, 1),
        (.fault, 8), (.lostAnswer, 4), (.zoneDelete, 1), (.expireTokens, 2), (.rotateKey, 1), (.mark, 4),
    ]

    /// How often each operation is picked on a device whose sync waits to retry.
    static let duringRetryWeights: [(SimulationOperation, Int)] = [
        (.delete, 3), (.edit, 3), (.revert, 2), (.staleEdit, 1), (.create, 1),
        (.switchUser, 1), (.signOut, 1), (.kill, 2), (.connectivity, 1), (.mark, 1),
    ]

    /// How often each operation is picked for a step of a history with
    /// shares: no user switches (a device belongs to its owner or to one
    /// participant) and no zone deleted behind the devices' backs.
    static let sharingStepWeights: [(SimulationOperation, Int)] =
        stepWeights.filter { ![.switchUser, .signOut, .zoneDelete].contains($0.0) } + [
            (.share, 4), (.setPermission, 4), (.addParticipant, 2), (.removeParticipant, 3), (.stopSharing, 2),
            (.accept, 6), (.leave, 3),
        ]

    /// How often each operation is picked on a device of a history with
    /// shares whose sync waits to retry.
    static let sharingDuringRetryWeights: [(SimulationOperation, Int)] =
        duringRetryWeights.filter { ![.switchUser, .signOut].contains($0.0) } + [
            (.setPermission, 1), (.removeParticipant, 1), (.leave, 1),
        ]

    /// One random operation on one random device.
    func step() async throws {
        stats.operations += 1
        let device = random.pick(devices)
        actor = device
        let weights =
            (options.sharing ? Self.sharingStepWeights : Self.stepWeights)
            + (options.versions ? [(.upgrade, 3)] : [])
        guard let operation = random.weighted(enabled(weights)) else { return }
        try await perform(operation, on: device)
    }

    /// Carries out `operation` on `device`; ``SimulationOperation/kill`` is
    /// handled where a sync waits.
    func perform(_ operation: SimulationOperation, on device: SimulationDevice) async throws {
        switch operation {
        case .create: try await create(on: device)
        case .edit: try await edit(on: device)
        case .staleEdit: try await staleEdit(on: device)
        case .revert: try await revert(on: device)
        case .delete: try await delete(on: device)
        case .sync:
            guard device.engine != nil else { return }
            _ = try await sync(device, duringRetries: !options.disabled.contains(.duringRetry))
        case .connectivity: toggleConnectivity(of: device)
        case .restart:
            guard device.engine != nil else { return }
            try await restart(device)
        case .switchUser: switchUser(of: device)
        case .signOut: signOut(device)
        case .fault: injectFault(on: device)
        case .lostAnswer: injectLostAnswer(on: device)
        case .zoneDelete: await deleteZone(of: device)
        case .expireTokens: await expireTokens(of: device)
        case .share: try await shareZone(on: device)
        case .setPermission: try await setPermission(on: device)
        case .addParticipant: try await addParticipant(on: device)
        case .removeParticipant: try await removeParticipant(on: device)
        case .stopSharing: try await stopSharing(on: device)
        case .accept: try await accept(on: device)
        case .leave: try await leave(on: device)
        case .upgrade: try await upgrade(device)
        case .rotateKey: try await rotateKey(of: device)
        case .mark: try await markOnly(on: device)
        case .kill, .duringRetry: break
        }
    }

    // MARK: Writes

    private func create(on device: SimulationDevice) async throws {
        // While the device's user and the engine's differ, the engine has
        // not seen the switch yet: whose record it would be is undecided.
        guard let engine = device.engine, let user = device.handle.signedInUser, user == device.engineUser else {
            return
        }
        // A participant's records go to the owner's zone, named after both.
        let prefix = device.participant.map { "\(sharingOwner)-\($0)." } ?? "\(user)-"
        createdCount[prefix, default: 0] += 1
        var note = SimNote(id: "\(prefix)\(createdCount[prefix]!)", title: "", body: nil, count: 0, tags: [])
        let fields = SimVersions.fields(of: device.version)
        for field in fields { field.set(freshValue(field, by: device.participant), on: &note) }
        note.mark = random.chance(0.5) ? freshMark(on: device) : nil
        try await write("create \(note.id)", on: device) { try await engine.upload(note: note) }
        device.marks.updateValue(note.mark, forKey: note.id)
        fieldOracle.created(note, fields: fields, device: device.index)
        if device.participant != nil {
            sharingOracle.queue(.created(note, device: device.index))
            device.localWrites[note.id] = nextTick()
        } else {
            oracle.created(note, device: device.index, tick: nextTick())
        }
        record("d\(device.index) create \(note.id) \(note.content) mark \(note.mark ?? "nil")")
    }

    private func edit(on device: SimulationDevice) async throws {
        guard let engine = device.engine else { return }
        let models = await engine.notes
        guard !models.isEmpty else { return }
        let note = random.pick(models)
        let field = random.pick(SimVersions.fields(of: device.version))
        // Version 2 may also clear its optional rating (a participant's
        // writes are known by their fresh values: they clear nothing).
        if field == .rating, device.version == 2, device.participant == nil, note.rating != nil, random.chance(0.25) {
            return try await change(note, field, to: SimField.absent, on: device, label: "clear")
        }
        try await change(note, field, to: freshValue(field, by: device.participant), on: device, label: "edit")
    }

    /// Edits a copy the app kept on screen from an earlier sync.
    private func staleEdit(on device: SimulationDevice) async throws {
        device.screens = device.screens.filter { device.syncCount - $0.value.takenAt <= 3 }
        guard !device.screens.isEmpty else { return try await edit(on: device) }
        let name = random.pick(device.screens.keys.sorted())
        let field = random.pick(SimVersions.fields(of: device.version))
        try await change(
            device.screens[name]!.note, field, to: freshValue(field, by: device.participant), on: device,
            label: "stale edit")
    }

    /// Sets a field back to what it held before this device's last edit of it.
    private func revert(on device: SimulationDevice) async throws {
        // A participant's write is known by its fresh value: they make no reverts.
        guard device.participant == nil else { return try await edit(on: device) }
        guard let engine = device.engine else { return }
        var choices: [(String, SimField, String)] = []
        for name in device.lastEdits.keys.sorted() {
            for field in SimVersions.fields(of: device.version) {
                // Version 3's rating is required: it cannot go back to none.
                if let old = device.lastEdits[name]?[field], old != SimField.absent || device.version != 3 {
                    choices.append((name, field, old))
                }
            }
        }
        guard !choices.isEmpty else { return try await edit(on: device) }
        let (name, field, old) = random.pick(choices)
        guard let note = await engine.note(withIdentifier: name), field.value(of: note) != old else { return }
        try await change(note, field, to: old, on: device, label: "revert")
    }

    /// Uploads `note` with `field` set to `value` and tells the oracle.
    private func change(
        _ note: SimNote, _ field: SimField, to value: String, on device: SimulationDevice, label: String
    ) async throws {
        guard let engine = device.engine else { return }
        var edited = note
        let old = field.value(of: note)
        field.set(value, on: &edited)
        // The app keeps its mark current on every copy (a stale copy's own would be ambiguous), or sets a new one.
        edited.mark =
            random.chance(0.3) ? freshMark(on: device) : await engine.note(withIdentifier: note.id)?.mark
        try await write("\(label) \(note.id)", on: device) { try await engine.upload(note: edited) }
        device.marks.updateValue(edited.mark, forKey: note.id)
        fieldOracle.wrote(value, in: field, of: note.id, device: device.index)
        let written = SimVersions.written(edited, version: device.version)
        if device.participant != nil {
            sharingOracle.queue(.edited(note, field: field, value: value, device: device.index, written: written))
            device.localWrites[note.id] = nextTick()
        } else {
            oracle.edited(note, field: field, to: value, device: device.index, tick: nextTick(), written: written)
        }
        device.lastEdits[note.id, default: [:]][field] = old
        device.forget(note.id)
        let tag = note.cloudMetadata?.changeTag ?? "nil"
        let mark = edited.mark ?? "nil"
        record("d\(device.index) \(label) \(note.id).\(field) \(old) -> \(value) (copy @\(tag)) mark \(mark)")
    }

    private func delete(on device: SimulationDevice) async throws {
        guard let engine = device.engine else { return }
        let models = await engine.notes
        guard !models.isEmpty else { return }
        let name = random.pick(models).id
        try await write("delete \(name)", on: device) { try await engine.delete(identifiers: [name]) }
        let owner = SimNote.owner(of: name)
        let lastSync = device.lastSync.flatMap { $0.user == owner ? $0.tick : nil }
        if device.participant != nil {
            sharingOracle.queue(.deleted(name, device: device.index))
            device.localWrites[name] = nextTick()
        } else {
            // After the zone was deleted on the server, a device that knew
            // the record sends its copy again when it first syncs: until
            // every device of the owner has, a delete may not be the last word.
            let wipe = oracle.entries[name]?.zoneWipedAt
            let resent =
                wipe.map { wipe in
                    devices.allSatisfy { other in
                        other.engineUser != owner
                            || (other.lastSync.map { $0.user == owner && $0.tick > wipe } ?? false)
                    }
                } ?? true
            oracle.deleted(name, device: device.index, tick: nextTick(), lastSync: lastSync, mayDominate: resent)
        }
        device.forget(name)
        device.lastEdits[name] = nil
        // The device's own values go with the model.
        device.marks[name] = nil
        record("d\(device.index) delete \(name)")
    }

    /// Uploads a model whose only change is its mark (set anew or
    /// cleared): a change of local-only fields alone, which queues nothing.
    private func markOnly(on device: SimulationDevice) async throws {
        guard let engine = device.engine else { return }
        let models = await engine.notes
        guard !models.isEmpty else { return }
        var note = random.pick(models)
        let old = note.mark
        note.mark = random.chance(0.2) ? nil : freshMark(on: device)
        let pending = await engine.pendingChangeCount
        try await write("mark \(note.id)", on: device) { try await engine.upload(note: note) }
        device.marks.updateValue(note.mark, forKey: note.id)
        stats.markOnlyUploads += 1
        record("d\(device.index) mark \(note.id) \(old ?? "nil") -> \(note.mark ?? "nil")")
        let after = await engine.pendingChangeCount
        guard after == pending else {
            throw InvariantBroken(
                invariant: .localFieldsStayLocal,
                detail: "d\(device.index) changing only \(note.id)'s mark took the pending changes from "
                    + "\(pending) to \(after)")
        }
    }

    /// A mark nobody used before, naming the device that writes it.
    func freshMark(on device: SimulationDevice) -> String {
        serial += 1
        return "\(device.markPrefix)m\(serial)"
    }

    /// Runs a local write; one that throws is not a failure of the world.
    private func write(_ what: String, on device: SimulationDevice, _ body: () async throws -> Void) async throws {
        device.queuedVersions.insert(device.version)
        do {
            try await body()
        } catch {
            throw InvariantBroken(invariant: .unexpectedError, detail: "\(what) threw \(error)")
        }
    }

    // MARK: Devices and accounts

    private func toggleConnectivity(of device: SimulationDevice) {
        device.offline.toggle()
        if device.offline {
            device.handle.inject(.networkFailure(), count: 1_000_000)
            stats.faults["offline", default: 0] += 1
        } else {
            device.handle.removeInjectedFaults()
        }
        record("d\(device.index) goes \(device.offline ? "offline" : "online")")
    }

    /// Closes the engine and opens a new one on the same journal; before
    /// closing, a second engine on the directory must be refused.
    func restart(_ device: SimulationDevice) async throws {
        var refused = Self.configuration(
            clock: clock, randomSeed: 0, encryption: keys.encryption(current: device.currentKey))
        refused.directoryWait = .zero
        do {
            _ = try await Self.openEngine(
                version: device.version, database: device.handle, directory: device.directory,
                configuration: refused)
            throw InvariantBroken(
                invariant: .journalOpens, detail: "a second engine opened device \(device.index)'s directory")
        } catch let error as JournalError where error.code == .inUse {
            stats.secondEnginesRefused += 1
        }
        await device.engine?.close()
        device.engine = nil
        device.events = nil
        device.forgetAll()
        stats.restarts += 1
        record("d\(device.index) restarts")
        try await open(device)
    }

    /// The device updates its app: the engine closes, and one of a newer
    /// version's model type opens on the same journal.
    func upgrade(_ device: SimulationDevice, to version: Int? = nil) async throws {
        guard device.version < SimVersions.all.last! else { return }
        let old = device.version
        device.version = version ?? random.int(in: (old + 1)...SimVersions.all.last!)
        stats.upgrades += 1
        record("d\(device.index) updates its app from v\(old) to v\(device.version)")
        // A participant's device without an engine opens the new version on accepting.
        guard let engine = device.engine else { return }
        await engine.close()
        device.engine = nil
        device.events = nil
        device.forgetAll()
        try await open(device)
        try await checkRevived(device)
    }

    /// Right after an update, the engine decodes the records it kept
    /// undecodable that the new version reads, without fetching: a version
    /// that reads every version's records lists none.
    private func checkRevived(_ device: SimulationDevice) async throws {
        guard SimVersions.readsEveryVersion(device.version), let engine = device.engine else { return }
        let held = await engine.undecodableRecords
        guard held.isEmpty else {
            throw InvariantBroken(
                invariant: .undecodableKept,
                detail: "device \(device.index) updated to v\(device.version) still lists \(held.sorted()) "
                    + "as undecodable")
        }
    }

    /// The device's app writes the encrypted field with the history's next
    /// key from now on: its engine reopens with it, every key still reading.
    private func rotateKey(of device: SimulationDevice) async throws {
        guard device.currentKey < keys.all.count - 1 else { return }
        device.currentKey += 1
        stats.keyRotations += 1
        record("d\(device.index) rotates to key \(keys.all[device.currentKey].identifier)")
        // A participant's device without an engine opens with the key on accepting.
        guard device.engine != nil else { return }
        try await restart(device)
    }

    private func switchUser(of device: SimulationDevice) {
        let current = device.handle.signedInUser
        let user = random.pick(users.filter { $0 != current })
        device.handle.signIn(as: user)
        device.accountChanges += 1
        device.forgetAll()
        stats.userSwitches += 1
        record("d\(device.index) signs in as \(user)")
    }

    private func signOut(_ device: SimulationDevice) {
        device.handle.signOut()
        device.accountChanges += 1
        device.forgetAll()
        record("d\(device.index) signs out")
    }

    // MARK: Faults

    private func injectFault(on device: SimulationDevice) {
        let (name, fault): (String, InjectedFault) =
            switch random.int(in: 0...3) {
            case 0: ("throttled", .throttled(retryAfter: .seconds(random.int(in: 1...20))))
            case 1: ("tryAgainLater", .tryAgainLater())
            case 2: ("internalError", .internalError())
            default: ("networkFailure", .networkFailure())
            }
        let targets: [Set<CloudRequestKind>?] = [
            nil, [.modifyRecords], [.fetchZoneChanges], [.currentUser], [.modifyZones],
        ]
        let requests = random.pick(targets)
        let count = random.int(in: 1...3)
        device.handle.inject(fault, count: count, on: requests)
        stats.faults[name, default: 0] += 1
        let on = requests.map { $0.map(\.rawValue).sorted().joined(separator: ",") } ?? "any"
        record("d\(device.index) fault \(name) x\(count) on \(on)")
    }

    private func injectLostAnswer(on device: SimulationDevice) {
        let count = random.int(in: 1...2)
        device.handle.inject(.networkFailure(afterApplying: true), count: count, on: [.modifyRecords])
        stats.faults["lostAnswer", default: 0] += 1
        record("d\(device.index) fault lostAnswer x\(count) on modifyRecords")
    }

    private func deleteZone(of device: SimulationDevice) async {
        let user = device.handle.signedInUser ?? random.pick(users)
        _ = await server.deleteZone(zone, ownedBy: user)
        oracle.zoneDeleted(owner: user, tick: nextTick())
        stats.faults["zoneDeleted", default: 0] += 1
        record("server deletes \(user)'s zone")
    }

    private func expireTokens(of device: SimulationDevice) async {
        let user = options.sharing ? sharingOwner : device.handle.signedInUser ?? random.pick(users)
        _ = await server.expireChangeTokens(in: zone, ownedBy: user)
        stats.faults["tokenExpired", default: 0] += 1
        record("server expires \(user)'s change tokens")
    }
}
