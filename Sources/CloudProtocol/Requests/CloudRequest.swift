import CloudCodable
import Foundation

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

extension CloudRequest {
    /// The header in which a `records/modify` names the token of the
    /// notification channel its writer listens on (a Cumulus addition):
    /// that channel's polls then leave out the zone changes only its own
    /// writes made, since the writer has their answer already. A server
    /// that does not know the header, or a channel of another user or
    /// database, notifies as without it.
    public static let writingChannelHeader = "X-Cumulus-Channel"
}
