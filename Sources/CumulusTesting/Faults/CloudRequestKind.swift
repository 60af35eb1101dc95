import Cumulus

/// The requests of the `CloudDatabase` protocol, one per call that goes
/// to the server. Used to aim injected faults at some requests only and to
/// count the requests a test made.
///
/// ```swift
/// server.inject(.throttled(retryAfter: .seconds(5)), on: [.modifyRecords])
/// ```
public enum CloudRequestKind: String, Sendable, Hashable, CaseIterable {
    /// `records/modify`: `CloudDatabase.modifyRecords(_:zoneID:atomic:)`.
    case modifyRecords
    /// `records/lookup`: `CloudDatabase.lookupRecords(_:zoneID:desiredKeys:)`.
    case lookupRecords
    /// `records/query`: `CloudDatabase.queryRecords(_:zoneID:resultsLimit:continuationMarker:desiredKeys:)`.
    case queryRecords
    /// `changes/zone`: `CloudDatabase.fetchZoneChanges(_:)`.
    case fetchZoneChanges
    /// `changes/database`: `CloudDatabase.fetchDatabaseChanges(since:resultsLimit:)`.
    case fetchDatabaseChanges
    /// `zones/list`: `CloudDatabase.listZones()`.
    case listZones
    /// `zones/lookup`: `CloudDatabase.lookupZones(_:)`.
    case lookupZones
    /// `zones/modify`: `CloudDatabase.modifyZones(_:)`.
    case modifyZones
    /// `subscriptions/modify`: `CloudDatabase.modifySubscriptions(_:)`.
    case modifySubscriptions
    /// `subscriptions/list`: `CloudDatabase.listSubscriptions()`.
    case listSubscriptions
    /// `subscriptions/lookup`: `CloudDatabase.lookupSubscriptions(_:)`.
    case lookupSubscriptions
    /// `users/current`: `CloudDatabase.currentUser()` (and so `CloudDatabase.accountStatus()`).
    case currentUser
    /// `records/resolve`: `CloudDatabase.resolveShares(_:)`.
    case resolveShares
    /// `records/accept`: `CloudDatabase.acceptShares(_:)`.
    case acceptShares
    /// `users/lookup/email`, `users/lookup/id` and `users/discover`: the user lookups.
    case lookupUsers
    /// `assets/upload`: `CloudDatabase.requestAssetUploads(_:zoneID:)`.
    case requestAssetUploads
    /// The bytes sent to an upload URL: `CloudDatabase.uploadAsset(contentsOf:to:)`.
    case uploadAsset
    /// The bytes read from a download URL: `CloudDatabase.downloadAsset(_:range:)`.
    case downloadAsset

    /// Whether the request changes data on the server.
    public var isWrite: Bool {
        switch self {
        case .modifyRecords, .modifyZones, .modifySubscriptions, .acceptShares, .uploadAsset: true
        default: false
        }
    }
}
