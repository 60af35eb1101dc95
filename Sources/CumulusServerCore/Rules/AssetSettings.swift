/// The limits and lifetimes of a record service's assets.
public struct AssetSettings: Sendable, Hashable {
    /// The largest asset accepted, in bytes: 50 MB (52,428,800 bytes) by
    /// default, as CloudKit. A larger upload answers `LIMIT_EXCEEDED`.
    public var sizeLimit: Int64
    /// How long an upload URL of `assets/upload` works: 1 hour by default.
    public var uploadLifetime: Duration
    /// How long a download URL of a returned record works: 1 hour by default.
    public var downloadLifetime: Duration
    /// How long an upload's receipt works, and how long an asset no record
    /// holds is kept before ``RecordService/collectAssets()`` deletes it
    /// (time for a save whose answer was lost to be retried): 24 hours by default.
    public var gracePeriod: Duration

    /// Creates settings.
    public init(
        sizeLimit: Int64 = 52_428_800, uploadLifetime: Duration = .seconds(3600),
        downloadLifetime: Duration = .seconds(3600), gracePeriod: Duration = .seconds(86_400)
    ) {
        self.sizeLimit = sizeLimit
        self.uploadLifetime = uploadLifetime
        self.downloadLifetime = downloadLifetime
        self.gracePeriod = gracePeriod
    }
}
