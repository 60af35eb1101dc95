import CloudCodable

/// What an invitation shows before the user accepts, and what accepting
/// answers: the share, where it lives, its owner and the caller's place in it.
public struct ShareMetadata: Sendable, Hashable {
    /// The share's public handle.
    public var shortGUID: String
    /// The container the share belongs to.
    public var containerIdentifier: String
    /// The container's environment.
    public var environment: CloudEnvironment
    /// The database the participant reaches the shared records in: ``DatabaseScope/shared``.
    public var databaseScope: DatabaseScope
    /// The shared zone, with its owner.
    public var zoneID: ZoneID
    /// The share record (type ``ShareDetails/recordType``).
    public var share: Record
    /// The share's root record, when asked for (hierarchy shares only).
    public var rootRecord: Record?
    /// The share's owner.
    public var ownerIdentity: UserIdentity
    /// The caller's role in the share.
    public var participantRole: ShareParticipantRole
    /// The caller's status in the share.
    public var participantStatus: ShareAcceptanceStatus
    /// What the caller may do with the shared records.
    public var participantPermission: SharePermission

    /// Creates share metadata.
    public init(
        shortGUID: String, containerIdentifier: String, environment: CloudEnvironment,
        databaseScope: DatabaseScope = .shared, zoneID: ZoneID, share: Record, rootRecord: Record? = nil,
        ownerIdentity: UserIdentity, participantRole: ShareParticipantRole,
        participantStatus: ShareAcceptanceStatus, participantPermission: SharePermission
    ) {
        self.shortGUID = shortGUID
        self.containerIdentifier = containerIdentifier
        self.environment = environment
        self.databaseScope = databaseScope
        self.zoneID = zoneID
        self.share = share
        self.rootRecord = rootRecord
        self.ownerIdentity = ownerIdentity
        self.participantRole = participantRole
        self.participantStatus = participantStatus
        self.participantPermission = participantPermission
    }

    /// The title the owner gave the share, if any.
    public var title: String? { share.shareTitle }

    /// The owner's name, when the server knows it (``ownerIdentity``'s
    /// ``UserIdentity/nameComponents``): what an invitation shows as who
    /// shares. The server fills it from the name the owner signed in with
    /// or the operator gave them; ``UserNameComponents/displayName`` is it
    /// as one line.
    ///
    /// ```swift
    /// let invitation = try await database.shareMetadata(for: url)
    /// print("\(invitation.ownerName?.displayName ?? "Someone") shares \(invitation.title ?? "an item")")
    /// ```
    public var ownerName: UserNameComponents? { ownerIdentity.nameComponents }
}
