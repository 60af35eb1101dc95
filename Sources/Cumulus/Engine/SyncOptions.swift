/// How long one call of ``SyncEngine/sync(_:)`` waits when the server
/// cannot be reached.
///
/// By default a call retries transient failures (offline, a busy server)
/// with the configuration's ``RetryPolicy``, which is what a background
/// task wants. An app whose user is waiting asks for less:
///
/// ```swift
/// do {
///     try await engine.sync(.singleAttempt)
/// } catch let error as CloudError where error.isTransient {
///     showOffline()  // the changes stay queued; the engine sends them later
/// }
/// try await engine.sync(SyncOptions(timeout: .seconds(10)))
/// ```
///
/// A call that gives up leaves every queued change in the journal, and an
/// automatic engine goes on with its own runs and their retries.
public struct SyncOptions: Sendable, Hashable {
    /// How many attempts in a row may fail for a passing reason before the
    /// call throws the last failure; `nil` for the configuration's
    /// ``RetryPolicy/maximumAttempts``. Progress (a batch sent, a page
    /// fetched) starts the count again, as it does for the policy.
    public var maximumAttempts: Int?
    /// The longest the call waits, on the configuration's clock, before it
    /// throws ``SyncEngineError/Code/timedOut``; `nil` for no limit.
    public var timeout: Duration?

    /// Creates options; `maximumAttempts` is at least 1.
    public init(maximumAttempts: Int? = nil, timeout: Duration? = nil) {
        self.maximumAttempts = maximumAttempts.map { max(1, $0) }
        self.timeout = timeout
    }

    /// Retries as the configuration's ``RetryPolicy`` says, with no time limit:
    /// what ``SyncEngine/sync()`` does.
    public static var `default`: SyncOptions { SyncOptions() }

    /// One attempt: the first transient failure is thrown at once instead of
    /// being retried after a wait.
    public static var singleAttempt: SyncOptions { SyncOptions(maximumAttempts: 1) }
}
