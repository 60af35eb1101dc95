/// What the simulator knows about each field of each record on the server,
/// checked after every step of a history (issue #32: devices on different
/// versions of the app never lose a field).
///
/// Only the device that takes a step writes to the server in it (or the
/// server itself, deleting a zone), so a field that changed between two
/// checks of a record the server held at both changed in that device's
/// step. The engine's rule is that a device changes only the fields its
/// model encodes (or encoded for the base version and no longer does:
/// those it clears), and only to what the app wrote. Hence:
///
/// - Unknown fields kept: a field the stepping device's model version does
///   not declare keeps its value (a newer version's field survives an
///   edit, a merge or a replay of an older one; an older version's field
///   survives a newer one that dropped it).
/// - Written values only: a field that changes takes a value the stepping
///   device's app wrote into that field of that record (a merge keeps the
///   server's value or the device's own). A merge without an ancestor may
///   bring back what the device's copy held, and after a zone loss devices
///   send their copies again; those records are exempt from this rule.
///
/// A record that appears (created, or sent again after a zone loss) or
/// disappears (deleted) is no change of a field; the ``Oracle`` judges it.
/// Each field's acknowledged history (value, writer, version) is kept for
/// the messages.
struct FieldOracle {
    /// One value a field held on the server, as first seen at a check.
    struct Acknowledged: CustomStringConvertible {
        var value: String
        /// The device whose step it appeared in, and its app's version.
        var device: Int?
        var version: Int?
        var tick: Int

        var description: String {
            let writer = device.map { "d\($0) v\(version ?? 0)" } ?? "server"
            return "\(value) (\(writer), t\(tick))"
        }
    }

    /// The values each device's app wrote, by record and field.
    private(set) var written: [Int: [String: [SimField: Set<String>]]] = [:]
    /// The records the server held at the last check.
    private(set) var snapshot: [String: SimNote] = [:]
    /// Each record's fields' values on the server, oldest first.
    private(set) var history: [String: [SimField: [Acknowledged]]] = [:]
    /// Field changes judged so far.
    private(set) var changes = 0

    /// `device`'s app wrote `value` into `field` of `record` (an upload returned).
    mutating func wrote(_ value: String, in field: SimField, of record: String, device: Int) {
        written[device, default: [:]][record, default: [:]][field, default: []].insert(value)
    }

    /// `device`'s app created `note` with the fields of its version.
    mutating func created(_ note: SimNote, fields: [SimField], device: Int) {
        for field in fields { wrote(field.value(of: note), in: field, of: note.id, device: device) }
    }

    /// Takes the server's records after a step of `device` (`nil` for the
    /// server's own), whose engine may send writes of the app's `versions`
    /// (the one it runs, and those whose writes it may still hold queued),
    /// and returns what broke.
    /// `exempt(name)` says whether the record may take values the device
    /// did not write (a merge without an ancestor, a zone loss).
    mutating func check(
        _ stored: [SimNote], device: Int?, versions: Set<Int>?, tick: Int, exempt: (String) -> Bool
    ) -> [(SimulationInvariant, String)] {
        var found: [(SimulationInvariant, String)] = []
        let version = versions?.max()
        var now: [String: SimNote] = [:]
        for note in stored {
            now[note.id] = note
            guard let before = snapshot[note.id] else {
                for field in SimField.allCases { acknowledge(note, field, device: device, version: version, tick) }
                continue
            }
            for field in SimField.allCases where field.value(of: before) != field.value(of: note) {
                changes += 1
                found += judge(note, field, was: field.value(of: before), device: device, versions: versions) {
                    exempt(note.id)
                }
                acknowledge(note, field, device: device, version: version, tick)
            }
        }
        snapshot = now
        return found
    }

    private func judge(
        _ note: SimNote, _ field: SimField, was old: String, device: Int?, versions: Set<Int>?, exempt: () -> Bool
    ) -> [(SimulationInvariant, String)] {
        let value = field.value(of: note)
        let past = (history[note.id]?[field] ?? []).suffix(3).map(\.description).joined(separator: ", ")
        let running = versions.map { $0.sorted().map { "v\($0)" }.joined(separator: "+") } ?? ""
        let step = device.map { "a step of d\($0) (\(running))" } ?? "a step of the server"
        guard let device, let versions else {
            return [(.unknownFieldsKept, "\(note.id).\(field) changed \(old) -> \(value) in \(step); history: \(past)")]
        }
        guard versions.contains(where: { SimVersions.fields(of: $0).contains(field) }) else {
            return [
                (
                    .unknownFieldsKept,
                    "\(note.id).\(field) changed \(old) -> \(value) in \(step), whose model does not declare it; "
                        + "history: \(past)"
                )
            ]
        }
        guard written[device]?[note.id]?[field]?.contains(value) == true || exempt() else {
            return [
                (
                    .writtenValuesOnly,
                    "\(note.id).\(field) changed \(old) -> \(value) in \(step), whose app never wrote it there; "
                        + "history: \(past)"
                )
            ]
        }
        return []
    }

    private mutating func acknowledge(_ note: SimNote, _ field: SimField, device: Int?, version: Int?, _ tick: Int) {
        let value = Acknowledged(value: field.value(of: note), device: device, version: version, tick: tick)
        history[note.id, default: [:]][field, default: []].append(value)
    }
}
