import CloudCodable
import Foundation

extension SyncEngine {
    /// Sends every pending change, fetches the zone's changes, and returns
    /// when this device is caught up with the server.
    ///
    /// Transient failures are retried with backoff on the configured clock.
    /// Records the server refuses for good are reported through ``events``
    /// and do not make this throw.
    ///
    /// - Throws: ``CloudError`` when the server cannot be used (no account,
    ///   retries exhausted, a request refused as a whole); the pending
    ///   changes stay in the journal.
    public func sync() async throws {
        // One run at a time; a call waits for the run under way and then
        // makes its own, so it sees everything up to the moment it was made.
        while let running = currentRun {
            _ = try? await running.value
            // The run's own caller may not have resumed yet to clear it;
            // awaiting a finished task again would spin on the actor.
            if currentRun == running { currentRun = nil }
        }
        let run = Task { try await self.performRun() }
        currentRun = run
        defer {
            if currentRun == run { currentRun = nil }
            // A request that arrived after the run's last round starts another.
            if rerunRequested && configuration.automaticSync {
                rerunRequested = false
                requestAutomaticSync()
            }
        }
        try await run.value
    }

    /// Asks for a run soon, without waiting: after uploads, notifications
    /// and polls of an automatic engine.
    func requestAutomaticSync() {
        guard configuration.automaticSync else { return }
        if currentRun != nil {
            rerunRequested = true
            return
        }
        backgroundTasks.removeAll { $0.isCancelled }
        Task { [weak self] in try? await self?.sync() }
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
        backgroundTasks = [watcher, poller]
        requestAutomaticSync()
    }

    private func handle(_ notification: CloudNotification) {
        switch notification {
        case .zoneChanged(let zone, _) where zone.zoneName != zoneID.zoneName: return
        default: requestAutomaticSync()
        }
    }

    private func performRun() async throws {
        eventBroadcaster.yield(.syncStarted)
        do {
            repeat {
                rerunRequested = false
                try await checkAccount()
                try await ensureZone()
                try await sendPending()
                try await fetchChanges()
                try await sendPending()
            } while rerunRequested
        } catch {
            eventBroadcaster.yield(.syncFailed(reason: "\(error)"))
            eventBroadcaster.yield(.syncFinished(pending: pending.count))
            throw error
        }
        eventBroadcaster.yield(.syncFinished(pending: pending.count))
    }

    // MARK: Retries

    /// Runs a request, retrying transient failures with exponential backoff
    /// (honouring the server's `retryAfter`) until the policy's attempts run out.
    func withRetries<T: Sendable>(_ request: () async throws -> T) async throws -> T {
        var backoff = Backoff(policy: configuration.retryPolicy)
        while true {
            do {
                return try await request()
            } catch let error as CloudError where error.isTransient {
                guard backoff.canRetry else { throw error }
                try await pause(&backoff, error)
            }
        }
    }

    /// Waits the backoff's next delay and reports it.
    func pause(_ backoff: inout Backoff, _ error: CloudError) async throws {
        let delay = backoff.nextDelay(retryAfter: error.retryAfter, random: Double.random(in: 0..<1))
        eventBroadcaster.yield(.retryScheduled(delay: delay, error: error))
        try await configuration.clock.sleep(for: delay)
    }

    // MARK: Journal

    /// Makes `batch` durable. State changes were made before the call, in
    /// the same order the journal writes them.
    func commit(_ batch: JournalBatch) async throws {
        guard !batch.isEmpty else { return }
        try await journal.enqueue(batch).durable()
    }

    func publish(updated: [Model], deleted: [String]) {
        if !updated.isEmpty { changeBroadcaster.yield(.updated(updated)) }
        if !deleted.isEmpty { changeBroadcaster.yield(.deleted(deleted)) }
    }

    // MARK: Account

    func setStatus(_ status: AccountStatus) {
        guard status != lastStatus else { return }
        lastStatus = status
        statusBroadcaster.yield(status)
    }

