import CloudCodable
import CloudProtocol
import Foundation

/// The engine's whole run as a value: the replica and the state of the run
/// under way, and every decision about what to do next.
///
/// The engine feeds it events (the account was checked, an asset was
/// uploaded, a batch was answered, a page arrived, a wait ended) and
/// carries out the actions it returns, in order: make these effects
/// durable, publish this, upload this asset, send this batch, fetch from
/// this token, wait this long, finish. The engine decides nothing itself,
/// so every decision can be tested, and simulated, without tasks or
/// clocks. Each list of actions ends with at most one request or wait,
/// whose outcome is the next event. Assets are decided in
/// `SyncSession+Assets.swift`.
struct SyncSession<Model: CloudCodable>: Sendable {
    /// What the session needs of the engine's configuration.
    struct Settings: Sendable {
        var batchSize: Int
        var fetchResultsLimit: Int?
        var retryPolicy: RetryPolicy
        /// The source of every random number the run draws, in 0..<1.
        var random: @Sendable () -> Double
        /// Whether a fetch asks for the next page while it applies this
        /// one; off where requests must happen one at a time (a
        /// simulation that replays a seed).
        var readsAhead = true
        /// Whether the zone is another user's, reached through a share: it
        /// is never created, and when the server no longer answers it the
        /// share was lost, not the zone.
        var isSharedZone = false
        /// Whether the zone may hold other engines' record types: it then
        /// carries a marker record (see ``ZoneMarker``) that tells a zone
        /// another engine created again from a sync token that expired.
        var marksZone = false
        /// Whether the zone is the public database's default zone: never
        /// created, readable with nobody signed in, and fetched by queries
        /// where the server has no change feed (see ``PublicFetch``).
        var isPublic = false
        /// This device's time in milliseconds since 1970: when a scan of
        /// the public database's names started.
        var now: @Sendable () -> Int64 = { RecordStamp(date: Date()).timestamp }
    }

    /// What happened since the last actions.
    enum Event: Sendable {
        /// The account check's answer (or the check reused).
        case accountChecked(Result<AccountCheck, CloudError>)
        /// The zone's creation (its subscription's failure does not count).
        case zoneCreated(Result<Void, CloudError>)
        /// The epoch of the zone's marker, made now or found.
        case zoneMarked(Result<String, CloudError>)
        /// The epoch of the zone's marker, `nil` when it has none.
        case zoneMarkerRead(Result<String?, CloudError>)
        /// The answer to the last batch.
        case sent(Result<[RecordResult], CloudError>)
        /// The files this device has of the assets asked for, by checksum.
        case assetFilesFound([String: URL])
        /// The answer to `assets/upload`: where each asset's bytes go.
        case assetUploadsRequested(Result<[AssetUploadTarget], CloudError>)
        /// The answer to the upload of an asset's bytes: the asset with its receipt.
        case assetUploaded(Result<Asset, CloudError>)
        /// The asset's file could not be read, for this reason.
        case assetFileUnreadable(String)
        /// A looked-up record, `nil` when the server has none.
        case lookedUp(Result<Record?, CloudError>)
        /// A page of the zone's changes (`nil`: the server answered no
        /// zone), with its records prepared for the replica.
        case fetched(Result<ZoneChanges?, CloudError>, prepared: [Replica<Model>.Fetched?])
        /// A page of a query of the public database, with its records
        /// prepared (none for a scan of names).
        case queried(Result<QueryResult, CloudError>, prepared: [Replica<Model>.Fetched?])
        /// The answer to a lookup of records a scan did not see, prepared.
        case recordsLookedUp(Result<[RecordResult], CloudError>, prepared: [Replica<Model>.Fetched?])
        /// The wait before the next attempt ended.
        case woke
    }

