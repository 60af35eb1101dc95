import CloudCodable
import Foundation

/// A successful answer of the CloudKit Web Services protocol, as its body says it.
///
/// The server encodes one with ``encodedBody()``; the client reads one with
/// ``decode(_:body:)``, knowing the operation it asked for.
public enum CloudResponse: Sendable, Hashable {
    /// `records/modify` and `records/lookup`: one result per record, in request order.
    case records([RecordResult])
    /// `records/query`.
    case query(QueryResult)
    /// `changes/zone`: one result per zone, in request order.
    case zoneChanges([Result<ZoneChanges, CloudError>])
    /// `changes/database`.
    case databaseChanges(DatabaseChanges)
    /// `zones/list`.
    case zones([RecordZone])
    /// `zones/lookup` and `zones/modify`: one result per zone, in request order.
    case zoneResults([ZoneResult])
    /// `subscriptions/list`.
    case subscriptions([Subscription])
    /// `subscriptions/lookup` and `subscriptions/modify`: one result per subscription.
    case subscriptionResults([SubscriptionResult])
    /// `users/current`.
    case user(UserIdentity)
    /// `tokens/create`.
    case token(NotificationToken)
    /// `records/changes`: one zone's changes.
    case recordChanges(ZoneChanges)
    /// `records/resolve` and `records/accept`: one result per share, in request order.
    case shares([ShareResult])
    /// `users/lookup/email`, `users/lookup/id` and `users/discover`: the
    /// discoverable users found.
    case users([UserIdentity])
    /// `assets/upload`: one target per field asked, in request order.
    case assetUploads([AssetUploadTarget])
}

/// The type of a field that a request sends without `type`, as the server
/// already knows it for the record type (the first write defines it), or
/// `nil` when the field is new: its JSON shape then decides.
public typealias FieldTypeLookup = @Sendable (_ recordType: String, _ fieldName: String) -> FieldType?