    /// Finds out who is signed in; a different user than the journal's
    /// clears the previous user's data after reporting it.
    func checkAccount() async throws {
        let user: UserIdentity
        do {
            user = try await withRetries { try await database.currentUser() }
        } catch let error as CloudError {
            switch error.code {
            case .authenticationRequired, .authenticationFailed: setStatus(.noAccount)
            case .accessDenied: setStatus(.restricted)
            default: setStatus(error.isTransient ? .temporarilyUnavailable : .couldNotDetermine)
            }
            throw error
        }
        if meta.user == nil {
            meta.user = user.userRecordName
            var batch = JournalBatch()
            batch.set(JournalKeys.meta, meta.json())
            try await commit(batch)
        } else if meta.user != user.userRecordName {
            try await switchAccount(to: user.userRecordName)
        }
        setStatus(.available)
    }

    private func switchAccount(to user: String) async throws {
        let previous = meta.user
        let discarded = pending.keys.sorted()
        let vanished = Set(serverVersions.keys).union(pendingModels.keys).sorted()
        var batch = JournalBatch()
        for name in serverVersions.keys { batch.remove(JournalKeys.server(name)) }
        for (name, change) in pending {
            switch change.kind {
            case .save: batch.remove(JournalKeys.save(name))
            case .delete: batch.remove(JournalKeys.delete(name))
            }
        }
        meta = EngineMeta(user: user)
        batch.set(JournalKeys.meta, meta.json())
        serverVersions.removeAll()
        pending.removeAll()
        pendingModels.removeAll()
        refused.removeAll()
        conflictAttempts.removeAll()
        try await commit(batch)
        eventBroadcaster.yield(.accountChanged(previousUser: previous, newUser: user, discardedChanges: discarded))
        publish(updated: [], deleted: vanished)
    }

    // MARK: Zone

    /// Creates the engine's zone and its subscription the first time.
    func ensureZone() async throws {
        guard !meta.zoneReady else { return }
        let results = try await withRetries { try await database.modifyZones([.create(zoneID)]) }
        if case .failure(let error)? = results.first { throw error }
        let subscription = Subscription(subscriptionID: "cumulus.\(zoneID.zoneName)", zoneID: zoneID)
        // Notifications are a convenience; polling covers a failure here.
        _ = try? await withRetries { try await database.modifySubscriptions([.save(subscription)]) }
        meta.zoneReady = true
        var batch = JournalBatch()
        batch.set(JournalKeys.meta, meta.json())
        try await commit(batch)
    }

    /// The zone vanished from the server: create it again and queue every
    /// local record to be sent again.
    func recreateZone() async throws {
        var batch = JournalBatch()
        for (name, version) in serverVersions where pending[name] == nil {
            var fresh = try version.record()
            fresh.metadata = nil
            setPending(name, .save(fresh))
            pendingModels[name] = version.model.map { model in
                var model = model
                model.cloudMetadata = nil
                return model
            }
            batch.set(JournalKeys.save(name), try WireFormat.encode(fresh))
        }
        for (name, change) in pending {
            switch change.kind {
            case .save(var record) where record.metadata != nil:
                record.metadata = nil
                pending[name]?.kind = .save(record)
                pendingModels[name]?.cloudMetadata = nil
                batch.set(JournalKeys.save(name), try WireFormat.encode(record))
            case .delete:
                // Nothing left on the server to delete.
                clearPending(name)
                batch.remove(JournalKeys.delete(name))
            default: break
            }
        }
        for name in serverVersions.keys { batch.remove(JournalKeys.server(name)) }
        serverVersions.removeAll()
        meta.zoneReady = false
        meta.syncToken = nil
        batch.set(JournalKeys.meta, meta.json())
        try await commit(batch)
        eventBroadcaster.yield(.zoneRecreated)
        try await ensureZone()
    }
}