    /// What the engine is to do, in order.
    enum Action: Sendable {
        /// Ask the server who is signed in, and bind the requests that
        /// follow to that account. A check to reuse is taken instead while
        /// the database's credentials are still those it was made with.
        case checkAccount(reusing: AccountCheck?)
        /// Create the zone and, as a convenience, its subscription.
        case createZone(ZoneID, Subscription)
        /// Create the zone's marker unless it has one, and answer its epoch.
        case markZone
        /// Look up the epoch of the zone's marker.
        case readZoneMarker
        /// Send one `records/modify` request.
        case send([RecordOperation])
        /// Move the local copies of assets that no pending save holds any
        /// more into the cache.
        case retireAssetCopies
        /// Find the files of these assets' bytes (by checksum) on this device.
        case findAssetFiles([String])
        /// Ask where to upload the bytes of assets (`assets/upload`).
        case requestAssetUploads([AssetUploadRequest])
        /// Send an asset's bytes from this file.
        case uploadAsset(URL, AssetUploadTarget)
        /// Look up one record.
        case lookUp(recordName: String)
        /// Fetch one page of the zone's changes. With `readAhead`, an
        /// answer that says more is coming starts the request for the next
        /// page (from the answer's token) before this page is applied, so
        /// that the server works while the device does.
        case fetch(ZoneChangesRequest, readAhead: Bool)
        /// Query one page of the public database (see ``PublicFetch``).
        case query(PublicQueryRequest)
        /// Look up these records of the public database.
        case lookUpRecords([String])
        /// Make the journal batch durable, then report and publish.
        case persist(ReplicaEffects<Model>)
        /// Queue the journal batch and report at once; the next
        /// ``settleJournal`` waits until it is durable.
        case persistBehind(ReplicaEffects<Model>)
        /// Wait until every queued journal batch is durable.
        case settleJournal
        /// Report an event.
        case publish(SyncEvent)
        /// These callers of `sync`, waiting for the run under way, give up
        /// with this error; the run goes on.
        case release(callers: [Int], CloudError)
        /// The first complete fetch of the account is durable: tell whoever waits for it.
        case firstFetchCompleted
        /// The account's status is now this.
        case status(AccountStatus)
        /// Wait this long on the configured clock.
        case wait(Duration)
        /// The run ended, caught up (`nil`) or with this error.
        case finish(CloudError?)
    }

    /// Where a pass is.
    enum Phase: Sendable, Equatable {
        /// Sending what is pending, before the fetch.
        case sendingFirst
        case fetching
        /// Sending what the fetch's conflicts left.
        case sendingAfterFetch
    }

    /// Where the pass goes once the zone exists again.
    enum Resume: Sendable, Equatable {
        /// Start sending: the zone was created at the start of the pass.
        case startOfPass
        /// Go on sending.
        case sending
        /// The fetch is over: send what is left.
        case afterFetch
    }

    /// Why the account is being checked. The engine binds the pass's
    /// requests to the account each check found, so a request made after
    /// the account changed is refused (``CloudError/Code/accountChanged``)
    /// instead of reaching another user's database.
    enum AccountCheckReason: Sendable, Equatable {
        case startOfPass
        /// Before the zone is created again and everything queued again.
        case beforeRecreation(Resume)
    }

    /// What the run waits for.
    enum Awaiting: Sendable {
        case account(AccountCheckReason)
        case zone(Resume)
        case marker(Resume)
        /// The marker's epoch, after a sync token expired.
        case markerCheck
        case answer(OutgoingBatch)
        /// The files of the batch's assets to upload.
        case assetFiles(OutgoingBatch)
        /// Where to upload the batch's assets.
        case assetUploadTargets(OutgoingBatch)
        /// The upload of the batch's next asset.
        case assetUpload(OutgoingBatch)
        /// A lookup of a conflict's record, the others to look up after it,
        /// and what the batch's answers left to do.
        case lookup(Replica<Model>.SentChange, rest: [Replica<Model>.SentChange], after: AnswerOutcome)
        case page
        /// A page of a query of the public database.
        case query
        /// A lookup of names a scan did not see, and the names left after them.
        case confirmation([String], rest: [String])
        case backoff
    }

    /// What a batch's answers leave to do once its lookups are done.
    struct AnswerOutcome: Sendable {
        var transient: CloudError?
        var zoneMissing: Bool
    }

    /// The run under way.
    struct Run: Sendable {
        var backoff: Backoff
        /// Whether the passes fetch: not for a run that only sends what
        /// the app changed, since the server's notification of that write
        /// sets off the fetch that would bring anything else.
        var fetches: Bool
        /// A fetching run was asked for before this pass's fetch: the run
        /// stands for it, and a run that fails before fetching passes again.
        var coversRequest = false
        var phase: Phase = .sendingFirst
        var awaiting: Awaiting?
        /// Whether the pass sent a batch or applied a page, which starts the
        /// count of attempts again.
        var madeProgress = false
        var batchSize: Int
        /// The token the next page is fetched from.
        var token: SyncToken?
        /// The names seen while fetching the whole zone (after an expired
        /// token, or from no token into a replica that holds records): what
        /// the zone no longer has is removed once all of it was seen.
        var seen: Set<String>?
        /// The failure whose backoff the run waits out.
        var lastFailure: CloudError?
        /// Nobody is signed in to the public database: the pass only reads.
        var anonymous = false
        /// The query fetch under way, where the public database has no feed.
        var publicFetch: PublicFetch?
    }

