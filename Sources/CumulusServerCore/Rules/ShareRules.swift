import CloudCodable
import CloudProtocol

/// What one caller may see and do in one zone: everything (the zone's owner,
/// or any caller of the public database), or, for a participant reaching
/// the zone through the shared database, the records its accepted shares
/// cover, with each share's permission.
struct ShareView: Sendable {
    /// The participant, or `nil` for the owner's view of everything.
    var participant: String?
    /// The participant's permission through a zone share, if they have one.
    var zoneShare: SharePermission?
    /// The participant's permission through each hierarchy share, by shortGUID.
    var hierarchies: [ExactName: SharePermission] = [:]

    /// The view of the zone's owner.
    static let owner = ShareView(participant: nil)

    /// The view of `user` among a zone's shares, or `nil` when no share of
    /// the zone has them as an accepted participant.
    static func participant(_ user: String, shares: [StoredShare]) -> ShareView? {
        var view = ShareView(participant: user)
        var found = false
        for share in shares {
            guard let entry = ShareRules.acceptedParticipant(user, in: share) else { continue }
            found = true
            if share.rootRecordName == nil {
                view.zoneShare = entry.permission
            } else {
                view.hierarchies[ExactName(share.shortGUID)] = entry.permission
            }
        }
        return found ? view : nil
    }

    var isOwner: Bool { participant == nil }

    /// Whether the caller may write some record of the zone: the owner, or
    /// a participant with a `READ_WRITE` share of it.
    var canWriteSomewhere: Bool {
        participant == nil || zoneShare == .readWrite || hierarchies.values.contains(.readWrite)
    }

    /// Whether a row covered by `shareKey` is visible.
    func canSee(_ shareKey: String?) -> Bool {
        permission(for: shareKey) != nil
    }

    /// The participant's permission on a row covered by `shareKey`; `nil`
    /// when the row is outside the view. The owner may do anything.
    func permission(for shareKey: String?) -> SharePermission? {
        guard participant != nil else { return .readWrite }
        if let zoneShare { return zoneShare }
        guard let shareKey else { return nil }
        return hierarchies[ExactName(shareKey)]
    }
}

/// The rules of shares that do not read storage: participants, handles and
/// how a share record reads to each caller.
enum ShareRules {
    /// Whether `record` is a share record.
    static func isShare(_ recordType: String) -> Bool {
        recordType.isExactly(ShareDetails.recordType)
    }

