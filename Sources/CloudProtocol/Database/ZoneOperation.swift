import CloudCodable

/// One operation of a `zones/modify` request.
public enum ZoneOperation: Sendable, Hashable {
    /// Creates the zone (creating one that exists succeeds and changes nothing).
    case create(ZoneID)
    /// Deletes the zone and every record in it.
    case delete(ZoneID)
}

/// The outcome of one zone in a zones request.
public enum ZoneResult: Sendable, Hashable {
    /// The zone exists (or was created).
    case zone(RecordZone)
    /// The zone was deleted.
    case deleted(ZoneID)
    /// This zone failed.
    case failure(CloudError)
}