    let zoneID: ZoneID
    var settings: Settings
    /// The records and pending changes, and every decision about them.
    var replica: Replica<Model>
    /// The run under way, if any.
    var run: Run?
    /// Another run was asked for while one was under way.
    private(set) var rerunRequested = false
    /// Callers of `sync` with an attempt limit that wait for the run under
    /// way to end before they start their own: how many more failed
    /// attempts of it each waits through.
    private(set) var waiters: [Int: Int] = [:]
    /// A run asked for meanwhile (this one's next pass, or the next run) must fetch.
    private(set) var fetchRequested = false
    /// The last account check that succeeded, for later passes to reuse
    /// while the credentials stay the same; forgotten when a request
    /// suggests the account may have changed or cannot be reached.
    private(set) var lastCheck: AccountCheck?
    /// The public database answered `changes/zone` with a refusal: it has
    /// no change feed (for anybody, or for a reader without a user), so
    /// fetches query it instead. Remembered for the engine's life; a new
    /// engine asks again.
    var publicFeedRefused = false
    var publicFeedRefusedAnonymously = false
    /// A scan of the public database's record names is due (the engine's
    /// timer says so): the next query fetch looks for deletions.
    var publicScanDue = false
    /// This engine saved its query subscription in the public database for
    /// the signed-in user: once per engine, since a server may learn query
    /// subscriptions, or lose them, between launches.
    private(set) var publicSubscribed = false
    /// The receipts of assets uploaded for saves the server has not
    /// answered yet, in memory only (see ``OutgoingBatch``).
    var assetReceipts: [ReceiptKey: String] = [:]

    init(replica: Replica<Model>, settings: Settings) {
        self.replica = replica
        self.zoneID = replica.zoneID
        self.settings = settings
    }

    var isRunning: Bool { run != nil }

    // MARK: Runs

    /// A run was asked for (an upload, a notification, a poll): whether to
    /// start one now. During a run, the run passes once more at its end.
    /// An upload asks for a run that only sends (`fetching: false`).
    mutating func requestRun(fetching: Bool = true) -> Bool {
        guard var current = run else { return true }
        if fetching, current.phase == .sendingFirst {
            // Heard before this pass asks for the zone's changes: the
            // change it stands for was made before, so that fetch brings it.
            current.fetches = true
            current.coversRequest = true
            run = current
            return false
        }
        rerunRequested = true
        if fetching { fetchRequested = true }
        return false
    }

    /// Starts a run: passes until caught up, or, not `fetching`, until
    /// what is pending is sent; or until `maximumAttempts` (the retry
    /// policy's when `nil`) attempts in a row failed.
    mutating func start(maximumAttempts: Int? = nil, fetching: Bool = true) -> [Action] {
        var policy = settings.retryPolicy
        if let maximumAttempts { policy.maximumAttempts = max(1, maximumAttempts) }
        run = Run(backoff: Backoff(policy: policy), fetches: fetching || fetchRequested, batchSize: settings.batchSize)
        fetchRequested = false
        // Records an update of the app made readable are published first, without a fetch.
        let revived: [Action] = replica.revived.isEmpty ? [] : [.persist(replica.publishRevived())]
        return [.publish(.syncStarted)] + revived + beginPass()
    }

    /// A caller of `sync` that gives up after `attempts` failed attempts
    /// waits for the run under way. Returns the error to give up with at
    /// once: the run already waits out a failure, which counts as one.
    mutating func wait(caller: Int, attempts: Int) -> CloudError? {
        guard let run else { return nil }
        var left = attempts
        if case .backoff? = run.awaiting, let failure = run.lastFailure {
            left -= 1
            if left < 1 { return failure }
        }
        waiters[caller] = left
        return nil
    }

    /// The caller stopped waiting (the run ended, or it gave up).
    mutating func stopWaiting(caller: Int) {
        waiters[caller] = nil
    }

