import Foundation

extension RemoteCloudDatabase {
    /// A new stream of the server's notifications for this database.
    ///
    /// Each stream has a channel of its own: `tokens/create`, then long
    /// polls of the token's URL, each answer's notifications yielded in
    /// order. A failed poll is retried after a jittered, growing wait
    /// (``Configuration/notificationBackoff``) from where it left off; a
    /// channel the server no longer knows (`NOT_FOUND`) is created anew,
    /// and the stream then yields `.databaseChanged`, as notifications may
    /// have been missed in between. The stream also yields
    /// `.databaseChanged` when its channel fails for a reason that may pass
    /// (once when the server answers errors, once when it cannot be
    /// reached: a reader that syncs learns at once whether the server is
    /// away) and when a poll
    /// succeeds again after failures (the server is back). When any other
    /// request of this database succeeds while a channel waits after a
    /// failure, the network is back: the channel stops waiting, yields
    /// `.databaseChanged` and reconnects at once. When the server refuses
    /// the credentials the channel was opened with (a revoked token, a
    /// removed or blocked user), the stream yields `.accountChanged` once,
    /// and the channel tries again after its wait, or at once when the
    /// credentials are set again; so it does when the server denies the
    /// user access (`ACCESS_DENIED`, a blocked user). When the account changes
    /// (``setCredentials(_:)``), the stream yields `.accountChanged` and
    /// reconnects as the new account. The channel stops when the reader
    /// stops reading or the database goes away.
    public func notifications() -> AsyncStream<CloudNotification> {
        channels.open()
    }

    /// A stream of ``notifications()`` whose channel the listener's writes
    /// (``modifyRecords(_:zoneID:atomic:for:)``) name: the server leaves
    /// what only they changed out of it. A listener reads one stream.
    public func notifications(for listener: NotificationListener) -> AsyncStream<CloudNotification> {
        channels.open(listener: listener)
    }

    /// Returns once every notification stream opened so far has its channel
    /// on the server (or has ended): from then on each of them hears every
    /// change, including the device's own next write. Returns whether any
    /// channel was still opening when called.
    ///
    /// A stream's channel opens with a request of its own (`tokens/create`)
    /// after ``notifications()`` returns, and hears what is written from
    /// then on; a change written before that is not notified, which is why
    /// a ``SyncEngine`` fetches once more when this returns `true`.
    @discardableResult
    public func notificationChannelsOpened() async -> Bool {
        await channels.waitUntilOpened()
    }

    /// Waits until no notification channel task is running: for tests of
    /// streams whose reader stopped.
    func waitUntilChannelsStopped() async {
        await channels.waitUntilIdle()
    }
}

/// The credentials and the open notification streams, behind one lock, with
/// the task that feeds each stream.
final class NotificationChannels: @unchecked Sendable {
    // Safety: `state` is read and written only while `lock` is held.
    // Continuations of streams are yielded to under the lock (which never runs
    // a reader's code inline), but finished only after it is released, as
    // finishing runs `onTermination`, which takes the lock.
    private let lock = NSLock()
    private var state: State
    private let session: RemoteSession

    struct State {
        var credentials: RemoteCloudDatabase.Credentials
        /// How many times the account changed.
        var generation: UInt64 = 0
        /// The identity token kept for `.identity` credentials.
        var identityTokens = IdentityTokenState()
        /// The call of the identity token provider under way, which
        /// `identityTokens.fetching` numbers.
        var identityFetch: Task<IdentityFetchOutcome, Never>?
        /// How many requests wait for that call.
        var identityWaiters = 0
        var streams: [UInt64: Stream] = [:]
        var nextStreamID: UInt64 = 0
        var runningTasks = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Streams whose channel has no token yet.
        var opening: Set<UInt64> = []
        /// The waits of channels that failed, by stream: a success elsewhere ends them.
        var backoffs: [UInt64: Wake] = [:]
        var openWaiters: [CheckedContinuation<Bool, Never>] = []
        var closed = false
        /// The token of each listener's stream's channel, once it has one.
        var listenerTokens: [NotificationListener: String] = [:]
    }

    /// One open stream: its continuation, and the task that feeds it under
    /// the credentials of `generation`.
    struct Stream {
        var continuation: AsyncStream<CloudNotification>.Continuation
        var task: Task<Void, Never>?
        var generation: UInt64
        /// Who reads it, when its reader's writes name its channel.
        var listener: NotificationListener? = nil
    }

