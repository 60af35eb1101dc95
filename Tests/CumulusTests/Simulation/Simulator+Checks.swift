import Cumulus
import CumulusTesting
import Foundation

extension Simulator {
    /// No user's zone holds a record another user made; records seen here
    /// are known to the oracle to have reached the server.
    func checkOwnRecordsOnly() async throws {
        for user in users {
            for record in await server.storedRecords(in: zone, of: user)
            where record.recordType == SimNote.cloudRecordType {
                guard SimNote.owner(of: record.recordName) == user else {
                    throw InvariantBroken(
                        invariant: .ownRecordsOnly, detail: "\(user)'s zone holds \(record.recordName)")
                }
                oracle.stored(record.recordName)
            }
        }
    }

    /// The ``FieldOracle``'s checks of every user's zone after a step of
    /// ``actor`` (or of the server, when `nil`), and what reading the
    /// step's events found.
    func checkFields() async throws {
        var stored: [SimNote] = []
        for user in users { stored += try await storedNotes(of: user) }
        let before = fieldOracle.changes
        let unanchored = mergedWithoutAncestor
        let violations =
            eventViolations
            + fieldOracle.check(
                stored, device: actor?.index, versions: actor.map { $0.queuedVersions.union([$0.version]) },
                tick: nextTick()
            ) { name in
                unanchored.contains(name) || oracle.entries[name]?.zoneWipedAt != nil
            }
        if let actor, actor.queueDrained {
            actor.queuedVersions = []
            actor.queueDrained = false
        }
        stats.fieldChanges += fieldOracle.changes - before
        mergedWithoutAncestor = []
        eventViolations = []
        guard let first = violations.first else { return }
        throw InvariantBroken(invariant: first.0, detail: violations.prefix(4).map(\.1).joined(separator: "; "))
    }

    /// Stops the faults, signs every device in as one user, syncs until
    /// quiet, and checks convergence and the oracle.
    /// With shares, every device stays its user's, and participants give
    /// up the changes the server refused.
    func finish() async throws {
        let user = options.sharing ? sharingOwner : random.pick(users)
        record(options.sharing ? "faults stop" : "faults stop; every device signs in as \(user)")
        for device in devices {
            device.handle.removeInjectedFaults()
            device.offline = false
            if !options.sharing { device.handle.signIn(as: user) }
        }
        try await syncUntilQuiet(user)
        try await checkOwnRecordsOnly()
        try await checkEncryptedFields()
        await countSealedValues()
        try await checkConvergence(of: user)
        try await checkOracle()
    }

    /// Rounds of `sync()` on every device until a round changes nothing:
    /// no replica, not the user's zone, and nothing left pending.
    private func syncUntilQuiet(_ user: String) async throws {
        for _ in 1...8 {
            let before = await replicas()
            let zoneBefore = try await storedNotes(of: user).map(\.content)
            for device in devices {
                guard let engine = device.engine else { continue }
                actor = device
                let access = sharingOracle.access
                if case .failed(let error) = try await sync(device, duringRetries: false) {
                    throw InvariantBroken(
                        invariant: .convergence,
                        detail: "device \(device.index)'s sync failed after the faults stopped: \(error)")
                }
                let refused = await engine.refusedChanges.keys.sorted()
                if device.participant != nil, !refused.isEmpty {
                    try await engine.discardChanges(identifiers: refused)
                    record("d\(device.index) discards refused \(refused)")
                }
                if options.sharing { try await checkSharing(accessBefore: access) }
                try await checkFields()
                try await checkLocalFields()
                // A change the server's record refused because this version
                // cannot read that record waits for the app's update.
                let unreadable = await engine.undecodableRecords
                if device.participant == nil, refused.contains(where: unreadable.contains) {
                    try await upgrade(device, to: SimVersions.all.last!)
                }
            }
            var pending = 0
            for device in devices { pending += await device.engine?.pendingChangeCount ?? 0 }
            let zoneAfter = try await storedNotes(of: user).map(\.content)
            if pending == 0, zoneAfter == zoneBefore, await replicas() == before { return }
        }
        throw InvariantBroken(invariant: .convergence, detail: "still changing after 8 rounds of syncs")
    }

    private func replicas() async -> [[String: SimContent]] {
        var result: [[String: SimContent]] = []
        for device in devices {
            let models = await device.engine?.notes ?? []
            result.append(Dictionary(uniqueKeysWithValues: models.map { ($0.id, $0.content) }))
        }
        return result
    }

    /// The notes a user's zone holds, with the server's metadata.
    func storedNotes(of user: String) async throws -> [SimNote] {
        try await openedRecords(of: user).map { record in
            var note = try RecordDecoder().decode(SimNote.self, from: record)
            note.cloudMetadata = record.metadata
            return note
        }
    }

    /// The notes' records a user's zone holds, read as the devices read
    /// them: the encrypted field opened with the history's keys.
    func openedRecords(of user: String) async throws -> [Record] {
        try await server.storedRecords(in: zone, of: user).filter { $0.recordType == SimNote.cloudRecordType }.map {
            try opened($0, of: user)
        }
    }