    /// Whether the run waits out a failure that a sign of the server's
    /// return may cut short: one the server did not ask to be waited out
    /// (no `retryAfter`).
    var waitsOutUnreachableServer: Bool {
        guard let run, case .backoff? = run.awaiting, let failure = run.lastFailure else { return false }
        return failure.retryAfter == nil
    }

    /// The server said the account changed (a notification): the next
    /// pass asks who is signed in.
    mutating func accountMayHaveChanged() {
        lastCheck = nil
    }

    /// The run ended outside the session's decisions (cancelled, or the
    /// journal failed). Returns whether another run was asked for meanwhile.
    mutating func stopped() -> Bool {
        passAgainIfUncovered()
        run = nil
        waiters.removeAll()
        defer { rerunRequested = false }
        return rerunRequested
    }

    /// A run that ends before the fetch it stood for asks for another.
    private mutating func passAgainIfUncovered() {
        guard run?.coversRequest == true else { return }
        rerunRequested = true
        fetchRequested = true
    }

    /// Takes the next event of the run under way.
    mutating func handle(_ event: Event) -> [Action] {
        guard let awaiting = run?.awaiting else {
            preconditionFailure("Internal inconsistency: an event with nothing awaited")
        }
        run?.awaiting = nil
        switch (awaiting, event) {
        case (.account(let check), .accountChecked(let result)):
            return accountChecked(result, for: check)
        case (.zone(let resume), .zoneCreated(let result)):
            return zoneCreated(result, then: resume)
        case (.marker(let resume), .zoneMarked(let result)):
            return zoneMarked(result, then: resume)
        case (.markerCheck, .zoneMarkerRead(let result)):
            return zoneMarkerRead(result)
        case (.answer(let outgoing), .sent(let result)):
            return saved(result, for: outgoing)
        case (.assetFiles(let outgoing), .assetFilesFound(let files)):
            return assetFilesFound(files, for: outgoing)
        case (.assetUploadTargets(let outgoing), .assetUploadsRequested(let result)):
            return assetUploadsRequested(result, for: outgoing)
        case (.assetUpload(let outgoing), .assetUploaded(let result)):
            return assetUploaded(result, for: outgoing)
        case (.assetUpload(let outgoing), .assetFileUnreadable(let reason)):
            return assetFileUnreadable(reason, for: outgoing)
        case (.lookup(let change, let rest, let outcome), .lookedUp(let result)):
            switch result {
            case .failure(let error): return failed(error)
            case .success(let record):
                return [.persist(replica.lookedUp(change, found: record))] + lookUp(rest, then: outcome)
            }
        case (.page, .fetched(let result, let prepared)):
            return pageArrived(result, prepared)
        case (.query, .queried(let result, let prepared)):
            return queried(result, prepared)
        case (.confirmation(let names, let rest), .recordsLookedUp(let result, let prepared)):
            return lookedUp(names, result, prepared, rest: rest)
        case (.backoff, .woke):
            return beginPass()
        default:
            preconditionFailure("Internal inconsistency: \(event) while awaiting \(awaiting)")
        }
    }

    // MARK: Passes

    /// One pass: check the account, make sure the zone exists, send, fetch,
    /// send what the fetch's conflicts left; again while runs were asked for.
    private mutating func beginPass() -> [Action] {
        if rerunRequested && fetchRequested { run?.fetches = true }
        if rerunRequested { fetchRequested = false }
        rerunRequested = false
        run?.madeProgress = false
        run?.anonymous = false
        run?.phase = .sendingFirst
        return awaitAccount(.startOfPass)
    }

    private mutating func endPass() -> [Action] {
        if rerunRequested { return beginPass() }
        return finish(nil)
    }

    private mutating func finish(_ error: CloudError?) -> [Action] {
        if error != nil { passAgainIfUncovered() }
        run = nil
        waiters.removeAll()
        return [.finish(error)]
    }

