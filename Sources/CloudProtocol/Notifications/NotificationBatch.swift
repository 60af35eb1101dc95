import CloudCodable
import Foundation

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