    /// A new shortGUID: 128 random bits in lowercase base 32, URL-safe.
    static func makeShortGUID() -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
        var bytes: [UInt8] = []
        for _ in 0..<26 {
            bytes.append(alphabet[Int(low & 31)])
            low = (low >> 5) | ((high & 31) << 59)
            high >>= 5
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A new participant identifier.
    static func makeParticipantID() -> String {
        String(makeShortGUID().prefix(16))
    }

    /// The owner's participant entry.
    static func ownerParticipant(_ owner: String) -> ShareParticipant {
        ShareParticipant(
            participantID: "owner", userRecordName: owner, lookupInfo: UserLookupInfo(userRecordName: owner),
            role: .owner, acceptanceStatus: .accepted, permission: .readWrite)
    }

    /// `user`'s entry in a share when they accepted it.
    static func acceptedParticipant(_ user: String, in share: StoredShare) -> ShareParticipant? {
        share.participants.first {
            $0.role != .owner && $0.acceptanceStatus == .accepted && ($0.userRecordName?.isExactly(user) ?? false)
        }
    }

    /// The index of the participant a caller is in a share: by user record
    /// name (the user who accepted, or whom the invitation is bound to: the
    /// user named, or the holder of the address when the owner invited by
    /// address), or, for an invitation by an address that nobody held when
    /// the owner invited, by the (lowercased) address the caller holds now.
    static func participantIndex(of user: String, emailAddress: String?, in participants: [ShareParticipant]) -> Int? {
        if let index = participants.firstIndex(where: { $0.userRecordName?.isExactly(user) ?? false }) {
            return index
        }
        if let index = participants.firstIndex(where: {
            $0.userRecordName == nil && ($0.lookupInfo?.userRecordName?.isExactly(user) ?? false)
        }) {
            return index
        }
        guard let emailAddress else { return nil }
        return participants.firstIndex {
            $0.userRecordName == nil && $0.lookupInfo?.userRecordName == nil
                && ($0.lookupInfo?.emailAddress.flatMap(EmailAddresses.normalized)?.isExactly(emailAddress) ?? false)
        }
    }

    /// The share record as `viewer` reads it: with the caller's own entry as
    /// `currentUserParticipant`, and, for anyone but the owner, without the
    /// email addresses and phone numbers of the other participants. Other
    /// records pass unchanged.
    static func presented(_ record: Record, to viewer: String?, owner: String) -> Record {
        guard isShare(record.recordType), var details = record.shareDetails else { return record }
        let isOwner = viewer.map { $0.isExactly(owner) } ?? false
        details.currentUserParticipant = viewer.flatMap { viewer in
            details.participants.first { $0.userRecordName?.isExactly(viewer) ?? false }
        }
        if isOwner {
            details.participants = details.participants.map(hidingBinding)
        } else {
            details.participants = details.participants.map { participant in
                guard !(viewer.map { participant.userRecordName?.isExactly($0) ?? false } ?? false) else {
                    return participant
                }
                var hidden = participant
                hidden.lookupInfo = participant.userRecordName.map { UserLookupInfo(userRecordName: $0) }
                return hidden
            }
        }
        var presented = record
        presented.shareDetails = details
        return presented
    }

    /// A share record as its owner reads it, wherever it is answered (the
    /// owner's changes feed answers stored rows as they are): without the
    /// users its invitations by address are bound to. Any other record, or
    /// a share read by another user, passes unchanged.
    static func hidingBindings(_ record: Record, from viewer: String?) -> Record {
        guard isShare(record.recordType), var details = record.shareDetails, let viewer,
            details.participants.contains(where: {
                $0.role == .owner && ($0.userRecordName?.isExactly(viewer) ?? false)
            })
        else { return record }
        details.participants = details.participants.map(hidingBinding)
        var presented = record
        presented.shareDetails = details
        return presented
    }

    /// An invitation by address without the user it is bound to: that user
    /// stays the server's, so the owner learns no record name by inviting an
    /// address. Other participants pass unchanged.
    static func hidingBinding(_ participant: ShareParticipant) -> ShareParticipant {
        guard participant.lookupInfo?.emailAddress != nil else { return participant }
        var hidden = participant
        hidden.lookupInfo?.userRecordName = nil
        return hidden
    }

    /// A participant as a share keeps it: without a name, which is the
    /// server's to show (``UserNames``), never what a client sent.
    static func withoutName(_ participant: ShareParticipant) -> ShareParticipant {
        var kept = participant
        kept.nameComponents = nil
        return kept
    }

    /// The participants a share is saved with, from the ones the owner sent
    /// and the ones stored: the owner first; stored participants keep their
    /// identifier, user and status (which only accepting and leaving
    /// change); new ones start pending. Changing `publicPermission` drops
    /// the public users who have not accepted, and `NONE` drops them all.
    ///
    /// A new invitation by address is bound to the user who holds the
    /// address now (`holders`, by normalized address): that user alone
    /// accepts it, whoever holds the address later. An address nobody holds
    /// stays unbound, for whoever holds it when accepting.
    static func participants(
        sent: [ShareParticipant], stored: StoredShare?, owner: String, publicPermission: SharePermission,
        holders: [ExactName: String] = [:]
    ) throws(CloudError) -> [ShareParticipant] {
        var result = [ownerParticipant(owner)]
        let previous = stored?.participants.filter { $0.role != .owner } ?? []
        var seen = Set<ExactName>()
        for participant in sent where participant.role != .owner {
            var entry = withoutName(participant)
            let match = previous.first { old in
                if let id = participant.participantID, let oldID = old.participantID, id.isExactly(oldID) {
                    return true
                }
                if let user = participant.userRecordName ?? participant.lookupInfo?.userRecordName,
                    let oldUser = old.userRecordName ?? old.lookupInfo?.userRecordName
                {
                    return user.isExactly(oldUser)
                }
                if let email = participant.lookupInfo?.emailAddress.flatMap(EmailAddresses.normalized),
                    let oldEmail = old.lookupInfo?.emailAddress.flatMap(EmailAddresses.normalized)
                {
                    return email.isExactly(oldEmail)
                }
                return false
            }
            if let match {
                entry.participantID = match.participantID
                entry.userRecordName = match.userRecordName
                entry.lookupInfo = match.lookupInfo
                entry.acceptanceStatus = match.acceptanceStatus
                if match.role == .publicUser { entry.role = .publicUser }
            } else {
                guard participant.role != .publicUser else {
                    throw CloudError(
                        .badRequest, reason: "public users join a share by accepting it; the owner cannot add one")
                }
                let lookup = participant.lookupInfo ?? participant.userRecordName.map { UserLookupInfo.user($0) }
                if let email = lookup?.emailAddress {
                    guard let normalized = EmailAddresses.normalized(email) else {
                        throw CloudError(.badRequest, reason: "'\(email)' is not an email address")
                    }
                    entry.lookupInfo = UserLookupInfo(
                        emailAddress: normalized, userRecordName: holders[ExactName(normalized)])
                    entry.userRecordName = nil
                } else if let user = lookup?.userRecordName {
                    try NameRules.check(user, "a participant's user record name")
                    guard !user.isExactly(owner) else {
                        throw CloudError(.badRequest, reason: "the owner is a participant of every share already")
                    }
                    entry.lookupInfo = UserLookupInfo(userRecordName: user)
                    entry.userRecordName = nil
                } else {
                    throw CloudError(
                        .badRequest, reason: "a participant needs an email address or a user record name")
                }
                entry.participantID = makeParticipantID()
                entry.acceptanceStatus = .pending
            }
            guard entry.permission != .none else {
                throw CloudError(.badRequest, reason: "a participant's permission is READ_ONLY or READ_WRITE")
            }
            if entry.role == .publicUser, publicPermission != stored?.publicPermission {
                if publicPermission == .none || entry.acceptanceStatus != .accepted { continue }
            }
            // An invitation by address counts by its address: its bound user is not the owner's to learn.
            let identity =
                entry.userRecordName ?? entry.lookupInfo?.emailAddress ?? entry.lookupInfo?.userRecordName ?? ""
            guard seen.insert(ExactName(identity)).inserted else {
                throw CloudError(.badRequest, reason: "the share names participant '\(identity)' twice")
            }
            result.append(entry)
        }
        guard result.count <= ShareDetails.participantLimit else {
            throw CloudError(
                .badRequest,
                reason: "a share has at most \(ShareDetails.participantLimit) participants, not \(result.count)")
        }
        return result
    }
}
