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

/// The answer to `tokens/create`: where to long-poll for notifications.
public struct NotificationToken: Sendable, Hashable {
    /// `development` or `production`.
    public var apnsEnvironment: String
    /// An opaque token naming the device's notification channel.
    public var apnsToken: String
    /// The URL the client long-polls (see ``NotificationBatch``).
    public var webcourierURL: String

    /// Creates a token answer.
    public init(apnsEnvironment: String, apnsToken: String, webcourierURL: String) {
        self.apnsEnvironment = apnsEnvironment
        self.apnsToken = apnsToken
        self.webcourierURL = webcourierURL
    }
}

/// One answer of the notification long poll: the notifications since the
/// cursor the client sent (none when the poll timed out), and the cursor to
/// send next.
///
/// The poll is `GET {webcourierURL}` with `?cursor=` after the first answer;
/// without a cursor it answers from the channel's creation (`tokens/create`),
/// so nothing written after the channel opened is missed. This endpoint is
/// a Cumulus addition to the CloudKit Web Services protocol.
public struct NotificationBatch: Sendable, Hashable {
    /// What happened since the cursor, oldest first.
    public var notifications: [CloudNotification]
    /// Where the next poll starts.
    public var cursor: String

    /// Creates a batch.
    public init(notifications: [CloudNotification], cursor: String) {
        self.notifications = notifications
        self.cursor = cursor
    }
}

/// The type of a field that a request sends without `type`, as the server
/// already knows it for the record type (the first write defines it), or
/// `nil` when the field is new: its JSON shape then decides.
public typealias FieldTypeLookup = @Sendable (_ recordType: String, _ fieldName: String) -> FieldType?
