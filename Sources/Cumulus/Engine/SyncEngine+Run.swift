import CloudCodable
import CloudProtocol
import Foundation

extension SyncEngine {
    /// Sends every pending change, fetches the zone's changes, and returns
    /// when this device is caught up with the server.
    ///
    /// Transient failures are retried with backoff on the configured clock
    /// (``SyncConfiguration/retryPolicy``); each retry starts from what is
    /// pending at that moment. Offline, with the default policy, a call
    /// gives up after 8 attempts and about 2 minutes of waits (1 + 2 + … +
    /// 64 seconds, ±20%); when an automatic run is already retrying, the
    /// call first waits for it to give up, so up to twice that. To fail
    /// sooner, use ``sync(_:)`` with ``SyncOptions``. Records the server
    /// refuses for good are reported through ``events`` and do not make
    /// this throw.
    ///
    /// - Throws: ``CloudError`` when the server cannot be used (no account,
    ///   retries exhausted, a request refused as a whole); the pending
    ///   changes stay in the journal. On the public database, with nobody
    ///   signed in, the fetch is made and `AUTHENTICATION_REQUIRED` thrown
    ///   only while local changes wait for a user. ``SyncEngineError`` when the engine
    ///   was closed; `CancellationError` when it was closed during the sync
    ///   or the calling task was cancelled. A cancelled call returns as soon
    ///   as the run it started stops at its next step, or at once while it
    ///   still waits for a run under way (which goes on); the changes stay
    ///   queued.
    public func sync() async throws {
        try await sync(.default)
    }

