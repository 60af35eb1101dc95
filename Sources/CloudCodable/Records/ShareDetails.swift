/// What a participant of a share may do with the shared records (the wire's
/// `permission` and `publicPermission`).
public enum SharePermission: String, Sendable, Hashable, Codable, CaseIterable {
    /// Nothing: for `publicPermission`, only the participants the owner
    /// added may accept.
    case none = "NONE"
    /// Read the shared records; every write is refused.
    case readOnly = "READ_ONLY"
    /// Read, create, change and delete the shared records.
    case readWrite = "READ_WRITE"
}

/// The role of a participant in a share.
public enum ShareParticipantRole: String, Sendable, Hashable, Codable, CaseIterable {
    /// The user who owns the shared records.
    case owner = "OWNER"
    /// A user the owner added.
    case user = "USER"
    /// Someone who accepted a share open to anyone holding its URL.
    case publicUser = "PUBLIC_USER"
    /// A user the owner added who may also manage the other participants
    /// (a Cumulus spelling: the native framework's role has none on the wire).
    case administrator = "ADMINISTRATOR"
}

/// Where a participant stands with a share.
public enum ShareAcceptanceStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Not known.
    case unknown = "UNKNOWN"
    /// Invited, not accepted yet.
    case pending = "PENDING"
    /// Accepted: the shared zone is in the participant's shared database.
    case accepted = "ACCEPTED"
    /// Left the share (or was removed from it).
    case removed = "REMOVED"
}

/// How to find a user: by email address, phone number or user record name
/// (the wire's `lookupInfo`). One of them is set.
public struct UserLookupInfo: Sendable, Hashable, Codable {
    /// The user's email address.
    public var emailAddress: String?
    /// The user's phone number.
    public var phoneNumber: String?
    /// The user's record name.
    public var userRecordName: String?

    /// Creates lookup info.
    public init(emailAddress: String? = nil, phoneNumber: String? = nil, userRecordName: String? = nil) {
        self.emailAddress = emailAddress
        self.phoneNumber = phoneNumber
        self.userRecordName = userRecordName
    }

    /// Looks a user up by email address.
    public static func email(_ address: String) -> UserLookupInfo { UserLookupInfo(emailAddress: address) }

    /// Looks a user up by user record name.
    public static func user(_ recordName: String) -> UserLookupInfo { UserLookupInfo(userRecordName: recordName) }
}

/// A user's name, as far as the server knows it (the wire's `nameComponents`).
public struct UserNameComponents: Sendable, Hashable, Codable {
    /// The given name.
    public var givenName: String?
    /// The family name.
    public var familyName: String?

    /// Creates name components.
    public init(givenName: String? = nil, familyName: String? = nil) {
        self.givenName = givenName
        self.familyName = familyName
    }

    /// The name as one line: the given and family names that are set and
    /// not empty, joined by a space; `nil` when neither is. A name the
    /// server got whole (an identity token's `name`, `cumulus user add
    /// --display-name`) is all in ``givenName``.
    ///
    /// ```swift
    /// UserNameComponents(givenName: "Alice", familyName: "Example").displayName   // "Alice Example"
    /// ```
    public var displayName: String? {
        let parts = [givenName, familyName].compactMap { $0 }.filter { !$0.isEmpty }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }
}

/// One participant of a share: who, in which role, with which permission,
/// and whether they accepted.
///
/// On the wire: `{participantId, userIdentity: {userRecordName?, lookupInfo,
/// nameComponents?}, type, acceptanceStatus, permission}`.
public struct ShareParticipant: Sendable, Hashable, Codable {
    /// The server's identifier of the participant in this share (`nil`
    /// until the share was saved with it).
    public var participantID: String?
    /// The user's record name, once the server knows the user.
    public var userRecordName: String?
    /// How the owner named the participant.
    public var lookupInfo: UserLookupInfo?
    /// The participant's name, when known.
    public var nameComponents: UserNameComponents?
    /// The participant's role.
    public var role: ShareParticipantRole
    /// Whether the participant accepted.
    public var acceptanceStatus: ShareAcceptanceStatus
    /// What the participant may do.
    public var permission: SharePermission

    /// Creates a participant.
    public init(
        participantID: String? = nil, userRecordName: String? = nil, lookupInfo: UserLookupInfo? = nil,
        nameComponents: UserNameComponents? = nil, role: ShareParticipantRole = .user,
        acceptanceStatus: ShareAcceptanceStatus = .pending, permission: SharePermission
    ) {
        self.participantID = participantID
        self.userRecordName = userRecordName
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
        self.role = role
        self.acceptanceStatus = acceptanceStatus
        self.permission = permission
    }
}

/// What a share record (record type `cloudkit.share`) says beside its
/// fields: its public handle, who takes part and what anyone holding its
/// URL may do.
///
/// ``Record/shareDetails`` carries it; a record of any other type has none.
public struct ShareDetails: Sendable, Hashable, Codable {
    /// The record type of shares.
    public static let recordType = "cloudkit.share"
    /// The record name of a zone's share (a share of every record of the zone).
    public static let zoneShareName = "cloudkit.zoneshare"
    /// The field invitation screens show as the share's title (STRING).
    public static let titleField = "cloudkit.title"
    /// The field invitation screens show as the share's picture (BYTES).
    public static let thumbnailField = "cloudkit.thumbnailImageData"
    /// The most participants a share has, the owner included.
    public static let participantLimit = 100

    /// The share's public handle, set by the server when the share is
    /// first saved; the share's URL carries it.
    public var shortGUID: String?
    /// What anyone holding the share's URL may do after accepting.
    public var publicPermission: SharePermission
    /// Everyone who takes part, the owner included.
    public var participants: [ShareParticipant]
    /// The owner, as the server answers it.
    public var owner: ShareParticipant?
    /// The caller's own participant, when the caller is one (answers only).
    public var currentUserParticipant: ShareParticipant?
    /// The share's URL, `…/share/<shortGUID>`, when the server was given
    /// its public address (a Cumulus addition, `url`).
    public var url: String?

    /// Creates share details.
    public init(
        shortGUID: String? = nil, publicPermission: SharePermission = .none, participants: [ShareParticipant] = [],
        owner: ShareParticipant? = nil, currentUserParticipant: ShareParticipant? = nil, url: String? = nil
    ) {
        self.shortGUID = shortGUID
        self.publicPermission = publicPermission
        self.participants = participants
        self.owner = owner
        self.currentUserParticipant = currentUserParticipant
        self.url = url
    }
}
