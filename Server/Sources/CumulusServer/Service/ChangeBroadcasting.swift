import CloudCodable
import CloudProtocol

/// A committed write as the other servers hear of it: which database, and
/// which of its zones changed. It carries no tokens and no record contents.
public struct ChangeAnnouncement: Sendable, Hashable {
    /// The database written.
    public var key: DatabaseKey
    /// The zones whose records (or which themselves) changed; `nil` when
    /// they are not known, so any zone of the database may have changed.
    public var zoneNames: [String]?

    /// Creates an announcement.
    public init(key: DatabaseKey, zoneNames: [String]?) {
        self.key = key
        self.zoneNames = zoneNames
    }
}

/// What a ``ChangeBroadcasting`` delivers to its server.
public enum ChangeBroadcastEvent: Sendable, Hashable {
    /// Another server committed a write.
    case changed(ChangeAnnouncement)
    /// Announcements may have been lost (the broadcaster lost its link and
    /// got it back, or another server could not send some): any database
    /// may have changed, and any credential may have been taken away.
    case mayHaveMissed
    /// A credential was taken away (a token revoked, a user or key removed,
    /// an API token rotated): what the server trusted may no longer hold.
    case credentialsChanged
}

/// Tells the other servers on the same storage about this server's
/// committed writes, and this server about theirs, so that a long poll on
/// one server wakes for a write made through another.
///
/// ```swift
/// let broadcaster = try await PostgresChangeBroadcaster(url: url, logger: logger)
/// let service = CloudService(storage: storage, broadcaster: broadcaster)
/// ```
///
/// ``CloudService`` sets the receiver when it is created and closes the
/// broadcaster when it closes.
public protocol ChangeBroadcasting: Sendable {
    /// Announces a committed write to the other servers. Returns at once
    /// and never fails the write: an announcement that cannot be sent is
    /// logged, and the other servers get ``ChangeBroadcastEvent/mayHaveMissed``.
    func announce(_ announcement: ChangeAnnouncement)

    /// Sets what receives the other servers' announcements (never this
    /// server's own) and ``ChangeBroadcastEvent/mayHaveMissed``, one event
    /// at a time, in the order they arrive; replaces any earlier receiver.
    func setReceiver(_ receiver: @escaping @Sendable (ChangeBroadcastEvent) async -> Void)

    /// Stops listening and sending; announcements afterwards are dropped.
    func close() async
}
