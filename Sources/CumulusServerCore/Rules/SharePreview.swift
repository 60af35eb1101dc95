import CloudCodable
import CloudProtocol

/// What the page at a share's URL shows to anyone holding the URL: the
/// share's title and its owner, nothing else.
public struct SharePreview: Sendable, Hashable {
    /// The share's `cloudkit.title`, if it has one.
    public var title: String?
    /// The owner, as lookups show them: record name and, when known, name.
    public var owner: UserIdentity

    /// Creates a preview.
    public init(title: String?, owner: UserIdentity) {
        self.title = title
        self.owner = owner
    }
}

extension RecordService {
    /// The preview of the share with this shortGUID, or `nil` when there is
    /// none: what `GET /share/<shortGUID>` answers.
    public func sharePreview(shortGUID: String) async throws -> SharePreview? {
        guard !shortGUID.isEmpty, !shortGUID.utf8.contains(0) else { return nil }
        return try await storage.read { transaction -> SharePreview? in
            guard let share = try await transaction.share(shortGUID: shortGUID),
                let row = try await transaction.records(named: [share.recordName], inZone: share.zone).first,
                let record = row.record
            else { return nil }
            var title: String?
            if case .string(let text) = record.fields[ShareDetails.titleField] { title = text }
            // The owner's name shows to whoever holds the URL (``UserNames``).
            let owner = try await transaction.users(withRecordNames: [share.owner], container: share.container).first
            return SharePreview(
                title: title,
                owner: UserIdentity(userRecordName: share.owner, nameComponents: owner?.nameComponents))
        }
    }
}