    /// A failure of the pass: a transient one is tried again after a wait
    /// until the attempts run out; any other ends the run.
    mutating func failed(_ error: CloudError, reportingStatus: Bool = true) -> [Action] {
        // The account may have changed or cannot be reached: the next pass asks the server.
        let status = AccountStatus(after: error)
        if error.code == .accountChanged || error.isTransient || status.isAccountProblem { lastCheck = nil }
        // The account changed under the pass: nothing was sent; check it again at once.
        if error.code == .accountChanged, run != nil { return beginPass() }
        // A request of a pass that reused its check tells what the check would have.
        if reportingStatus, status.isAccountProblem { return [.status(status)] + finish(error) }
        // Any request that cannot reach the account says so at once, not at the next account check.
        let reported: [Action] = reportingStatus && status == .temporarilyUnavailable ? [.status(status)] : []
        guard error.isTransient, var current = run else { return reported + finish(error) }
        if current.madeProgress { current.backoff.reset() }
        guard current.backoff.canRetry else { return reported + finish(error) }
        let delay = current.backoff.nextDelay(retryAfter: error.retryAfter, random: settings.random())
        current.awaiting = .backoff
        current.lastFailure = error
        run = current
        return reported + [.publish(.retryScheduled(delay: delay, error: error))] + releaseWaiters(error)
            + [.wait(delay)]
    }

    /// Counts a failed attempt against each waiting caller, and lets go of
    /// those whose attempts are used up.
    private mutating func releaseWaiters(_ error: CloudError) -> [Action] {
        var released: [Int] = []
        for (caller, left) in waiters {
            if left <= 1 { released.append(caller) } else { waiters[caller] = left - 1 }
        }
        guard !released.isEmpty else { return [] }
        for caller in released { waiters[caller] = nil }
        return [.release(callers: released.sorted(), error)]
    }

    // MARK: Account

    /// A pass reuses the last check while the credentials are unchanged
    /// (an idle poll is then one request); a zone is created again only
    /// after the server was asked.
    private mutating func awaitAccount(_ check: AccountCheckReason) -> [Action] {
        run?.awaiting = .account(check)
        return [.checkAccount(reusing: check == .startOfPass ? lastCheck : nil)]
    }

    /// Finds out who is signed in. A different user than the replica's
    /// clears the previous user's data after reporting it, and the run
    /// starts again as the new user.
    private mutating func accountChecked(_ result: Result<AccountCheck, CloudError>, for check: AccountCheckReason)
        -> [Action]
    {
        let user: UserIdentity
        switch result {
        case .failure(let error) where settings.isPublic && error.code == .authenticationRequired:
            // Anyone may read the public database: the pass fetches, and what is queued waits for a user.
            lastCheck = nil
            run?.anonymous = true
            return [.status(.noAccount)] + (run?.fetches == true ? startFetch() : sendStep())
        case .failure(let error):
            return [.status(AccountStatus(after: error))] + failed(error, reportingStatus: false)
        case .success(let found):
            user = found.user
            lastCheck = found
        }
        var actions: [Action] = [.status(.available)]
        if let owner = replica.meta.user {
            guard owner == user.userRecordName else {
                publicSubscribed = false
                actions.append(.persist(replica.switchAccount(to: user.userRecordName)))
                return actions + beginPass()
            }
        } else {
            actions.append(.persist(replica.updateMeta { $0.user = user.userRecordName }))
        }
        switch check {
        case .startOfPass:
            return actions + ensureZone(then: .startOfPass)
        case .beforeRecreation(let resume):
            return actions + [.persist(replica.zoneMissing())] + ensureZone(then: resume)
        }
    }

    // MARK: Zone

    /// Creates the engine's zone and its subscription the first time.
    private mutating func ensureZone(then resume: Resume) -> [Action] {
        guard (settings.isPublic ? publicSubscribed : replica.meta.zoneReady) || settings.isSharedZone else {
            run?.awaiting = .zone(resume)
            let subscription =
                settings.isPublic
                ? Subscription(subscriptionID: subscriptionID, query: RecordQuery(recordType: Model.cloudRecordType))
                : Subscription(subscriptionID: subscriptionID, zoneID: zoneID)
            return [.createZone(zoneID, subscription)]
        }
        return resumed(resume)
    }

    /// The engine's subscription: of its zone, or in the public database
    /// (which has no zone subscriptions, and whose default zone engines of
    /// several types share), a query subscription of its type.
    var subscriptionID: String {
        settings.isPublic ? "cumulus.public.\(Model.cloudRecordType)" : "cumulus.\(zoneID.zoneName)"
    }

    private mutating func zoneCreated(_ result: Result<Void, CloudError>, then resume: Resume) -> [Action] {
        switch result {
        case .failure(let error): return failed(error)
        case .success:
            if settings.isPublic { publicSubscribed = true }
            guard settings.marksZone else {
                return [.persist(replica.updateMeta { $0.zoneReady = true })] + resumed(resume)
            }
            run?.awaiting = .marker(resume)
            return [.markZone]
        }
    }

