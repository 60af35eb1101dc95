import CloudCodable

/// Something changed on the server that a client may want to fetch.
public enum CloudNotification: Sendable, Hashable {
    /// Records in this zone changed (a zone subscription fired).
    case zoneChanged(ZoneID, subscriptionID: String?)
    /// A record that matches a query subscription was created, updated or deleted.
    case queryChanged(QueryNotification)
    /// The database's zones changed.
    case databaseChanged
    /// The signed-in account changed: signed out, or another user signed
    /// in; or the server stopped accepting the credentials the channel was
    /// opened with (a revoked token, a removed or blocked user, an issuer
    /// no longer trusted), so the account is worth checking again.
    case accountChanged
}
