import CloudCodable
import CloudProtocol

/// A change to models of the engine's type, as the server confirms it.
///
/// Each change reaches each reader of ``SyncEngine/changes`` at most once,
/// in the order the engine applied it: an acknowledged upload comes once,
/// and its own write coming back in a later fetch is not delivered again.
/// A change made while nobody reads is not replayed to later readers: read
/// ``SyncEngine/models`` when you start reading.
public enum ModelChange<Model: Sendable>: Sendable {
    /// These models were created or changed (on this device and acknowledged
    /// by the server, or on another device and fetched).
    case updated([Model])
    /// The models with these identifiers were deleted.
    case deleted([String])
}

/// What a ``SyncEngine`` is doing, for logs and for the app's attention.
public enum SyncEvent: Sendable, Hashable {
    /// How a conflict ended.
    public enum Resolution: Sendable, Hashable {
        /// The resolver returned a value; it was sent on top of the server's version.
        case resolved
        /// The resolver returned `nil`; the server's version was kept.
        case keptServerVersion
    }

    /// A sync run started.
    case syncStarted
    /// A sync run ended; `pending` changes are still waiting to be sent.
    case syncFinished(pending: Int)
    /// The number of local changes not yet acknowledged changed.
    case pendingChanges(Int)
    /// The replica or the server held a newer version of a record than the
    /// local change was based on, and the model's resolver settled it.
    case conflict(recordName: String, resolution: Resolution)
    /// A conflict was resolved with `ancestor: nil`: the version the local
    /// change was based on is not known (a model without metadata for a
    /// record that exists, or one older than the earlier versions the
    /// engine keeps; see ``SyncConfiguration/earlierVersionLimit``). The
    /// default merge then keeps every field of the local change.
    case mergedWithoutAncestor(recordName: String)
    /// A transient failure; the engine tries again after `delay`.
    case retryScheduled(delay: Duration, error: CloudError)
    /// A record the server refuses and retrying cannot fix (quota, a
    /// record that keeps conflicting, a refused value). The change stays in
    /// the journal until the app uploads or deletes the model again.
    case recordFailed(recordName: String, error: CloudError)
    /// A record from the server that does not decode as the model; it is
    /// kept and reported, never skipped silently.
    case undecodableRecord(recordName: String, reason: String)
    /// A request failed and the run stopped; the changes stay in the journal.
    case syncFailed(reason: String)
    /// The signed-in user changed; the previous user's local data was
    /// cleared, including these changes that had not reached the server.
    case accountChanged(previousUser: String?, newUser: String?, discardedChanges: [String])
    /// The engine's shared zone is out of reach: the owner removed the
    /// user or stopped sharing, or the user left. Its models were removed
    /// from this device (``SyncEngine/changes`` reports them deleted), with
    /// these local changes that had not reached the server.
    case shareLost(discardedChanges: [String])
    /// The zone was missing on the server and was created again; every
    /// local record is being sent again.
    case zoneRecreated
    /// The server could no longer answer from the saved sync token; the
    /// whole zone was fetched again.
    case fullRefetch
    /// The first fetch of the signed-in account's zone went to its end:
    /// ``SyncEngine/models`` now holds what the server held (see
    /// ``SyncEngine/waitForFirstFetch()``).
    case firstFetchCompleted
}