    init(session: RemoteSession, credentials: RemoteCloudDatabase.Credentials) {
        self.session = session
        state = State(credentials: credentials)
    }

    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// The credentials of the moment, read once per request.
    var credentials: RemoteCloudDatabase.Credentials { withLock { $0.credentials } }

    /// The credentials and the account's generation, read together.
    var account: (credentials: RemoteCloudDatabase.Credentials, generation: UInt64) {
        withLock { ($0.credentials, $0.generation) }
    }

    /// Replaces the credentials and, when the account changed, tells every
    /// stream and restarts its channel as the new account. The identity
    /// token kept, if any, is forgotten: the app may set the credentials
    /// again after a sign-in or a sign-out.
    func setCredentials(_ credentials: RemoteCloudDatabase.Credentials) {
        let stopped: [Task<Void, Never>] = withLock { state in
            let changed = state.credentials.account != credentials.account
            state.credentials = credentials
            if changed { state.identityTokens.reset() } else { state.identityTokens.forgetToken() }
            // Requests waiting for the provider's answer ask again, under the new credentials.
            state.identityFetch = nil
            guard changed else { return [] }
            return accountChanged(&state)
        }
        for task in stopped { task.cancel() }
        // A channel waiting after a refusal tries the new credentials at once.
        requestSucceeded()
    }

    /// Counts a change of account, and tells every stream and restarts its
    /// channel as the new account; returns the channel tasks to cancel once
    /// the lock is released.
    func accountChanged(_ state: inout State) -> [Task<Void, Never>] {
        state.generation += 1
        state.listenerTokens.removeAll()
        guard !state.closed else { return [] }
        var stopped: [Task<Void, Never>] = []
        for id in state.streams.keys.sorted() {
            guard var stream = state.streams[id] else { continue }
            if let task = stream.task { stopped.append(task) }
            stream.generation += 1
            // Under the lock, so the old channel can no longer deliver
            // once the reader has heard of the change.
            stream.continuation.yield(.accountChanged)
            stream.task = startTask(streamID: id, generation: stream.generation, state: &state)
            state.streams[id] = stream
        }
        return stopped
    }

