import Foundation

extension RemoteCloudDatabase {
    /// Where the database is and how the client talks to it.
    ///
    /// ```swift
    /// let configuration = RemoteCloudDatabase.Configuration(
    ///     baseURL: URL(string: "https://cloud.example.com")!,
    ///     container: "iCloud.com.example.notes", environment: .production, scope: .private)
    /// ```
    public struct Configuration: Sendable {
        /// The server's address: scheme, host, port and an optional path
        /// prefix, before `/database/1/…`.
        public var baseURL: URL
        /// The container's identifier, e.g. `iCloud.com.example.notes`.
        public var container: String
        /// The container's environment.
        public var environment: CloudEnvironment
        /// Which of the container's databases this is.
        public var scope: DatabaseScope
        /// How long a request waits for its answer before failing with
        /// ``CloudError/Code/networkFailure``.
        public var requestTimeout: Duration
        /// How long the server may hold a notification poll open (the
        /// `timeout` query parameter, in whole seconds); the poll's own
        /// request timeout is this plus ``requestTimeout``.
        public var notificationPollTimeout: Duration
        /// The waits between reconnections of a failing notification channel;
        /// its attempt limit is ignored, as the channel retries for as long as
        /// it is read.
        public var notificationBackoff: RetryPolicy
        /// The clock the notification channel waits on.
        public var clock: any Clock<Duration>
        /// The current date, for the date header of signed requests.
        public var currentDate: @Sendable () -> Date
        /// Whether the server clears the fields an `update` sends as `null`
        /// (``RecordOperation/clearedFields``), as Cumulus's server does. By
        /// default `true`, but for Apple's CloudKit Web Services
        /// (`api.apple-cloudkit.com`), whose `update` has no such form: an
        /// engine then clears a field by replacing the whole record.
        public var supportsFieldClearing: Bool
        /// The most bytes of an asset download one request asks for: a
        /// larger asset comes in ranged requests of this size, each sent once
        /// the reader has reached the one before, so that a reader slower
        /// than the network holds at most two of them. 8 MiB by default.
        public var downloadWindow: Int64 = 8 << 20

        /// Creates a configuration.
        ///
        /// The notification backoff starts at half a second and is capped
        /// at 30 seconds.
        public init(
            baseURL: URL, container: String, environment: CloudEnvironment = .development,
            scope: DatabaseScope = .private, requestTimeout: Duration = .seconds(60),
            notificationPollTimeout: Duration = .seconds(25),
            notificationBackoff: RetryPolicy = RetryPolicy(
                initialDelay: .milliseconds(500), maximumDelay: .seconds(30), jitter: 0.2),
            clock: any Clock<Duration> = ContinuousClock(), currentDate: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.baseURL = baseURL
            self.container = container
            self.environment = environment
            self.scope = scope
            self.requestTimeout = requestTimeout
            self.notificationPollTimeout = notificationPollTimeout
            self.notificationBackoff = notificationBackoff
            self.clock = clock
            self.currentDate = currentDate
            supportsFieldClearing = baseURL.host?.lowercased().hasSuffix("apple-cloudkit.com") != true
        }
    }
}