    /// The zone is ready once its marker's epoch is known.
    private mutating func zoneMarked(_ result: Result<String, CloudError>, then resume: Resume) -> [Action] {
        switch result {
        case .failure(let error): return failed(error)
        case .success(let epoch):
            let ready = replica.updateMeta {
                $0.zoneReady = true
                $0.zoneEpoch = epoch
            }
            return [.persist(ready)] + resumed(resume)
        }
    }

    /// After an expired token: the epoch this engine knows means the same
    /// zone, fetched again; another (or none) means a zone created again.
    private mutating func zoneMarkerRead(_ result: Result<String?, CloudError>) -> [Action] {
        switch result {
        case .failure(let error): return failed(error)
        case .success(let epoch) where epoch == replica.meta.zoneEpoch: return refetchWholeZone()
        case .success:
            // Another engine created the zone again: this one's records went with the old one.
            return [.settleJournal] + recreateZone(then: .afterFetch)
        }
    }

    /// The zone vanished from the server: once the account is known to be
    /// still the replica's, create it again and queue every local record to
    /// be sent again.
    private mutating func recreateZone(then resume: Resume) -> [Action] {
        guard !settings.isPublic else {
            return finish(
                CloudError(.zoneNotFound, reason: "the public database answered that its default zone is missing"))
        }
        guard !settings.isSharedZone else {
            // Removed, left, or the share stopped: the shared models leave this device.
            return [.settleJournal, .persist(replica.loseSharedZone()), .publish(.pendingChanges(0))] + endPass()
        }
        return awaitAccount(.beforeRecreation(resume))
    }

    private mutating func resumed(_ resume: Resume) -> [Action] {
        switch resume {
        case .startOfPass, .sending: return sendStep()
        case .afterFetch:
            run?.phase = .sendingAfterFetch
            return sendStep()
        }
    }

    // MARK: Sending

    /// Sends pending changes in batches until none is left that can be sent.
    private mutating func sendStep() -> [Action] {
        guard replica.hasChangesToSend else { return sendingDone() }
        if run?.anonymous == true {
            // Kept in the journal, never dropped: sent once a user signs in.
            return finish(
                CloudError(
                    .authenticationRequired, reason: "nobody is signed in: local changes wait until a user signs in"))
        }
        return nextBatch()
    }

    /// The next batch, made from what is pending now, in doubt in the
    /// journal before it leaves: a crash or a lost answer never makes the
    /// engine treat a change that may have arrived as unsent. Its assets
    /// go first (see ``sendWithAssets(_:)``).
    private mutating func nextBatch() -> [Action] {
        let batch = replica.nextBatch(limit: run?.batchSize ?? settings.batchSize)
        guard !batch.isEmpty else { return sendingDone() }
        return [.persist(replica.send(batch)), .retireAssetCopies] + sendWithAssets(batch)
    }

    /// The outcome of a batch: one result for each of its changes, or the
    /// failure of the batch as a whole.
    mutating func answered(_ batch: [Replica<Model>.SentChange], _ result: Result<[RecordResult], CloudError>)
        -> [Action]
    {
        let results: [RecordResult]
        switch result {
        case .failure(let error) where error.code == .badRequest && batch.count > 1:
            // Too much for one request: halve the batch and go on.
            run?.batchSize = max(1, batch.count / 2)
            return sendStep()
        case .failure(let error) where error.code == .zoneNotFound:
            return recreateZone(then: .sending)
        case .failure(let error):
            return failed(error)
        case .success(let answered):
            results = answered
        }
        let answers = replica.apply(results, for: batch)
        let outcome = AnswerOutcome(transient: answers.transient, zoneMissing: answers.zoneMissing)
        return [.persist(answers.effects)] + lookUp(answers.lookups, then: outcome)
    }

    /// Looks up, one at a time, the records of conflicts whose answer did
    /// not carry them, then does what the answers left.
    private mutating func lookUp(_ changes: [Replica<Model>.SentChange], then outcome: AnswerOutcome) -> [Action] {
        guard let change = changes.first else {
            run?.madeProgress = true
            var actions: [Action] = [.publish(.pendingChanges(replica.pending.count))]
            if outcome.zoneMissing {
                actions += recreateZone(then: .sending)
            } else if let transient = outcome.transient {
                actions += failed(transient)
            } else {
                actions += sendStep()
            }
            return actions
        }
        run?.awaiting = .lookup(change, rest: Array(changes.dropFirst()), after: outcome)
        return [.lookUp(recordName: change.name)]
    }

