import CloudCodable
import CloudProtocol

/// Who may write which record: a participant writes the records of its
/// `READ_WRITE` shares only (a `READ_ONLY` participant writes nothing), the
/// share itself only as its owner or an administrator; in the public
/// database, a user changes what it created. Every store and the in-memory
/// server ask here before a save, a delete or an asset upload.
enum WritePermissions {
    /// Why the caller may not change a live record of the public database,
    /// or `nil` when it may: a user changes the records it created, a
    /// server-to-server key changes any, and a record a key created is
    /// changed by keys only, so that users cannot deface what the app's
    /// backend publishes.
    static func publicRefusal(_ row: StoredRecord, _ context: RequestContext) -> String? {
        guard let user = context.user else { return nil }
        guard let creator = row.creator else {
            return "the record was published with a server-to-server key; only the container's keys may change it"
        }
        return creator.isExactly(user) ? nil : "only its creator may change a record of the public database"
    }

    /// Why the caller may not write a record (save it, or delete it with
    /// `isDelete`) whose row is `row`, or `nil` when it may: a participant
    /// writes the records of its `READ_WRITE` shares and, as an
    /// administrator, the share; the public database's rule is
    /// ``publicRefusal(_:_:)``. A participant's delete of a share
    /// record (leaving it) is not a write.
    static func refusal(
        _ row: StoredRecord?, recordType: String, isDelete: Bool, access: ZoneAccess, context: RequestContext
    ) -> String? {
        if let participant = access.view.participant {
            if let row, let stored = row.record {
                guard let permission = access.view.permission(for: row.shareKey) else {
                    return "the record is not in a share that \(participant) takes part in"
                }
                if ShareRules.isShare(stored.recordType) {
                    // An administrator's change is checked with the share's other rules.
                    guard access.isAdministrator(participant, ofShare: stored.recordName) else {
                        return "only the share's owner or an administrator changes a share"
                    }
                } else {
                    guard permission == .readWrite else { return "\(participant) may only read this share" }
                    if isDelete, stored.share != nil {
                        return "only the owner deletes the root record of a shared hierarchy"
                    }
                }
            }
            if ShareRules.isShare(recordType), row?.record == nil { return "only a zone's owner shares its records" }
        }
        if context.key.scope == .public, let row, row.record != nil { return publicRefusal(row, context) }
        return nil
    }
}
