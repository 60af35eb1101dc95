/// What the simulator knows every user's data must satisfy at the end of a
/// history, built from the writes whose `upload` or `delete` returned.
///
/// - No lost edit: for each record and field a multiset of live values. An
///   edit made on a copy whose field held `b` removes one `b` (it was seen
///   and superseded) and adds the new value; at the end each field of each
///   present record must hold a live value.
/// - Presence: a record created (or once seen on the server) and never
///   deleted must be present; a record whose last write is a delete that
///   saw every earlier write must be absent.
///
/// Records are named by identifier, which is unique across users, so the
/// oracle needs no user key.
struct Oracle {
    /// One write of a record, in the order the writes returned.
    struct Write {
        var device: Int
        var tick: Int
        var isDelete: Bool
        /// For a delete: it saw every earlier write of the record.
        var dominant = false
        /// When the writing device's sync sent it and left nothing pending.
        var published: Int?
    }

    /// What the oracle knows about one record.
    struct Entry {
        var live: [SimField: [String: Int]] = [:]
        /// Values introduced more than once (reverts): which instance a
        /// copy saw is unknown, so they are never removed.
        var reintroduced: [SimField: Set<String>] = [:]
        var introduced: [SimField: Set<String>] = [:]
        var created = false
        var writes: [Write] = []
        /// A change of the record was discarded on a user switch.
        var withdrawnAt: Int?
        /// When the zone was last deleted behind the devices' backs while
        /// the record was known: devices then send their copies again.
        var zoneWipedAt: Int?
        /// The server held the record at some check.
        var everStored = false

        mutating func introduce(_ value: String, in field: SimField) {
            if !introduced[field, default: []].insert(value).inserted {
                reintroduced[field, default: []].insert(value)
            }
            live[field, default: [:]][value, default: 0] += 1
        }

        mutating func supersede(_ value: String, in field: SimField) {
            guard reintroduced[field]?.contains(value) != true, let count = live[field]?[value] else { return }
            live[field]?[value] = count > 1 ? count - 1 : nil
        }

        func isLive(_ value: String, in field: SimField) -> Bool {
            (live[field]?[value] ?? 0) > 0 || reintroduced[field]?.contains(value) == true
        }

        var everDeleted: Bool { zoneWipedAt != nil || writes.contains(where: \.isDelete) }
    }

    private(set) var entries: [String: Entry] = [:]

    // MARK: Writes

    /// A record was created on `device` with `note`'s values.
    mutating func created(_ note: SimNote, device: Int, tick: Int) {
        var entry = entries[note.id] ?? Entry()
        for field in SimField.allCases { entry.introduce(field.value(of: note), in: field) }
        entry.created = true
        entry.writes.append(Write(device: device, tick: tick, isDelete: false))
        entries[note.id] = entry
    }

    /// `field` of the record was set to `new` on `copy`, which the
    /// device's model writes as `written` when it has to send it whole
    /// (version 3 writes its default rating for none).
    mutating func edited(
        _ copy: SimNote, field: SimField, to new: String, device: Int, tick: Int, written: SimNote? = nil
    ) {
        let identifier = copy.id
        var entry = entries[identifier] ?? Entry()
        if entry.writes.contains(where: \.isDelete) {
            // Once deleted, an edit may bring the record back as a whole:
            // every field of the copy, superseded or not.
            for other in SimField.allCases {
                entry.reintroduced[other, default: []].insert(other.value(of: written ?? copy))
            }
        }
        entry.supersede(field.value(of: copy), in: field)
        entry.introduce(new, in: field)
        entry.writes.append(Write(device: device, tick: tick, isDelete: false))
        entries[identifier] = entry
    }

    /// The record was deleted on `device`, whose last successful sync as
    /// the record's owner started at `lastSync` (`nil` if it never had one).
    /// A delete that may not dominate (`mayDominate: false`, a participant's,
    /// known only once the server showed it) never says the record must be absent.
    mutating func deleted(_ identifier: String, device: Int, tick: Int, lastSync: Int?, mayDominate: Bool = true) {
        var entry = entries[identifier] ?? Entry()
        let sawEverything =
            mayDominate
            && entry.writes.allSatisfy { write in
                if write.device == device { return true }
                guard let published = write.published, let lastSync else { return false }
                return published < lastSync
            }
        entry.writes.append(Write(device: device, tick: tick, isDelete: true, dominant: sawEverything))
        // An edit concurrent with the delete may bring the record back as
        // its copy held it, with values that edits since had superseded.
        for (field, values) in entry.introduced { entry.reintroduced[field, default: []].formUnion(values) }
        entries[identifier] = entry
    }

    /// `device` finished a sync with nothing pending: its writes so far are on the server.
    mutating func published(device: Int, tick: Int) {
        for name in entries.keys {
            for index in entries[name]!.writes.indices {
                let write = entries[name]!.writes[index]
                if write.device == device, write.published == nil, write.tick < tick {
                    entries[name]!.writes[index].published = tick
                }
            }
        }
    }

    /// The engine reported the record's local change as discarded.
    mutating func withdraw(_ identifier: String, tick: Int) {
        entries[identifier, default: Entry()].withdrawnAt = tick
    }

    /// The user's zone was deleted: whatever it held may be gone.
    mutating func zoneDeleted(owner user: String, tick: Int) {
        for name in entries.keys where SimNote.owner(of: name) == user { entries[name]!.zoneWipedAt = tick }
    }

    /// The server held the record.
    mutating func stored(_ identifier: String) {
        entries[identifier]?.everStored = true
    }

    // MARK: Checks

    /// What is wrong with `user`'s zone holding `stored`: one line per
    /// violation, each naming the invariant.
    func violations(owner user: String, stored: [SimNote]) -> [(SimulationInvariant, String)] {
        var found: [(SimulationInvariant, String)] = []
        let present = Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for name in entries.keys.sorted() where SimNote.owner(of: name) == user {
            let entry = entries[name]!
            if let note = present[name] {
                found += valueViolations(entry, note)
                if let last = entry.writes.last, last.isDelete, last.dominant,
                    entry.withdrawnAt.map({ $0 < last.tick }) ?? true,
                    entry.zoneWipedAt.map({ $0 < last.tick }) ?? true
                {
                    found.append((.presence, "\(name) is present, but its last write was a delete that saw every edit"))
                }
            } else if !entry.everDeleted, (entry.created && entry.withdrawnAt == nil) || entry.everStored {
                found.append((.presence, "\(name) was never deleted and is missing from \(user)'s zone"))
            }
        }
        return found
    }

    private func valueViolations(_ entry: Entry, _ note: SimNote) -> [(SimulationInvariant, String)] {
        guard entry.withdrawnAt == nil, entry.zoneWipedAt == nil else { return [] }
        return SimField.allCases.compactMap { field in
            let value = field.value(of: note)
            guard !entry.isLive(value, in: field) else { return nil }
            let live = (entry.live[field] ?? [:]).keys.sorted() + (entry.reintroduced[field] ?? []).sorted()
            return (.noLostEdit, "\(note.id).\(field) holds \(value), which an edit superseded; live: \(live)")
        }
    }
}
