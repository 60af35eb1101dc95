import CloudCodable
import CloudProtocol

extension Replica {
    /// Whether the server's refusal lasts, in the journal too, until what
    /// refused it changes: a share's (`ACCESS_DENIED`), until the share
    /// changes; a dangling `VALIDATE` reference's, until its target appears.
    /// Other refusals (a full storage, say) are tried again when the engine
    /// next opens.
    static func isLasting(_ error: CloudError) -> Bool {
        error.code == .accessDenied || error.code == .validatingReferenceError
    }

    /// Throws when one of the record's references names another zone than
    /// the engine's: the server would refuse it, so it is never queued.
    func checkReferences(of record: Record) throws {
        for (field, reference) in record.fields.references {
            guard let zone = reference.zoneID, !isEngineZone(zone) else { continue }
            throw SyncEngineError(
                .crossZoneReference,
                "'\(record.recordName)' refers in field '\(field)' to '\(reference.recordName)' in zone "
                    + "'\(zone.zoneName)', not the engine's zone '\(zoneID.zoneName)': references stay in their zone")
        }
    }

    /// Whether `zone` names the engine's zone: the same name, and the same
    /// owner, the signed-in user being the owner of its private zones.
    private func isEngineZone(_ zone: ZoneID) -> Bool {
        guard zone.zoneName.utf8.elementsEqual(zoneID.zoneName.utf8) else { return false }
        func owner(_ zone: ZoneID) -> String? {
            guard let name = zone.namedOwner, !name.utf8.elementsEqual((meta.user ?? "").utf8) else { return nil }
            return name
        }
        switch (owner(zone), owner(zoneID)) {
        case (nil, nil): return true
        case (let one?, let other?): return one.utf8.elementsEqual(other.utf8)
        default: return false
        }
    }

    /// Whether a change waits for the target of a `VALIDATE` reference:
    /// the fetch then reads records of every type, to see it appear.
    var awaitsReferenceTargets: Bool {
        refused.values.contains { $0.code == .validatingReferenceError }
    }

    /// The record `name` exists now (fetched, acknowledged or queued here):
    /// the changes refused for want of it may be sent again.
    mutating func referenceTargetAppeared(_ name: String, _ effects: inout Effects) {
        guard !refused.isEmpty else { return }
        for (referrer, error) in refused where error.code == .validatingReferenceError {
            guard case .save(let record)? = pending[referrer]?.kind else { continue }
            let refersToIt = record.fields.references.contains {
                $0.reference.action == .validate && $0.reference.recordName.utf8.elementsEqual(name.utf8)
            }
            if refersToIt { forgetRefusal(referrer, &effects) }
        }
    }
}