    /// A new stream with its channel.
    func open(listener: NotificationListener? = nil) -> AsyncStream<CloudNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: CloudNotification.self)
        let id: UInt64? = withLock { state in
            guard !state.closed else { return nil }
            let id = state.nextStreamID
            state.nextStreamID += 1
            let task = startTask(streamID: id, generation: 0, state: &state)
            state.streams[id] = Stream(continuation: continuation, task: task, generation: 0, listener: listener)
            state.opening.insert(id)
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in self?.close(streamID: id) }
        return stream
    }

    /// Forgets a stream whose reader stopped, and stops its channel.
    private func close(streamID: UInt64) {
        let task = withLock { state in
            let stream = state.streams.removeValue(forKey: streamID)
            if let listener = stream?.listener { state.listenerTokens[listener] = nil }
            return stream?.task
        }
        task?.cancel()
        opened(streamID: streamID)
    }

    /// Keeps the token of a stream's channel for its listener's writes.
    /// A token the server no longer knows, or of an account that changed,
    /// is one it ignores: at worst the listener hears its own write.
    func channelOpened(streamID: UInt64, generation: UInt64, token: String) {
        withLock { state in
            guard let stream = state.streams[streamID], stream.generation == generation,
                let listener = stream.listener
            else { return }
            state.listenerTokens[listener] = token
        }
    }

    /// The token of the channel of `listener`'s stream, if it has one.
    func token(of listener: NotificationListener) -> String? {
        withLock { $0.listenerTokens[listener] }
    }

    /// Notes that a stream's channel has its token (or that the stream ended).
    func opened(streamID: UInt64) {
        let waiters: [CheckedContinuation<Bool, Never>] = withLock { state in
            state.opening.remove(streamID)
            guard state.opening.isEmpty else { return [] }
            defer { state.openWaiters.removeAll() }
            return state.openWaiters
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Returns once no stream is waiting for its channel's token, and
    /// whether one was.
    func waitUntilOpened() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let open = withLock { state in
                if state.opening.isEmpty { return true }
                state.openWaiters.append(continuation)
                return false
            }
            if open { continuation.resume(returning: false) }
        }
    }

    /// Ends every stream: the database went away.
    func closeAll() {
        let (streams, waiters) = withLock { state in
            state.closed = true
            defer {
                state.streams.removeAll()
                state.opening.removeAll()
                state.openWaiters.removeAll()
            }
            return (Array(state.streams.values), state.openWaiters)
        }
        for waiter in waiters { waiter.resume(returning: true) }
        for stream in streams {
            stream.task?.cancel()
            stream.continuation.finish()
        }
    }

    /// Starts the task of a stream's channel, counted as running until it ends.
    private func startTask(streamID: UInt64, generation: UInt64, state: inout State) -> Task<Void, Never> {
        state.runningTasks += 1
        let account = state.generation
        let session = session
        return Task { [self] in
            var channel = NotificationChannel(
                session: session, account: account, streamID: streamID, generation: generation)
            await channel.run(deliveringTo: self)
            taskEnded()
        }
    }

    private func taskEnded() {
        let waiters: [CheckedContinuation<Void, Never>] = withLock { state in
            state.runningTasks -= 1
            guard state.runningTasks == 0 else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Yields `notifications` to the stream if the channel of `generation`
    /// still feeds it; `false` when the channel should stop.
    func deliver(_ notifications: [CloudNotification], streamID: UInt64, generation: UInt64) -> Bool {
        withLock { state in
            guard let stream = state.streams[streamID], stream.generation == generation else { return false }
            for notification in notifications { stream.continuation.yield(notification) }
            return true
        }
    }

    /// A request of the database succeeded: every channel waiting after a
    /// failure reconnects at once.
    func requestSucceeded() {
        let wakes: [Wake] = withLock { state in
            guard !state.backoffs.isEmpty else { return [] }
            defer { state.backoffs.removeAll() }
            return Array(state.backoffs.values)
        }
        for wake in wakes { wake.fire() }
    }

    /// Waits `delay` after a failure of a stream's channel. Returns whether a
    /// success elsewhere ended the wait early; throws when the task is cancelled.
    func backoff(streamID: UInt64, delay: Duration, clock: any Clock<Duration>) async throws -> Bool {
        let wake = Wake()
        withLock { $0.backoffs[streamID] = wake }
        defer {
            withLock { state in
                if state.backoffs[streamID] === wake { state.backoffs[streamID] = nil }
            }
        }
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await clock.sleep(for: delay)
                return false
            }
            group.addTask {
                await wake.wait()
                try Task.checkCancellation()
                return true
            }
            defer { group.cancelAll() }
            guard let woken = try await group.next() else { return false }
            return woken
        }
    }

    /// Returns once no channel task is running.
    func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = withLock { state in
                if state.runningTasks == 0 { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}

/// A signal fired once, by a success elsewhere or by cancellation, that a
/// waiter may await before or after it fires.
final class Wake: @unchecked Sendable {
    // Safety: `fired` and `continuation` are guarded by `lock`.
    private let lock = NSLock()
    private var fired = false
    private var continuation: CheckedContinuation<Void, Never>?

    func fire() {
        lock.lock()
        fired = true
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume()
    }

    /// Returns once fired, or once the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                lock.lock()
                if fired {
                    lock.unlock()
                    continuation.resume()
                } else {
                    self.continuation = continuation
                    lock.unlock()
                }
            }
        } onCancel: {
            fire()
        }
    }
}

/// The loop of one channel: create a token, poll, yield, and wait after a
/// failure, until its task is cancelled or its stream is gone.
struct NotificationChannel {
    let session: RemoteSession
    /// The account generation the channel listens for: once the account
    /// changes, its stream has a new channel and this one stops.
    let account: UInt64
    let streamID: UInt64
    let generation: UInt64
    private var token: NotificationToken?
    private var cursor: String?
    private var lostToken = false
    /// The channel was opened again at once after a loss, and no poll has succeeded since.
    private var reopenedAtOnce = false
    private var failures = 0
    /// The stream heard that the server refused the channel's credentials,
    /// and no poll has succeeded since.
    private var toldRefusal = false
    /// The kind of break the stream last heard of (the server unreachable,
    /// or answering errors), since the last poll that succeeded.
    private var toldBreak: Break?

    private enum Break {
        case unreachable
        case failing
    }

    init(session: RemoteSession, account: UInt64, streamID: UInt64, generation: UInt64) {
        self.session = session
        self.account = account
        self.streamID = streamID
        self.generation = generation
    }