    /// `record` with its encrypted field opened, once the field is found
    /// sealed: an envelope that names one of the history's keys, opens to
    /// a string, and does not hold that string in clear.
    func opened(_ record: Record, of user: String) throws -> Record {
        let field = SimulationKeys.encryptedField.rawValue
        let name = "\(user)'s \(record.recordName).\(field)"
        guard case .bytes(let sealed)? = record.fields[field], sealed.starts(with: SimulationKeys.magic) else {
            let held = record.fields[field].map { "\($0)" } ?? "nothing"
            throw InvariantBroken(invariant: .encryptedOnServer, detail: "\(name) is not sealed: \(held)")
        }
        var result = record
        // Opening costs a few SHA-256 blocks, and the checks read every record after every step.
        let cacheKey = SealedValue(recordName: record.recordName, sealed: sealed)
        if let value = openedValues[cacheKey] {
            result.fields[field] = .string(value)
            return result
        }
        do {
            result = try keys.reader.open(record, fields: SimVersions.encryptedFields)
        } catch {
            throw InvariantBroken(invariant: .encryptedOnServer, detail: "\(name) does not open: \(error)")
        }
        guard case .string(let value)? = result.fields[field] else {
            let held = result.fields[field].map { "\($0)" } ?? "nothing"
            throw InvariantBroken(invariant: .encryptedOnServer, detail: "\(name) opens to \(held)")
        }
        // Quoted as in the sealed wire JSON: too long to turn up by chance in random bytes.
        if sealed.range(of: Data("\"\(value)\"".utf8)) != nil {
            throw InvariantBroken(invariant: .encryptedOnServer, detail: "\(name) holds \(value) in clear")
        }
        openedValues[cacheKey] = value
        stats.sealedValues += 1
        return result
    }

    /// Every user's zone holds its notes' encrypted field sealed (see ``opened(_:of:)``).
    func checkEncryptedFields() async throws {
        for user in users { _ = try await openedRecords(of: user) }
    }

    /// Counts the encrypted values on the server by the key that sealed them.
    func countSealedValues() async {
        let field = SimulationKeys.encryptedField.rawValue
        for user in users {
            for record in await server.storedRecords(in: zone, of: user) {
                guard case .bytes(let sealed)? = record.fields[field] else { continue }
                stats.sealedAtEnd[SimulationKeys.keyIdentifier(of: sealed) ?? "none", default: 0] += 1
            }
        }
    }

    /// Local-only fields stay where they were set: the server holds no
    /// mark, a device's models carry only marks of its own, and each model
    /// a device holds carries the mark its app last uploaded it with.
    func checkLocalFields() async throws {
        for user in users {
            for record in await server.storedRecords(in: zone, of: user)
            where record.recordType == SimNote.cloudRecordType {
                for field in SimVersions.localFields where record.fields[field] != nil {
                    throw InvariantBroken(
                        invariant: .localFieldsStayLocal,
                        detail: "\(user)'s \(record.recordName) holds local-only field \(field) on the server")
                }
            }
        }
        for device in devices {
            guard let engine = device.engine else { continue }
            let held = await engine.notes
            let names = Set(held.map(\.id))
            // What the device no longer holds it forgot, or will show again only as a version of its own.
            device.marks = device.marks.filter { names.contains($0.key) }
            for note in held {
                if let mark = note.mark, !mark.hasPrefix(device.markPrefix) {
                    throw InvariantBroken(
                        invariant: .localFieldsStayLocal,
                        detail: "device \(device.index)'s \(note.id) carries \(mark), another device's mark")
                }
                guard let expected = device.marks[note.id] else { continue }
                stats.marksChecked += 1
                guard note.mark == expected else {
                    throw InvariantBroken(
                        invariant: .localFieldsKept,
                        detail: "device \(device.index)'s \(note.id) carries mark \(note.mark ?? "nil"), "
                            + "its app last set \(expected ?? "nil")")
                }
            }
        }
    }

    /// Every device holds what the user's zone holds, change tags included,
    /// as its version of the app decodes it, and lists as undecodable the
    /// records its version cannot decode; a participant's device holds
    /// them while they have access, and nothing after.
    func checkConvergence(of user: String) async throws {
        let records = try await openedRecords(of: user)
        for (device, replica) in zip(devices, await replicas()) {
            let visible = device.participant.map { sharingOracle.access[$0] != nil } ?? true
            var expected: [String: SimContent] = [:]
            var undecodable: Set<String> = []
            for record in records where visible {
                if let note = SimVersions.decode(record, version: device.version) {
                    expected[note.id] = note.content
                } else {
                    undecodable.insert(record.recordName)
                }
            }
            if let engine = device.engine, await engine.undecodableRecords != undecodable {
                let held = await engine.undecodableRecords
                throw InvariantBroken(
                    invariant: .undecodableKept,
                    detail: "device \(device.index) (v\(device.version)) lists \(held.sorted()) as undecodable, "
                        + "\(user)'s zone holds \(undecodable.sorted()) it cannot decode")
            }
            guard replica != expected else { continue }
            let names = Set(replica.keys).union(expected.keys).sorted()
            let differences = names.filter { replica[$0] != expected[$0] }.prefix(3).map { name in
                "\(name): device \(replica[name]?.description ?? "absent"), "
                    + "expected \(expected[name]?.description ?? "absent")"
            }
            throw InvariantBroken(
                invariant: .convergence,
                detail: "device \(device.index) differs from \(user)'s zone: \(differences.joined(separator: "; "))")
        }
    }

    /// The oracle's checks against every user's zone.
    private func checkOracle() async throws {
        var violations: [(SimulationInvariant, String)] = []
        for user in users {
            violations += oracle.violations(owner: user, stored: try await storedNotes(of: user))
        }
        guard let first = violations.first else { return }
        throw InvariantBroken(
            invariant: first.0, detail: violations.prefix(4).map(\.1).joined(separator: "; "))
    }
}