    /// Syncs as ``sync()`` does, giving up when `options` say: after
    /// ``SyncOptions/maximumAttempts`` failed attempts in a row, or at
    /// ``SyncOptions/timeout``.
    ///
    /// While a run is under way (an automatic one, or another caller's),
    /// the call waits for it before it makes its own; a failed attempt of
    /// that run counts against the call's attempts, and so does the failure
    /// that run is waiting out when the call is made. With
    /// ``SyncOptions/singleAttempt``, a call made while the engine is
    /// waiting to retry throws that failure at once. The run under way goes
    /// on with its own retries; a run the call started stops when the call
    /// gives up. Nothing queued is dropped.
    ///
    /// - Throws: What ``sync()`` throws; the transient ``CloudError`` of the
    ///   last failed attempt once the attempts are used up;
    ///   ``SyncEngineError`` with code ``SyncEngineError/Code/timedOut``
    ///   at the timeout.
    public func sync(_ options: SyncOptions) async throws {
        try checkOpen()
        guard let timeout = options.timeout else { return try await syncRun(maximumAttempts: options.maximumAttempts) }
        let clock = configuration.clock
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.syncRun(maximumAttempts: options.maximumAttempts) }
            group.addTask {
                try await clock.sleep(for: timeout)
                throw SyncEngineError(.timedOut, "the sync did not finish within \(timeout)")
            }
            // The first to end decides; the other is cancelled, which stops a run the call started.
            defer { group.cancelAll() }
            _ = try await group.next()
        }
    }

    private func syncRun(maximumAttempts: Int?) async throws {
        try checkOpen()
        // One run at a time; a call waits for the run under way and then
        // makes its own, so it sees everything up to the moment it was made.
        // A caller that gives up while it waits returns at once; the run it
        // waited for goes on.
        while let running = currentRun {
            try await wait(for: running, attempts: maximumAttempts)
            if currentRun == running { currentRun = nil }
            try checkOpen()
        }
        // A caller that gives up stops the run it started; what it was
        // sending stays in the journal, in doubt.
        let run = startRun(maximumAttempts: maximumAttempts)
        try await withTaskCancellationHandler {
            try await run.value
        } onCancel: {
            run.cancel()
        }
    }

    /// Waits until `run` ends, however it ends, or throws
    /// `CancellationError` as soon as the calling task is cancelled. With
    /// `attempts`, throws the run's failure once the session lets the
    /// caller go.
    private func wait(for run: Task<Void, any Error>, attempts: Int?) async throws {
        let waiter = CancellableWaiter()
        guard let attempts else { return try await Self.waitCancellably(for: run, waiter) }
        callerCounter += 1
        let caller = callerCounter
        if let failure = session.wait(caller: caller, attempts: attempts) { throw failure }
        releasableWaiters[caller] = waiter
        defer {
            releasableWaiters[caller] = nil
            session.stopWaiting(caller: caller)
        }
        try await Self.waitCancellably(for: run, waiter)
    }

    private static func waitCancellably(for run: Task<Void, any Error>, _ waiter: CancellableWaiter) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard waiter.set(continuation) else { return }
                Task {
                    _ = try? await run.value
                    waiter.resume(with: .success(()))
                }
            }
        } onCancel: {
            waiter.resume(with: .failure(CancellationError()))
        }
    }

    /// Waits until the first fetch of the signed-in account's zone has gone
    /// to its end, so that ``models`` holds what the server held: at once
    /// when it already has, in this engine or in an earlier one on the same
    /// directory (the journal keeps the fact). After a switch of account, it
    /// waits for the new account's first fetch. ``SyncEvent/firstFetchCompleted``
    /// reports the same moment.
    ///
    /// ```swift
    /// let engine = try await SyncEngine<Note>(database: database, directory: directory)
    /// try await engine.waitForFirstFetch()
    /// show(await engine.models)
    /// ```
    ///
    /// The wait does not start a sync: an automatic engine fetches on its
    /// own, a manual one when ``sync()`` is called. While nobody is signed
    /// in (but on the public database, which anyone reads), or the server
    /// cannot be reached, it goes on waiting.
    ///
    /// - Throws: ``SyncEngineError`` with code `closed` when the engine is
    ///   (or gets) closed first; `CancellationError` when the calling task
    ///   is cancelled.
    public func waitForFirstFetch() async throws {
        try checkOpen()
        guard !hasCompletedFirstFetch else { return }
        callerCounter += 1
        let caller = callerCounter
        let waiter = CancellableWaiter()
        firstFetchWaiters[caller] = waiter
        defer { firstFetchWaiters[caller] = nil }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                _ = waiter.set(continuation)
            }
        } onCancel: {
            waiter.resume(with: .failure(CancellationError()))
        }
    }

    /// Whether the first fetch of the signed-in account's zone has gone to
    /// its end (see ``waitForFirstFetch()``).
    public var hasCompletedFirstFetch: Bool { replica.meta.fetched }

    /// Lets go of every caller waiting for the first fetch, with `outcome`.
    func releaseFirstFetchWaiters(_ outcome: Result<Void, any Error>) {
        let waiters = firstFetchWaiters.values
        firstFetchWaiters.removeAll()
        for waiter in waiters { waiter.resume(with: outcome) }
    }

    /// Asks for a run soon, without waiting: after uploads (a run that
    /// only sends), notifications and polls of an automatic engine.
    func requestAutomaticSync(fetching: Bool = true) {
        guard configuration.automaticSync, !isClosed else { return }
        if session.requestRun(fetching: fetching) { _ = startRun(fetching: fetching) }
    }

    /// A page of the zone's changes (`nil`: the server answered no zone),
    /// or the failure of the request.
    typealias PageAnswer = Result<Result<ZoneChanges, CloudError>?, CloudError>

    /// What a run's task does next.
    enum RunStep: Sendable {
        /// Carry out these actions on the engine.
        case act([SyncSession<Model>.Action])
        /// Wait, without holding the engine, then tell the session.
        case wait(Duration)
        case finished
    }

    /// Starts a run and carries out the session's actions until it
    /// finishes. The run holds the engine only while it acts, never while
    /// it waits, so an engine that is let go stops at its next step instead
    /// of syncing on.
    private func startRun(maximumAttempts: Int? = nil, fetching: Bool = true) -> Task<Void, any Error> {
        runCounter += 1
        let id = runCounter
        let clock = configuration.clock
        let first = session.start(maximumAttempts: maximumAttempts, fetching: fetching)
        let run = Task { [weak self] in
            var step = RunStep.act(first)
            do {
                while true {
                    switch step {
                    case .act(let actions):
                        try Task.checkCancellation()
                        guard let self else { throw CancellationError() }
                        step = try await self.carryOut(actions)
                    case .wait(let delay):
                        // A sleep of its own, which the engine may cut short; it ends with the run.
                        let sleep = Task { try await clock.sleep(for: delay) }
                        await self?.setRetrySleep(sleep)
                        await withTaskCancellationHandler {
                            _ = await sleep.result
                        } onCancel: {
                            sleep.cancel()
                        }
                        try Task.checkCancellation()
                        guard let self else { throw CancellationError() }
                        step = await self.woke()
                    case .finished:
                        await self?.runEnded(id, failure: nil)
                        return
                    }
                }
            } catch {
                await self?.runEnded(id, failure: error)
                throw error
            }
        }
        currentRun = run
        return run
    }

    /// The run's wait ended.
    private func woke() -> RunStep {
        retrySleep = nil
        return .act(session.handle(.woke))
    }

    private func setRetrySleep(_ sleep: Task<Void, any Error>) {
        retrySleep = sleep
    }

    /// The server answered (a notification came, or the channel broke and
    /// came back): a run waiting out a failure the server did not ask to be
    /// waited out (no `retryAfter`) tries again now rather than at the end
    /// of its wait.
    func serverAnswered() {
        guard session.waitsOutUnreachableServer, let retrySleep else { return }
        retrySleep.cancel()
        self.retrySleep = nil
    }

    // MARK: Stepping

    /// Starts a run that stops at each wait instead of sleeping, for a
    /// simulation that moves time itself: the run is carried out in the
    /// caller's task, so a seed replays to the same history. Returns
    /// `.wait` or `.finished`; after a wait, ``resumeSteppedRun()``.
    ///
    /// - Throws: What ``sync()`` throws.
    func startSteppedRun() async throws -> RunStep {
        try checkOpen()
        precondition(currentRun == nil && !session.isRunning, "a stepped run needs an idle engine")
        // Requests one at a time, in the caller's task.
        session.settings.readsAhead = false
        return try await step(.act(session.start()))
    }

    /// Goes on with a stepped run after its wait.
    func resumeSteppedRun() async throws -> RunStep {
        try await step(woke())
    }

    private func step(_ first: RunStep) async throws -> RunStep {
        var next = first
        do {
            while case .act(let actions) = next { next = try await carryOut(actions) }
        } catch {
            reportRunEnd(failure: error)
            _ = session.stopped()
            throw error
        }
        if case .finished = next {
            reportRunEnd(failure: nil)
            _ = session.stopped()
        }
        return next
    }

    /// Carries out actions in order, up to the request or wait that ends
    /// them, and returns what the run does next.
    private func carryOut(_ actions: [SyncSession<Model>.Action]) async throws -> RunStep {
        for action in actions {
            let event: SyncSession<Model>.Event
            // A page read ahead serves only a fetch that asks for it next.
            switch action {
            case .persist, .persistBehind, .settleJournal, .publish, .release, .firstFetchCompleted, .status, .fetch,
                .retireAssetCopies:
                break
            case .checkAccount, .createZone, .markZone, .readZoneMarker, .send, .lookUp, .wait, .finish, .query,
                .lookUpRecords, .findAssetFiles, .requestAssetUploads, .uploadAsset:
                stopReadingAhead()
            }
            switch action {
            case .persist(let effects):
                try await carryOut(effects)
                continue
            case .persistBehind(let effects):
                try await writeBehind(effects.journal)
                report(effects)
                continue
            case .settleJournal:
                try await settleJournal()
                continue
            case .publish(let event):
                eventBroadcaster.yield(event)
                continue
            case .release(let callers, let error):
                for caller in callers { releasableWaiters.removeValue(forKey: caller)?.resume(with: .failure(error)) }
                continue
            case .firstFetchCompleted:
                releaseFirstFetchWaiters(.success(()))
                continue
            case .status(let status):
                setStatus(status)
                continue
            case .retireAssetCopies:
                retireAssetCopies()
                continue
            case .wait(let delay):
                return .wait(delay)
            case .finish(let error):
                try await settleJournal()
                if let error { throw error }
                return .finished
            case .checkAccount(let reusable):
                event = .accountChecked(try await attempt { try await self.checkAccount(reusing: reusable) })
            case .createZone(let zoneID, let subscription):
                event = .zoneCreated(try await attempt { try await self.createZone(zoneID, subscription) })
            case .markZone:
                event = .zoneMarked(try await attempt { try await self.markZone() })
            case .readZoneMarker:
                event = .zoneMarkerRead(try await attempt { try await self.readZoneMarker() })
            case .findAssetFiles(let checksums):
                event = .assetFilesFound(findAssetFiles(checksums))
            case .requestAssetUploads(let requests):
                event = try await requestAssetUploads(requests)
            case .uploadAsset(let file, let target):
                event = try await uploadAsset(file, to: target)
            case .send(let operations):
                event = .sent(
                    try await attempt {
                        try await self.checkedDatabase.modifyRecords(
                            operations, zoneID: self.zoneID, atomic: false, for: self.notificationListener)
                    })
            case .lookUp(let name):
                event = .lookedUp(
                    try await attempt {
                        let found = try await self.checkedDatabase.lookupRecords(
                            [name], zoneID: self.zoneID, desiredKeys: nil)
                        if case .record(let record)? = found.first { return record }
                        return nil
                    })
            case .query(let request):
                event = try await query(request)
            case .lookUpRecords(let names):
                event = try await lookUpRecords(names)
            case .fetch(let request, let readAhead):
                event = try await fetch(request, readAhead: readAhead)
            }
            // Cancellation stops the run at the answer; what was sent stays in doubt.
            try Task.checkCancellation()
            return .act(session.handle(event))
        }
        preconditionFailure("Internal inconsistency: actions without a request, wait or end")
    }

    /// One page of the zone's changes, its records prepared. With
    /// `readAhead`, an answer that says more is coming starts the request
    /// for the next page.
    private func fetch(_ request: ZoneChangesRequest, readAhead: Bool) async throws -> SyncSession<Model>.Event {
        let answer = try await page(request)
        if readAhead, case .success(.success(let page)?) = answer, page.moreComing,
            !page.records.isEmpty || page.syncToken != request.syncToken
        {
            var next = request
            next.syncToken = page.syncToken
            startReadingAhead(next)
        }
        guard case .success(let result?) = answer else { return .fetched(answer.map { _ in nil }, prepared: []) }
        switch result {
        case .success(let page):
            return .fetched(.success(page), prepared: try await Self.prepare(page.records, opening: opening))
        case .failure(let error): return .fetched(.failure(error), prepared: [])
        }
    }

    /// One page of the zone's changes: the one read ahead when it is the
    /// page asked for, else a new request.
    private func page(_ request: ZoneChangesRequest) async throws -> PageAnswer {
        if let ahead = pageAhead, ahead.request == request {
            pageAhead = nil
            return try await ahead.answer.value
        }
        stopReadingAhead()
        return try await attempt { try await self.checkedDatabase.fetchZoneChanges([request]).first }
    }

    /// Asks for the next page now, on the database this pass checked.
    private func startReadingAhead(_ request: ZoneChangesRequest) {
        stopReadingAhead()
        let database = checkedDatabase
        pageAhead = (
            request,
            Task {
                do {
                    return .success(try await database.fetchZoneChanges([request]).first)
                } catch let error as CloudError {
                    return .failure(error)
                }
            }
        )
    }

    /// Drops a page read ahead that no fetch is going to ask for.
    func stopReadingAhead() {
        pageAhead?.answer.cancel()
        pageAhead = nil
    }

    private func reportRunEnd(failure: (any Error)?) {
        stopReadingAhead()
        retireAssetCopies()
        // Writes queued behind a fetch still happen, in order; a failed run does not wait for them.
        if failure != nil { writesBehind.removeAll() }
        if let failure { eventBroadcaster.yield(.syncFailed(reason: "\(failure)")) }
        eventBroadcaster.yield(.syncFinished(pending: replica.pending.count))
    }

    /// Queues a journal batch without waiting for it, waiting first for the
    /// oldest queued one when too many are under way: the next page is
    /// fetched while the journal writes the last, and pages that queue up
    /// behind a write share its `fsync`.
    private func writeBehind(_ batch: JournalBatch) async throws {
        guard !batch.isEmpty else { return }
        if writesBehind.count >= Self.writesBehindLimit { try await writesBehind.removeFirst().durable() }
        writesBehind.append(journal.enqueue(batch))
    }

    /// Waits until every batch queued behind is durable. Tickets complete
    /// in order: the last is durable only after the others.
    private func settleJournal() async throws {
        let tickets = writesBehind
        writesBehind.removeAll()
        for ticket in tickets { try await ticket.durable() }
    }

    /// How many journal writes may be under way behind a fetch.
    static var writesBehindLimit: Int { 8 }

    /// The outcome of a request: its value, or the ``CloudError`` it threw.
    /// Anything else (cancellation) ends the run.
    func attempt<T>(_ request: () async throws -> T) async throws -> Result<T, CloudError> {
        do {
            return .success(try await request())
        } catch let error as CloudError {
            return .failure(error)
        }
    }

    /// The check `reusable` while the database's credentials are still
    /// those it was made with, else `users/current`; the pass's requests are
    /// bound to the check, so credentials that change after this are
    /// refused without sending.
    private func checkAccount(reusing reusable: AccountCheck?) async throws -> AccountCheck {
        let check: AccountCheck
        if let reusable, let generation = database.accountGeneration, generation == reusable.generation {
            check = reusable
        } else {
            do {
                check = try await database.checkAccount()
            } catch let error as CloudError where error.code == .authenticationRequired && database.scope == .public {
                // A pass with nobody signed in only reads public records, which are the same for everyone.
                boundDatabase = database
                throw error
            }
        }
        boundDatabase = database.bound(to: check)
        return check
    }

    /// Creates the zone, then its subscription: notifications are a
    /// convenience, and polling covers a failure to subscribe.
    private func createZone(_ zoneID: ZoneID, _ subscription: Subscription) async throws {
        // The public database's default zone always exists.
        if database.scope != .public {
            let results = try await checkedDatabase.modifyZones([.create(zoneID)])
            if case .failure(let error)? = results.first { throw error }
        }
        _ = try? await checkedDatabase.modifySubscriptions([.save(subscription)])
    }

    /// The database bound to the pass's account check: every request that
    /// carries or reads data goes through it.
    var checkedDatabase: any CloudDatabase {
        guard let boundDatabase else {
            preconditionFailure("Internal inconsistency: a data request before the account was checked")
        }
        return boundDatabase
    }

    /// Reports the end of run `id`, and starts another when one was asked for meanwhile.
    private func runEnded(_ id: Int, failure: (any Error)?) async {
        reportRunEnd(failure: failure)
        guard runCounter == id else { return }
        currentRun = nil
        let again = session.stopped()
        if again && configuration.automaticSync && !isClosed { _ = startRun(fetching: false) }
        scheduleRefusalRetry()
    }

    /// An automatic engine sends a refused change again when its retry is
    /// due, whatever the poll interval: one timer, for the earliest retry.
    private func scheduleRefusalRetry() {
        refusalRetryTimer?.cancel()
        refusalRetryTimer = nil
        guard configuration.automaticSync, !isClosed, let due = replica.nextRefusalRetry else { return }
        let delay = max(.zero, due - replica.settings.elapsed())
        let clock = configuration.clock
        refusalRetryTimer = Task { [weak self] in
            do { try await clock.sleep(for: delay) } catch { return }
            await self?.requestAutomaticSync(fetching: false)
        }
    }

    func startAutomaticSync() {
        let notifications = database.notifications(for: notificationListener)
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
        backgroundTasks += [watcher, poller, opened]
        requestAutomaticSync()
    }

    private func handle(_ notification: CloudNotification) {
        serverAnswered()
        switch notification {
        case .zoneChanged(let zone, _) where zone.zoneName != zoneID.zoneName: return
        case .queryChanged(let change) where change.subscriptionID != session.subscriptionID: return
        case .accountChanged:
            session.accountMayHaveChanged()
            requestAutomaticSync()
        default: requestAutomaticSync()
        }
    }

    // MARK: Account

    func setStatus(_ status: AccountStatus) {
        guard status != lastStatus else { return }
        lastStatus = status
        statusBroadcaster.yield(status)
    }
}

/// A continuation resumed once, by whichever comes first: the end of what
/// it waits for, or the cancellation of its task (which may come before
/// the continuation exists).
final class CancellableWaiter: @unchecked Sendable {
    // Safety: `continuation` and `outcome` are guarded by `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, any Error>?
    private var outcome: Result<Void, any Error>?

    /// Keeps `continuation`; `false` when it was resumed at once because
    /// the outcome came first.
    func set(_ continuation: CheckedContinuation<Void, any Error>) -> Bool {
        lock.lock()
        if let outcome {
            lock.unlock()
            continuation.resume(with: outcome)
            return false
        }
        self.continuation = continuation
        lock.unlock()
        return true
    }

    func resume(with result: Result<Void, any Error>) {
        lock.lock()
        guard outcome == nil else {
            lock.unlock()
            return
        }
        outcome = result
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(with: result)
    }
}