    private mutating func sendingDone() -> [Action] {
        switch run?.phase {
        case .sendingFirst: return run?.fetches == true ? startFetch() : endPass()
        default: return endPass()
        }
    }

    // MARK: Fetching

    /// Fetches the zone's changes since the saved token, page by page. Each
    /// page's replica changes and its token are one journal write, so a
    /// crash can never skip changes; pages are written behind the fetch and
    /// the fetch ends once all are durable.
    private mutating func startFetch() -> [Action] {
        run?.phase = .fetching
        if usesPublicQueries { return startPublicQuery() }
        let token = replica.meta.syncToken
        run?.token = token
        run?.seen = token == nil && !replica.server.isEmpty ? [] : nil
        return requestPage()
    }

    private mutating func requestPage() -> [Action] {
        run?.awaiting = .page
        return [
            .fetch(
                ZoneChangesRequest(
                    zoneID: zoneID, syncToken: run?.token, resultsLimit: settings.fetchResultsLimit,
                    desiredRecordTypes: replica.awaitsReferenceTargets
                        ? nil
                        : settings.isSharedZone
                            ? [Model.cloudRecordType, ShareDetails.recordType] : [Model.cloudRecordType]),
                readAhead: settings.readsAhead)
        ]
    }

    private mutating func pageArrived(
        _ result: Result<ZoneChanges?, CloudError>, _ prepared: [Replica<Model>.Fetched?]
    ) -> [Action] {
        let page: ZoneChanges
        switch result {
        case .success(nil):
            return [.settleJournal] + fetchDone()
        case .success(let changes?):
            page = changes
        case .failure(let error) where isFeedRefusal(error):
            return [.settleJournal] + feedRefused(error)
        case .failure(let error) where error.code == .zoneNotFound:
            return [.settleJournal] + recreateZone(then: .afterFetch)
        case .failure(let error) where error.code == .changeTokenExpired && run?.seen == nil:
            guard settings.marksZone, replica.meta.zoneEpoch != nil else { return refetchWholeZone() }
            // The zone may have been deleted and created again by an engine of another record type.
            run?.awaiting = .markerCheck
            return [.readZoneMarker]
        case .failure(let error):
            return failed(error)
        }
        var seen = run?.seen
        var effects = replica.applyFetched(page.records, prepared, seen: &seen)
        if let seen, !page.moreComing { effects.append(replica.removeUnseen(seen)) }
        // An unchanged token (an idle poll) costs no journal write, nor does
        // a token that is all a page changed (this device's own write coming
        // back): it is written with the next change of the metadata, and a
        // restart before that only fetches again what the replica holds.
        if seen == nil && effects.journal.isEmpty {
            replica.advanceToken(to: page.syncToken)
        } else if (seen == nil || !page.moreComing) && replica.meta.syncToken != page.syncToken {
            effects.append(replica.updateMeta { $0.syncToken = page.syncToken })
        }
        let stalled = page.records.isEmpty && page.syncToken == run?.token
        run?.seen = seen
        run?.token = page.syncToken
        run?.madeProgress = true
        let actions: [Action] = [.persistBehind(effects)]
        if !page.moreComing || stalled { return actions + [.settleJournal] + fetchDone() }
        return actions + requestPage()
    }

    /// Fetches everything again; what the server no longer has is removed
    /// once the whole zone has been seen.
    private mutating func refetchWholeZone() -> [Action] {
        run?.seen = []
        run?.token = nil
        return [.publish(.fullRefetch)] + requestPage()
    }

    mutating func fetchDone() -> [Action] {
        run?.coversRequest = false
        run?.phase = .sendingAfterFetch
        guard !replica.meta.fetched else { return sendStep() }
        // The account's first complete fetch: from now on the replica shows the zone.
        return [
            .persist(replica.updateMeta { $0.fetched = true }), .publish(.firstFetchCompleted), .firstFetchCompleted,
        ] + sendStep()
    }
}

extension AccountStatus {
    /// Whether the server refused the account itself: signed out, refused
    /// credentials, or not allowed.
    var isAccountProblem: Bool {
        switch self {
        case .noAccount, .credentialsRefused, .restricted: true
        default: false
        }
    }
}
