/// The operations of the CloudKit Web Services protocol: the last part of a
/// request's path, `/database/1/{container}/{environment}/{database}/{operation}`.
public enum CloudOperation: String, Sendable, Hashable, CaseIterable {
    /// `records/modify`.
    case modifyRecords = "records/modify"
    /// `records/lookup`.
    case lookupRecords = "records/lookup"
    /// `records/query`.
    case queryRecords = "records/query"
    /// `changes/zone`.
    case fetchZoneChanges = "changes/zone"
    /// `changes/database`.
    case fetchDatabaseChanges = "changes/database"
    /// `zones/list`.
    case listZones = "zones/list"
    /// `zones/lookup`.
    case lookupZones = "zones/lookup"
    /// `zones/modify`.
    case modifyZones = "zones/modify"
    /// `subscriptions/modify`.
    case modifySubscriptions = "subscriptions/modify"
    /// `subscriptions/list`.
    case listSubscriptions = "subscriptions/list"
    /// `subscriptions/lookup`.
    case lookupSubscriptions = "subscriptions/lookup"
    /// `users/current`.
    case currentUser = "users/current"
    /// `tokens/create`: the address of the notification long poll.
    case createToken = "tokens/create"
    /// `records/changes`: the older form of `changes/zone`, for one zone.
    case fetchRecordChanges = "records/changes"
    /// `zones/changes`: the older form of `changes/database`.
    case fetchChangedZones = "zones/changes"
    /// `records/resolve`: what a share is, before accepting it.
    case resolveShares = "records/resolve"
    /// `records/accept`: accepts shares.
    case acceptShares = "records/accept"
    /// `users/lookup/email`: discoverable users by email address.
    case lookupUsersByEmail = "users/lookup/email"
    /// `users/lookup/id`: discoverable users by user record name.
    case lookupUsersByID = "users/lookup/id"
    /// `users/discover`: discoverable users by any lookup info.
    case discoverUsers = "users/discover"
    /// `assets/upload`: where to send the bytes of assets.
    case requestAssetUploads = "assets/upload"

    /// The database whose path the operation always goes to, whichever
    /// database the client reaches otherwise: the public one for sharing's
    /// and user lookup's requests; `nil` for the others.
    public var fixedScope: DatabaseScope? {
        switch self {
        case .resolveShares, .acceptShares, .lookupUsersByEmail, .lookupUsersByID, .discoverUsers: .public
        default: nil
        }
    }

    /// The HTTP method: `GET` for the operations without a body, else `POST`.
    public var httpMethod: String {
        switch self {
        case .listZones, .listSubscriptions, .currentUser: "GET"
        default: "POST"
        }
    }
}