    mutating func run(deliveringTo channels: NotificationChannels) async {
        while !Task.isCancelled {
            do {
                var batch = try await pollOnce(channels)
                // The channel is back after failing: the server answers again.
                if failures > 0 && batch.isEmpty { batch = [.databaseChanged] }
                failures = 0
                reopenedAtOnce = false
                toldRefusal = false
                toldBreak = nil
                guard channels.deliver(batch, streamID: streamID, generation: generation) else { return }
            } catch {
                if Task.isCancelled || error is CancellationError { return }
                let cloudError = error as? CloudError
                if cloudError?.code == .accountChanged { return }
                if let code = cloudError?.code, code == .authenticationFailed || code == .accessDenied {
                    // The server ended the channel, or refuses a new one: its credential was revoked, or
                    // the user removed or blocked. The reader checks the account at once. (Signing out,
                    // AUTHENTICATION_REQUIRED, was told by the change of credentials itself.)
                    if token != nil {
                        token = nil
                        lostToken = true
                    }
                    if !toldRefusal {
                        toldRefusal = true
                        guard channels.deliver([.accountChanged], streamID: streamID, generation: generation) else {
                            return
                        }
                    }
                }
                if cloudError?.code == .notFound, token != nil {
                    token = nil
                    lostToken = true
                    // The server forgot the channel (a restart, an idle expiry): open a new one at
                    // once, whose first act tells the stream to fetch. A loss before any poll of the
                    // new channel succeeded waits, so a server that forgets every channel is not hammered.
                    if !reopenedAtOnce {
                        reopenedAtOnce = true
                        continue
                    }
                }
                failures += 1
                // The channel broke: the reader syncs now, which tells it whether the server is away;
                // once more if a server that answered errors (shutting down, say) then cannot be reached.
                // A refusal or a lost channel is no outage.
                if cloudError?.isTransient ?? true {
                    let kind: Break = cloudError == nil || cloudError?.code == .networkFailure ? .unreachable : .failing
                    if toldBreak != kind {
                        toldBreak = kind
                        guard channels.deliver([.databaseChanged], streamID: streamID, generation: generation) else {
                            return
                        }
                    }
                }
                let delay = Self.delay(
                    afterFailures: failures, policy: session.configuration.notificationBackoff,
                    retryAfter: cloudError?.retryAfter, random: Double.random(in: 0..<1))
                let woken: Bool
                do {
                    woken = try await channels.backoff(
                        streamID: streamID, delay: delay, clock: session.configuration.clock)
                } catch {
                    return
                }
                // The network is back: what was written while the channel was down was not heard.
                if woken {
                    guard channels.deliver([.databaseChanged], streamID: streamID, generation: generation) else {
                        return
                    }
                }
            }
        }
    }

    /// The wait after the `failures`-th failure in a row: exponential from
    /// the policy's initial delay, capped, jittered, and never shorter than
    /// what the server asked for. Computed in seconds as a `Double`, so that
    /// a channel failing for days never overflows.
    static func delay(afterFailures failures: Int, policy: RetryPolicy, retryAfter: Duration?, random: Double)
        -> Duration
    {
        let initial = policy.initialDelay / .seconds(1)
        let maximum = policy.maximumDelay / .seconds(1)
        let exponent = Double(min(max(failures - 1, 0), 64))
        var seconds = min(initial * pow(policy.multiplier, exponent), maximum)
        // random is in 0..<1: spread the wait over ±jitter.
        seconds *= 1 + policy.jitter * (2 * random - 1)
        var delay = Duration.milliseconds(Int64((max(0, seconds) * 1000).rounded()))
        if let retryAfter, retryAfter > delay { delay = retryAfter }
        return delay
    }

    /// Creates the token if there is none, then polls once; returns what to yield.
    private mutating func pollOnce(_ channels: NotificationChannels) async throws -> [CloudNotification] {
        let token: NotificationToken
        if let existing = self.token {
            token = existing
        } else {
            let request = CloudRequest.createToken(apnsEnvironment: session.configuration.environment)
            let session = session
            let (response, _) = try await channels.send(as: account, now: session.now) { authorization in
                try await session.perform(request, authorization: authorization)
            }
            guard case .token(let created) = response else {
                throw CloudError(.internalError, reason: "the server's answer to tokens/create has the wrong shape")
            }
            token = created
            self.token = created
            cursor = nil
            channels.channelOpened(streamID: streamID, generation: generation, token: created.apnsToken)
            channels.opened(streamID: streamID)
            // A channel created anew may have missed notifications: say so once.
            if lostToken {
                lostToken = false
                guard channels.deliver([.databaseChanged], streamID: streamID, generation: generation) else {
                    throw CancellationError()
                }
            }
        }
        let (session, cursor) = (session, cursor)
        let (batch, _) = try await channels.send(as: account, now: session.now) { authorization in
            try await session.poll(token: token, cursor: cursor, authorization: authorization)
        }
        self.cursor = batch.cursor
        return batch.notifications
    }
}
