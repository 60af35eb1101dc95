import CloudCodable
import Foundation

/// A share as the app reads and changes it: who takes part, with which
/// permission, and the URL to send them.
///
/// It wraps the share record the server holds; change ``participants`` or
/// ``publicPermission`` and save it with ``CloudDatabase/saveShare(_:)`` (or
/// the engine's ``SyncEngine/saveShare(_:)``).
public struct Share: Sendable, Hashable {
    /// The share record as the server last answered it.
    public private(set) var record: Record

    /// Wraps a share record; `nil` for a record of another type.
    public init?(_ record: Record) {
        guard record.recordType == ShareDetails.recordType else { return nil }
        self.record = record
        if self.record.shareDetails == nil { self.record.shareDetails = ShareDetails() }
    }

    private var details: ShareDetails {
        get { record.shareDetails ?? ShareDetails() }
        set { record.shareDetails = newValue }
    }

    /// The zone the share lives in (with its owner, seen from the shared database).
    public var zoneID: ZoneID { record.zoneID }
    /// The share record's name: ``ShareDetails/zoneShareName`` for a zone share.
    public var recordName: String { record.recordName }
    /// Whether the share covers its whole zone rather than one record and those below it.
    public var isZoneShare: Bool { record.recordName == ShareDetails.zoneShareName }
    /// The share's public handle.
    public var shortGUID: String? { details.shortGUID }
    /// The share's URL, when the server has a public address.
    public var url: URL? { details.url.flatMap(URL.init(string:)) }
    /// The title invitations show.
    public var title: String? {
        get { record.shareTitle }
        set { record[ShareDetails.titleField] = newValue.map(FieldValue.string) }
    }
    /// What anyone holding the URL may do after accepting: ``SharePermission/none``
    /// keeps the share to the participants the owner added.
    public var publicPermission: SharePermission {
        get { details.publicPermission }
        set { details.publicPermission = newValue }
    }
    /// Everyone who takes part, the owner first, with their status.
    public var participants: [ShareParticipant] {
        get { details.participants }
        set { details.participants = newValue }
    }
    /// The owner.
    public var owner: ShareParticipant? { details.owner ?? details.participants.first { $0.role == .owner } }
    /// The owner's name, when the server knows it (the owner participant's
    /// ``ShareParticipant/nameComponents``); ``UserNameComponents/displayName``
    /// is it as one line. Participants who accepted show their names to
    /// each other the same way.
    public var ownerName: UserNameComponents? { owner?.nameComponents }
    /// The signed-in user's own participant, when the server said.
    public var currentUserParticipant: ShareParticipant? { details.currentUserParticipant }

    /// Adds a participant by email address or user record name, pending
    /// until they accept.
    public mutating func addParticipant(_ lookupInfo: UserLookupInfo, permission: SharePermission) {
        participants.append(ShareParticipant(lookupInfo: lookupInfo, permission: permission))
    }

    /// Removes the participants `shouldBeRemoved` picks (never the owner):
    /// they lose access once the share is saved.
    public mutating func removeParticipants(where shouldBeRemoved: (ShareParticipant) -> Bool) {
        participants.removeAll { $0.role != .owner && shouldBeRemoved($0) }
    }

    /// Sets the permission of the participants `matches` picks.
    public mutating func setPermission(_ permission: SharePermission, where matches: (ShareParticipant) -> Bool) {
        for index in participants.indices where participants[index].role != .owner && matches(participants[index]) {
            participants[index].permission = permission
        }
    }
}

extension ShareParticipant {
    /// Whether this participant is the user with `userRecordName`, or was
    /// invited by that name or by `emailAddress`. Names are compared as
    /// exact bytes, addresses as the server stores them: ASCII letters in
    /// either case, every other byte exactly.
    public func isUser(_ userRecordName: String? = nil, emailAddress: String? = nil) -> Bool {
        if let userRecordName {
            let named = [self.userRecordName, lookupInfo?.userRecordName].compactMap { $0 }
            if named.contains(where: { $0.utf8.elementsEqual(userRecordName.utf8) }) { return true }
        }
        if let emailAddress, let invited = lookupInfo?.emailAddress {
            return Self.asciiLowercased(invited) == Self.asciiLowercased(emailAddress)
        }
        return false
    }

    /// The address as the server compares it: ASCII letters in lower case,
    /// every other byte as it is (so "É" and "é" stay apart, as there).
    private static func asciiLowercased(_ address: String) -> [UInt8] {
        address.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
    }
}

