import CloudCodable
import Foundation

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

/// A request of the CloudKit Web Services protocol, as its body says it.
///
/// The client encodes one with ``encodedBody()``; the server reads one with
/// ``decode(_:body:fieldTypes:)``. Both follow the reference's field names.
public enum CloudRequest: Sendable, Hashable {
    /// `records/modify`.
    case modifyRecords(operations: [RecordOperation], zoneID: ZoneID, atomic: Bool)
    /// `records/lookup`.
    case lookupRecords(recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?)
    /// `records/query`.
    case queryRecords(
        RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?)
    /// `changes/zone`.
    case fetchZoneChanges([ZoneChangesRequest])
    /// `changes/database`.
    case fetchDatabaseChanges(syncToken: SyncToken?, resultsLimit: Int?)
    /// `zones/list`.
    case listZones
    /// `zones/lookup`.
    case lookupZones([ZoneID])
    /// `zones/modify`.
    case modifyZones([ZoneOperation])
    /// `subscriptions/modify`.
    case modifySubscriptions([SubscriptionOperation])
    /// `subscriptions/list`.
    case listSubscriptions
    /// `subscriptions/lookup`.
    case lookupSubscriptions([String])
    /// `users/current`.
    case currentUser
    /// `tokens/create`: a notification channel. CloudKit wants the APNs
    /// environment in the body; the Cumulus server takes the path's when it
    /// is `nil`.
    case createToken(apnsEnvironment: CloudEnvironment?)
    /// `records/changes`: what changed in one zone since its token, as
    /// `changes/zone` answers for that zone, but at the answer's top level.
    case fetchRecordChanges(ZoneChangesRequest)
    /// `zones/changes`: the zones changed since the token, as
    /// `changes/database` answers.
    case fetchChangedZones(syncToken: SyncToken?)
    /// `records/resolve`.
    case resolveShares([ShareLookup])
    /// `records/accept`.
    case acceptShares([ShareLookup])
    /// `users/lookup/email`.
    case lookupUsersByEmail([String])
    /// `users/lookup/id`.
    case lookupUsersByID([String])
    /// `users/discover`.
    case discoverUsers([UserLookupInfo])
    /// `assets/upload`.
    case requestAssetUploads([AssetUploadRequest], zoneID: ZoneID)

    /// The operation, which names the request's path.
    public var operation: CloudOperation {
        switch self {
        case .modifyRecords: .modifyRecords
        case .lookupRecords: .lookupRecords
        case .queryRecords: .queryRecords
        case .fetchZoneChanges: .fetchZoneChanges
        case .fetchDatabaseChanges: .fetchDatabaseChanges
        case .listZones: .listZones
        case .lookupZones: .lookupZones
        case .modifyZones: .modifyZones
        case .modifySubscriptions: .modifySubscriptions
        case .listSubscriptions: .listSubscriptions
        case .lookupSubscriptions: .lookupSubscriptions
        case .currentUser: .currentUser
        case .createToken: .createToken
        case .fetchRecordChanges: .fetchRecordChanges
        case .fetchChangedZones: .fetchChangedZones
        case .resolveShares: .resolveShares
        case .acceptShares: .acceptShares
        case .lookupUsersByEmail: .lookupUsersByEmail
        case .lookupUsersByID: .lookupUsersByID
        case .discoverUsers: .discoverUsers
        case .requestAssetUploads: .requestAssetUploads
        }
    }
}
