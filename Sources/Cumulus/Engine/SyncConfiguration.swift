import CloudCodable
import CloudProtocol

/// How a ``SyncEngine`` syncs: when, in what batches, how it retries, and
/// the clock it measures time with.
public struct SyncConfiguration: Sendable {
    /// The zone the engine syncs; `nil` means a zone named after the
    /// model's record type. An engine on the public database always syncs
    /// its default zone, and ignores this.
    ///
    /// Engines of several model types share a zone by giving it the same
    /// name (models whose ``CloudCodable/cloudParentIdentifier`` names
    /// another model must live in that model's zone). Each engine still
    /// fetches and keeps only its own record type. An own zone named otherwise
    /// than the model's record type holds a small marker record (type
    /// `CumulusZoneMarker`), which lets each engine tell a zone that another
    /// engine created again after it was deleted, and send its records again.
    public var zoneName: String?
    /// The user whose zone it is, for an engine on the shared database: the
    /// `ownerRecordName` of the zone a share gave access to
    /// (``ShareMetadata/zoneID``). `nil` for the signed-in user's own zone.
    public var zoneOwner: String?
    /// Whether the engine syncs on its own: after uploads, when the server
    /// notifies a change, and every ``pollInterval``. When `false`, it
    /// syncs only when ``SyncEngine/sync()`` is called.
    public var automaticSync: Bool
    /// How often an automatic engine fetches even without notifications.
    public var pollInterval: Duration
    /// The most operations per `records/modify` request (the server allows 200).
    public var batchSize: Int
    /// The most records per page when fetching changes; `nil` for the server's default.
    public var fetchResultsLimit: Int?
    /// How transient failures are retried.
    public var retryPolicy: RetryPolicy
    /// How many times one record may meet a conflict in a row before the
    /// engine stops resending it and reports it.
    public var maximumConflictAttempts: Int
    /// The largest record the engine accepts, in bytes on the wire.
    public var sizeLimit: Int
    /// How many earlier server versions of each record the journal keeps,
    /// so that a model the app edited from one of them is merged with that
    /// version as its ancestor (0 keeps none). A model based on an older
    /// version is merged with `ancestor: nil`.
    public var earlierVersionLimit: Int
    /// The clock for backoff and polling; tests pass a manual clock.
    public var clock: any Clock<Duration>
    /// Returns a number in `0..<1` for the jitter of each backoff wait;
    /// tests pass a seeded source so that every run waits the same.
    public var random: @Sendable () -> Double
    /// How often an engine on the public database looks for deleted
    /// records, where the server has no change feed there (CloudKit's
    /// public database has none; Cumulus's server has one). Its fetches
    /// query the records modified since the last one, which shows no
    /// deletion: a record deleted on the server leaves this device within
    /// one interval (and the fetch that follows it). Each scan lists every
    /// record name of the type, a page per 200 records. 15 minutes by default.
    public var publicScanInterval: Duration = .seconds(900)
    /// Whether an edit sends only the fields that changed against the
    /// version it was based on (an `update`), rather than the whole record
    /// (a `replace`): `true` by default. Either way a field this model
    /// does not declare is never changed by this device.
    public var sendsFieldDeltas = true
    /// How long a change the server refused as a bad request
    /// (`BAD_REQUEST`: a field the production schema does not have yet, say)
    /// waits before it is sent again, measured on ``clock``: it stays
    /// queued and in ``SyncEngine/refusedChanges`` meanwhile, and goes out
    /// on its own once the server takes it. 5 minutes by default.
    public var refusalRetryInterval: Duration = .seconds(300)
    /// The most bytes the engine keeps of downloaded assets (in its
    /// directory's `assets/cache`) before it deletes the least recently
    /// used: 256 MiB by default. Pinned assets and copies not yet uploaded
    /// are never deleted, and do not count.
    public var assetCacheLimit: Int64 = 268_435_456
    /// The cipher and keys of the model's encrypted fields
    /// (``CloudCodable/cloudEncryptedFields``); an engine of a
    /// model that declares some refuses to open without them.
    public var fieldEncryption: FieldEncryption?
    /// How long opening waits for an engine of this process that holds the
    /// directory to let go (see ``SyncEngine/init(database:directory:configuration:)``);
    /// tests of the refusal shorten it.
    @_spi(Testing) public var directoryWait: Duration = Journal.releaseWait

    /// A configuration for the zone a share gave access to, with the
    /// defaults otherwise: give it to an engine on the shared database.
    public init(sharedZone zoneID: ZoneID) {
        self.init(zoneName: zoneID.zoneName)
        zoneOwner = zoneID.ownerRecordName
    }

    /// Creates a configuration.
    public init(
        zoneName: String? = nil, automaticSync: Bool = true, pollInterval: Duration = .seconds(60),
        batchSize: Int = 200, fetchResultsLimit: Int? = nil, retryPolicy: RetryPolicy = RetryPolicy(),
        maximumConflictAttempts: Int = 5, sizeLimit: Int = RecordEncoder.defaultSizeLimit,
        earlierVersionLimit: Int = 4, clock: any Clock<Duration> = ContinuousClock(),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.zoneName = zoneName
        self.automaticSync = automaticSync
        self.pollInterval = pollInterval
        self.batchSize = max(1, min(batchSize, 200))
        self.fetchResultsLimit = fetchResultsLimit
        self.retryPolicy = retryPolicy
        self.maximumConflictAttempts = max(1, maximumConflictAttempts)
        self.sizeLimit = sizeLimit
        self.earlierVersionLimit = max(0, earlierVersionLimit)
        self.clock = clock
        self.random = random
    }
}

/// Exponential backoff with jitter for transient failures.
public struct RetryPolicy: Sendable, Hashable {
    /// The wait before the first retry.
    public var initialDelay: Duration
    /// The longest wait between retries.
    public var maximumDelay: Duration
    /// How much each wait grows over the previous one.
    public var multiplier: Double
    /// The share of each wait that is random (0 for none, 0.2 for ±20%).
    public var jitter: Double
    /// How many attempts in a row a failing sync makes, the first try
    /// included, before it gives up and reports the failure (by default 8:
    /// the first try and seven retries). Progress (a batch sent, a page
    /// fetched) starts the count again. The changes stay in the journal for
    /// the next sync.
    public var maximumAttempts: Int

    /// Creates a policy.
    public init(
        initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(300), multiplier: Double = 2,
        jitter: Double = 0.2, maximumAttempts: Int = 8
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.multiplier = max(1, multiplier)
        self.jitter = min(max(0, jitter), 1)
        self.maximumAttempts = max(1, maximumAttempts)
    }
}

/// The backoff state of one run of retries: a plain value, tested without
/// clocks or tasks.
struct Backoff {
    let policy: RetryPolicy
    private(set) var attempts = 0

    init(policy: RetryPolicy) { self.policy = policy }

    /// Whether another attempt is allowed: the first try counts as one.
    var canRetry: Bool { attempts + 1 < policy.maximumAttempts }

    /// The wait before the next attempt: exponential, capped, jittered,
    /// and never shorter than what the server asked for.
    mutating func nextDelay(retryAfter: Duration?, random: Double) -> Duration {
        let exponent = Double(attempts)
        attempts += 1
        let base = policy.initialDelay * pow(policy.multiplier, exponent)
        var delay = min(base, policy.maximumDelay)
        if policy.jitter > 0 {
            // random is in 0..<1: spread the wait over ±jitter.
            delay = delay * (1 + policy.jitter * (2 * random - 1))
        }
        if let retryAfter, retryAfter > delay { delay = retryAfter }
        return delay
    }

    mutating func reset() { attempts = 0 }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