extension CloudDatabase {
    /// Shares the record `rootRecordName` and every record below it (whose
    /// ``Record/parent`` leads to it): saves a new share record named
    /// `share-<root>` together with the root, in one atomic request.
    ///
    /// - Throws: ``CloudError``: `NOT_FOUND` when the server has no such
    ///   record yet (sync it first), `ALREADY_SHARED` when it is shared
    ///   already (``fetchShare(named:in:)`` returns that share, and
    ///   ``saveShare(_:)`` changes it) or is inside another share, or the
    ///   request's own error.
    public func shareRecord(
        named rootRecordName: String, in zoneID: ZoneID, title: String? = nil, participants: [ShareParticipant] = [],
        publicPermission: SharePermission = .none
    ) async throws -> Share {
        let found = try await lookupRecords([rootRecordName], zoneID: zoneID, desiredKeys: [])
        guard var root = found.first?.record else {
            throw found.first?.error
                ?? CloudError(.notFound, reason: "the record does not exist", recordName: rootRecordName)
        }
        if let existing = root.share {
            throw CloudError(
                .alreadyShared,
                reason: "the record is shared already (share '\(existing)'): fetch that share and save changes to it",
                recordName: rootRecordName)
        }
        let shareName = "share-\(rootRecordName)"
        var share = Record(recordType: ShareDetails.recordType, recordName: shareName, zoneID: zoneID)
        if let title { share[ShareDetails.titleField] = .string(title) }
        share.shareDetails = ShareDetails(publicPermission: publicPermission, participants: participants)
        root.share = shareName
        let results = try await modifyRecords(
            [RecordOperation(.create, share), RecordOperation(.update, root, desiredKeys: [])], zoneID: zoneID,
            atomic: true)
        return try Self.savedShare(results.first)
    }

    /// Shares every record of a zone of the private database.
    ///
    /// - Throws: ``CloudError``: `ALREADY_SHARED` when the zone is shared
    ///   already (``fetchShare(named:in:)`` with
    ///   ``ShareDetails/zoneShareName`` returns that share), or when records
    ///   of it are; or the request's own error.
    public func shareZone(
        _ zoneID: ZoneID, title: String? = nil, participants: [ShareParticipant] = [],
        publicPermission: SharePermission = .none
    ) async throws -> Share {
        var share = Record(recordType: ShareDetails.recordType, recordName: ShareDetails.zoneShareName, zoneID: zoneID)
        if let title { share[ShareDetails.titleField] = .string(title) }
        share.shareDetails = ShareDetails(publicPermission: publicPermission, participants: participants)
        let results = try await modifyRecords([RecordOperation(.create, share)], zoneID: zoneID, atomic: true)
        if case .failure(let error)? = results.first, error.code == .exists {
            throw CloudError(
                .alreadyShared,
                reason:
                    "the zone is shared already (share '\(ShareDetails.zoneShareName)'): fetch that share and save changes to it",
                recordName: ShareDetails.zoneShareName)
        }
        return try Self.savedShare(results.first)
    }

    /// The share of the record `rootRecordName` (or of the zone, with
    /// ``ShareDetails/zoneShareName``), or `nil` when it has none.
    public func fetchShare(named recordName: String, in zoneID: ZoneID) async throws -> Share? {
        let found = try await lookupRecords([recordName], zoneID: zoneID, desiredKeys: nil)
        if let error = found.first?.error, error.code != .notFound { throw error }
        return found.first?.record.flatMap(Share.init)
    }

    /// Saves a share's participants, their permissions and its public
    /// permission. A share changed meanwhile answers `CONFLICT`: fetch it
    /// again and redo the change.
    public func saveShare(_ share: Share) async throws -> Share {
        let results = try await modifyRecords(
            [RecordOperation(.update, share.record)], zoneID: share.zoneID, atomic: true)
        return try Self.savedShare(results.first)
    }

    /// Stops sharing: every participant loses access; the records stay the owner's.
    public func stopSharing(_ share: Share) async throws {
        let results = try await modifyRecords(
            [RecordOperation(.forceDelete, share.record)], zoneID: share.zoneID, atomic: true)
        if let error = results.first?.error, error.code != .notFound { throw error }
    }

    /// What the share behind `url` (`…/share/<shortGUID>`) is, as an
    /// invitation shows it before the user accepts (`records/resolve`).
    public func shareMetadata(for url: URL, fetchingRootRecord: Bool = false) async throws -> ShareMetadata {
        try await shareMetadata(shortGUID: url.lastPathComponent, fetchingRootRecord: fetchingRootRecord)
    }

    /// What the share with this handle is, before accepting.
    public func shareMetadata(shortGUID: String, fetchingRootRecord: Bool = false) async throws -> ShareMetadata {
        try Self.metadata(
            try await resolveShares([ShareLookup(shortGUID: shortGUID, fetchRootRecord: fetchingRootRecord)]).first)
    }

    /// Accepts a share (`records/accept`): its zone then appears in the
    /// user's shared database, at ``ShareMetadata/zoneID``.
    @discardableResult
    public func accept(_ metadata: ShareMetadata) async throws -> ShareMetadata {
        try Self.metadata(try await acceptShares([ShareLookup(shortGUID: metadata.shortGUID)]).first)
    }

    private static func metadata(_ result: ShareResult?) throws -> ShareMetadata {
        switch result {
        case .share(let metadata)?: return metadata
        case .failure(_, let error)?: throw error
        case nil: throw CloudError(.internalError, reason: "the server answered no share")
        }
    }

    private static func savedShare(_ result: RecordResult?) throws -> Share {
        switch result {
        case .record(let record)?:
            guard let share = Share(record) else {
                throw CloudError(.internalError, reason: "the server answered a \(record.recordType) for a share")
            }
            return share
        case .failure(let error)?: throw error
        default: throw CloudError(.internalError, reason: "the server answered no share")
        }
    }
}

extension Record {
    /// The title field of a share record, when it is a string.
    var shareTitle: String? {
        if case .string(let title) = self[ShareDetails.titleField] { return title }
        return nil
    }
}
