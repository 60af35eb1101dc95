import Cumulus

/// What the simulator knows about a shared zone's participants, checked
/// after every step of a history with shares.
///
/// - Refused writes stay out: every value a participant writes is fresh and
///   remembered with its writer. A participant value seen on the server for
///   the first time must have been written by the participant whose device
///   took the step, with `READ_WRITE` at the step's start or end; and a step
///   of a participant who had no write permission throughout leaves the
///   zone's records as they were.
/// - No lost edit: a participant's write counts as made once the server
///   acknowledged it, that is once it shows on the server (its fresh value
///   in the record's field, its record present, its record gone). Only then
///   is it handed to the ``Oracle``, which checks it like any other device's
///   write. A write refused for lack of permission, or discarded when the
///   share was lost, was never allowed and is never handed over.
/// - Access: who is an accepted participant, from the share record the
///   server holds, and when each participant last lost access.
struct SharingOracle {
    /// A participant's write the server has not been seen to acknowledge.
    enum Unacknowledged {
        case created(SimNote, device: Int)
        /// `copy` is the record as the device had it before the edit;
        /// `written`, the edited record as the device's model writes it whole.
        case edited(SimNote, field: SimField, value: String, device: Int, written: SimNote? = nil)
        case deleted(String, device: Int)

        var device: Int {
            switch self {
            case .created(_, let device), .edited(_, _, _, let device, _), .deleted(_, let device): device
            }
        }
    }

    /// The writer of every participant value (values are unique in a history).
    private(set) var writers: [String: String] = [:]
    /// Participant values the server held at some check.
    private(set) var seen: Set<String> = []
    /// The accepted participants and their permissions after the last check.
    private(set) var access: [String: SharePermission] = [:]
    /// When each participant without access lost it; absent for one who has
    /// access or never had it.
    private(set) var lostAt: [String: Int] = [:]
    /// Whether each participant ever had access.
    private(set) var everAccepted: Set<String> = []
    private(set) var unacknowledged: [Unacknowledged] = []
    /// Writes queued so far.
    private(set) var queued = 0

    // MARK: Writes

    /// `user` wrote `value` (on a device, not yet sent).
    mutating func wrote(_ value: String, by user: String) {
        writers[value] = user
    }

    mutating func queue(_ write: Unacknowledged) {
        unacknowledged.append(write)
        queued += 1
    }

    /// The writer of `value`, when a participant wrote it.
    func writer(of value: String) -> String? {
        writers[value]
    }

    // MARK: Checks

    /// The accepted participants the share record `share` lists, with their
    /// permissions; none without a share.
    static func accepted(in share: Record?) -> [String: SharePermission] {
        guard let participants = share?.shareDetails?.participants else { return [:] }
        var result: [String: SharePermission] = [:]
        for participant in participants where participant.role != .owner && participant.acceptanceStatus == .accepted {
            if let user = participant.userRecordName { result[user] = participant.permission }
        }
        return result
    }

    /// Takes the access after a step (`tick`): participants who had it and
    /// do not any more lost it now.
    mutating func observeAccess(_ new: [String: SharePermission], tick: Int) {
        for user in access.keys where new[user] == nil { lostAt[user] = tick }
        for user in new.keys {
            lostAt[user] = nil
            everAccepted.insert(user)
        }
        access = new
    }

    /// What is wrong with the zone holding `stored` after a step that
    /// `actor` (a participant, or `nil` for the owner) took, with access
    /// `before` it and ``access`` after it. `unchanged` says whether the
    /// zone's records are as they were before the step.
    mutating func writeViolations(
        stored: [SimNote], unchanged: Bool, actor: String?, before: [String: SharePermission]
    ) -> [(SimulationInvariant, String)] {
        var found: [(SimulationInvariant, String)] = []
        let after = access
        let mayWrite = { (user: String) in before[user] == .readWrite || after[user] == .readWrite }
        if let actor, !mayWrite(actor), !unchanged {
            found.append(
                (
                    .refusedWritesStayOut,
                    "the zone changed in a step of \(actor), who had \(before[actor]?.rawValue ?? "no access") before it "
                        + "and \(access[actor]?.rawValue ?? "no access") after it"
                ))
        }
        for note in stored {
            for field in SimField.allCases {
                let value = field.value(of: note)
                guard let writer = writers[value], !seen.contains(value) else { continue }
                seen.insert(value)
                if writer != actor || !mayWrite(writer) {
                    let permission = access[writer]?.rawValue ?? "no access"
                    found.append(
                        (
                            .refusedWritesStayOut,
                            "\(note.id).\(field) holds \(writer)'s \(value), first seen after a step of "
                                + "\(actor ?? "the owner"); \(writer) has \(permission)"
                        ))
                }
            }
        }
        return found
    }

    /// Hands the participant writes the server now shows to `oracle`.
    /// `deletionWaits(device, name)` says whether the device's engine still
    /// has its deletion of the record to send or in doubt (a refused one
    /// waits too: a restart sends it again); `actor` is the device that took the step.
    /// Returns how many writes were handed over.
    @discardableResult
    mutating func acknowledge(
        stored: [SimNote], actor: Int?, deletionWaits: (Int, String) -> Bool, into oracle: inout Oracle,
        tick: () -> Int
    ) -> Int {
        let present = Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var remaining: [Unacknowledged] = []
        for write in unacknowledged {
            switch write {
            case .created(let note, let device):
                if present[note.id] != nil {
                    oracle.created(note, device: device, tick: tick())
                } else {
                    remaining.append(write)
                }
            case .edited(let copy, let field, let value, let device, let written):
                if seen.contains(value) || present[copy.id].map({ field.value(of: $0) == value }) == true {
                    oracle.edited(copy, field: field, to: value, device: device, tick: tick(), written: written)
                } else {
                    remaining.append(write)
                }
            case .deleted(let name, let device):
                // Judged after the deleting device's own steps: gone means
                // acknowledged; no longer waiting (given up, replaced, or
                // discarded with the share) means never allowed.
                guard device == actor else {
                    remaining.append(write)
                    continue
                }
                if present[name] == nil {
                    oracle.deleted(name, device: device, tick: tick(), lastSync: nil, mayDominate: false)
                } else if deletionWaits(device, name) {
                    remaining.append(write)
                }
            }
        }
        let handed = unacknowledged.count - remaining.count
        unacknowledged = remaining
        return handed
    }
}
