import CloudCodable
import Foundation

extension SyncEngine {
    /// How one pass of a run ended.
    enum PassOutcome: Sendable {
        /// Everything pending was sent and the zone's changes fetched.
        case caughtUp
        /// Another user signed in and the replica was cleared: start again at once.
        case restart
        /// A transient failure: pass again after a wait.
        case retry(CloudError, progressed: Bool)
    }

    /// Another user is signed in than the one the replica belongs to.
    struct AccountSwitched: Error {}

    /// Sends every pending change, fetches the zone's changes, and returns
    /// when this device is caught up with the server.
    ///
    /// Transient failures are retried with backoff on the configured clock;
    /// each retry starts from what is pending at that moment. Records the
    /// server refuses for good are reported through ``events`` and do not
    /// make this throw.
    ///
    /// - Throws: ``CloudError`` when the server cannot be used (no account,
    ///   retries exhausted, a request refused as a whole); the pending
    ///   changes stay in the journal. ``SyncEngineError`` when the engine
    ///   was closed; `CancellationError` when it was closed during the sync
    ///   or the calling task was cancelled, which stops the sync.
    public func sync() async throws {
        try checkOpen()
        // One run at a time; a call waits for the run under way and then
        // makes its own, so it sees everything up to the moment it was made.
        while let running = currentRun {
            _ = try? await running.value
            if currentRun == running { currentRun = nil }
            try checkOpen()
        }
        // A caller that gives up stops the run it started; what it was
        // sending stays in the journal, in doubt.
        let run = startRun()
        try await withTaskCancellationHandler {
            try await run.value
        } onCancel: {
            run.cancel()
        }
    }

    /// Asks for a run soon, without waiting: after uploads, notifications
    /// and polls of an automatic engine.
    func requestAutomaticSync() {
        guard configuration.automaticSync, !isClosed else { return }
        if currentRun != nil {
            rerunRequested = true
            return
        }
        _ = startRun()
    }

    /// Starts a run: passes until caught up, with a backoff wait after a
    /// pass that met a transient failure. The run holds the engine only
    /// while a pass is under way, never while it waits, so an engine that
    /// is let go stops at its next step instead of syncing on.
    private func startRun() -> Task<Void, any Error> {
        runCounter += 1
        let id = runCounter
        let clock = configuration.clock
        let random = configuration.random
        let policy = configuration.retryPolicy
        let run = Task { [weak self] in
            self?.eventBroadcaster.yield(.syncStarted)
            var backoff = Backoff(policy: policy)
            while true {
                let outcome: PassOutcome
                do {
                    try Task.checkCancellation()
                    guard let result = try await self?.pass() else { throw CancellationError() }
                    outcome = result
                } catch {
                    await self?.runEnded(id, failure: error)
                    throw error
                }
                switch outcome {
                case .caughtUp:
                    await self?.runEnded(id, failure: nil)
                    return
                case .restart:
                    continue
                case .retry(let error, let progressed):
                    if progressed { backoff.reset() }
                    guard backoff.canRetry else {
                        await self?.runEnded(id, failure: error)
                        throw error
                    }
                    let delay = backoff.nextDelay(retryAfter: error.retryAfter, random: random())
                    self?.eventBroadcaster.yield(.retryScheduled(delay: delay, error: error))
                    do {
                        try await clock.sleep(for: delay)
                    } catch {
                        await self?.runEnded(id, failure: error)
                        throw error
                    }
                }
            }
        }
        currentRun = run
        return run
    }

    /// Reports the end of run `id`, and starts another when one was asked for meanwhile.
    private func runEnded(_ id: Int, failure: (any Error)?) {
        if let failure { eventBroadcaster.yield(.syncFailed(reason: "\(failure)")) }
        eventBroadcaster.yield(.syncFinished(pending: replica.pending.count))
        guard runCounter == id else { return }
        currentRun = nil
        if rerunRequested && configuration.automaticSync && !isClosed {
            rerunRequested = false
            _ = startRun()
        }
    }

    /// One pass: check the account, make sure the zone exists, send, fetch,
    /// send what the fetch's conflicts left, until no new request came.
    private func pass() async throws -> PassOutcome {
        madeProgress = false
        do {
            repeat {
                rerunRequested = false
                try await checkAccount()
                try await ensureZone()
                try await sendPending()
                try await fetchChanges()
                try await sendPending()
            } while rerunRequested
            return .caughtUp
        } catch is AccountSwitched {
            return .restart
        } catch let error as CloudError where error.isTransient {
            return .retry(error, progressed: madeProgress)
        }
    }

    func startAutomaticSync() {
        let notifications = database.notifications()
        let watcher = Task { [weak self] in
            for await notification in notifications {
                guard let self else { return }
                await self.handle(notification)
            }
        }
        let clock = configuration.clock
        let interval = configuration.pollInterval
        let poller = Task { [weak self] in
            while !Task.isCancelled {
                do { try await clock.sleep(for: interval) } catch { return }
                guard let self else { return }
                await self.requestAutomaticSync()
            }
        }
        // A change written while the stream's channel opened is not
        // notified: once it listens, fetch again if it was not listening
        // from the start.
        let database = database
        let opened = Task { [weak self] in
            guard await database.notificationChannelsOpened() else { return }
            await self?.requestAutomaticSync()
        }
        backgroundTasks = [watcher, poller, opened]
        requestAutomaticSync()
    }

    private func handle(_ notification: CloudNotification) {
        switch notification {
        case .zoneChanged(let zone, _) where zone.zoneName != zoneID.zoneName: return
        default: requestAutomaticSync()
        }
    }

    // MARK: Account

    func setStatus(_ status: AccountStatus) {
        guard status != lastStatus else { return }
        lastStatus = status
        statusBroadcaster.yield(status)
    }

    /// Finds out who is signed in. Done at the start of every pass, before
    /// every request that carries data and before any recovery, so that
    /// nothing of one user's replica is ever sent to another user's
    /// database. A different user than the replica's clears the previous
    /// user's data after reporting it, and throws ``AccountSwitched``.
    func checkAccount() async throws {
        let user: UserIdentity
        do {
            user = try await database.currentUser()
        } catch let error as CloudError {
            switch error.code {
            case .authenticationRequired, .authenticationFailed: setStatus(.noAccount)
            case .accessDenied: setStatus(.restricted)
            default: setStatus(error.isTransient ? .temporarilyUnavailable : .couldNotDetermine)
            }
            throw error
        }
        setStatus(.available)
        guard let owner = replica.meta.user else {
            try await carryOut(replica.updateMeta { $0.user = user.userRecordName })
            return
        }
        guard owner != user.userRecordName else { return }
        try await carryOut(replica.switchAccount(to: user.userRecordName))
        throw AccountSwitched()
    }

    // MARK: Zone

    /// Creates the engine's zone and its subscription the first time.
    func ensureZone() async throws {
        guard !replica.meta.zoneReady else { return }
        let results = try await database.modifyZones([.create(zoneID)])
        if case .failure(let error)? = results.first { throw error }
        let subscription = Subscription(subscriptionID: "cumulus.\(zoneID.zoneName)", zoneID: zoneID)
        // Notifications are a convenience; polling covers a failure here.
        _ = try? await database.modifySubscriptions([.save(subscription)])
        try await carryOut(replica.updateMeta { $0.zoneReady = true })
    }

    /// The zone vanished from the server: once the account is known to be
    /// still the replica's, create it again and queue every local record to
    /// be sent again.
    func recreateZone() async throws {
        try await checkAccount()
        try await carryOut(replica.zoneMissing())
        try await ensureZone()
    }
}
