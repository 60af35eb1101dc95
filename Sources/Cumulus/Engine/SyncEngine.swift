import CloudCodable
import CloudProtocol
import Foundation

/// Syncs the models of one type between this device and a cloud database.
///
/// ```swift
/// let engine = try await SyncEngine<Note>(database: database, directory: notesDirectory)
/// Task {
///     for await change in engine.changes {
///         switch change {
///         case .updated(let notes): show(notes)
///         case .deleted(let identifiers): remove(identifiers)
///         }
///     }
/// }
/// try await engine.upload(note)   // durable on return; sent in the background
/// ```
///
/// `upload` and `delete` return once the change is in the engine's journal
/// on disk: from then on it survives crashes, restarts and being offline.
/// The engine sends it when it can, retries what fails for passing
/// reasons, resolves conflicts with ``CloudCodable/resolveConflict(client:server:ancestor:)``,
/// and reports what needs the app through ``events``. An acknowledged
/// write comes back through ``changes`` with fresh metadata, and so do
/// changes made on other devices.
public actor SyncEngine<Model: CloudCodable> {
    let database: any CloudDatabase
    let configuration: SyncConfiguration
    /// The zone this engine syncs: of the signed-in user's private
    /// database, or, on the shared database, another user's zone, or the
    /// public database's default zone.
    public nonisolated let zoneID: ZoneID
    let journal: Journal
    /// The asset files: local copies waiting for upload, the download cache.
    let assets: AssetStore

    /// The replica and the run under way, and every decision about them.
    var session: SyncSession<Model>
    /// The records and the pending changes.
    var replica: Replica<Model> {
        get { session.replica }
        _modify { yield &session.replica }
    }

    let changeBroadcaster = Broadcaster<ModelChange<Model>>()
    /// Starts at `couldNotDetermine`, so that a reader gets a status at
    /// once, before the engine has checked the account.
    let statusBroadcaster = Broadcaster<AccountStatus>(
        replaysLatest: true, buffering: .newest, initial: .couldNotDetermine)
    let eventBroadcaster = Broadcaster<SyncEvent>()
    var lastStatus: AccountStatus? = .couldNotDetermine

    var currentRun: Task<Void, any Error>?
    var runCounter = 0
    /// Numbers the callers that wait on the engine.
    var callerCounter = 0
    /// Callers of `sync` with an attempt limit, waiting for a run under way.
    var releasableWaiters: [Int: CancellableWaiter] = [:]
    /// Callers of ``waitForFirstFetch()``.
    var firstFetchWaiters: [Int: CancellableWaiter] = [:]
    /// Journal writes a fetch queued without waiting for them.
    var writesBehind: [JournalTicket] = []
    /// The database bound to the last account check of the run.
    var boundDatabase: (any CloudDatabase)?
    /// The next page of a fetch, asked for while the last one is applied.
    var pageAhead: (request: ZoneChangesRequest, answer: Task<PageAnswer, any Error>)?
    var backgroundTasks: [Task<Void, Never>] = []
    /// Reads the engine's notification stream and names it on the engine's
    /// uploads: the server does not notify the engine of its own writes.
    let notificationListener = NotificationListener()
    /// Wakes an automatic engine when a refused change's retry is due.
    var refusalRetryTimer: Task<Void, Never>?
    /// The sleep of the run's retry wait, which a sign that the server is
    /// back (see ``serverAnswered()``) cancels to end the wait early.
    var retrySleep: Task<Void, any Error>?
    var isClosed = false
    /// A record as the model reads it (see ``Replica/Settings/opening``).
    let opening: @Sendable (Record) throws -> Record
    /// The model's encrypted fields, when it declares some.
    let encryptedFields: EncryptedFields?

    /// Opens the engine whose journal lives in `directory` (created if
    /// missing) and, with automatic sync, starts syncing.
    ///
    /// One engine at a time may use a directory: it holds an advisory lock
    /// on it until ``close()`` (or until it is released), and the operating
    /// system releases the lock if the process dies. An engine of this
    /// process that was let go without ``close()`` keeps the directory until
    /// its work in flight and its last journal write are done; a new engine
    /// waits up to 5 seconds for that.
    ///
    /// - Throws: ``JournalError`` when the journal is damaged (the files
    ///   are left as they were), or with code `inUse` when an engine of
    ///   another process has the directory open, or one of this process
    ///   still has it after 5 seconds; `CancellationError` when the task
    ///   is cancelled while waiting.
    public init(database: any CloudDatabase, directory: URL, configuration: SyncConfiguration = .init())
        async throws
    {
        var database = database
        var encrypted: EncryptedFields?
        if !Model.cloudEncryptedFields.isEmpty {
            guard let encryption = configuration.fieldEncryption else {
                throw FieldEncryptionError(
                    .notConfigured, field: Model.cloudEncryptedFields.sorted()[0],
                    "\(Model.self) declares encrypted fields; set SyncConfiguration.fieldEncryption")
            }
            let fields = EncryptedFields(
                recordType: Model.cloudRecordType, names: Model.cloudEncryptedFields, encryption: encryption)
            encrypted = fields
            database = EncryptedFieldsDatabase(database, fields: fields)
        }
        self.database = database
        self.configuration = configuration
        // A record kept sealed (its key was missing) is opened again each time it is read.
        let opening: @Sendable (Record) throws -> Record
        if let encrypted {
            opening = { try encrypted.openedOrThrow($0) }
        } else {
            opening = { $0 }
        }
        self.opening = opening
        encryptedFields = encrypted
        let isPublic = database.scope == .public
        let zoneID =
            isPublic
            ? ZoneID.defaultZone
            : ZoneID(
                zoneName: configuration.zoneName ?? Model.cloudRecordType, ownerRecordName: configuration.zoneOwner)
        self.zoneID = zoneID
        let settings = Replica<Model>.Settings(
            zoneID: zoneID, encoder: RecordEncoder(sizeLimit: configuration.sizeLimit, zoneID: zoneID),
            maximumConflictAttempts: configuration.maximumConflictAttempts,
            earlierVersionLimit: configuration.earlierVersionLimit, random: configuration.random,
            sendsFieldDeltas: configuration.sendsFieldDeltas, clearsFields: database.supportsFieldClearing,
            refusalRetryInterval: configuration.refusalRetryInterval,
            elapsed: Self.elapsedTime(on: configuration.clock),
            opening: opening)
        journal = try await Journal.open(directory: directory, waitingUpTo: configuration.directoryWait)
        assets = AssetStore(directory: directory, cacheLimit: configuration.assetCacheLimit)
        let sessionSettings = SyncSession<Model>.Settings(
            batchSize: configuration.batchSize, fetchResultsLimit: configuration.fetchResultsLimit,
            retryPolicy: configuration.retryPolicy, random: configuration.random,
            isSharedZone: database.scope == .shared,
            // Another user's zone, and the public one, are never created nor marked by this engine.
            marksZone: database.scope == .private && zoneID.zoneName != Model.cloudRecordType, isPublic: isPublic)
        session = SyncSession(replica: Replica(settings: settings), settings: sessionSettings)
        session = SyncSession(
            replica: try await Replica.load(journal.takeLoadedDocuments(), settings: settings),
            settings: sessionSettings)
        // Only now that the documents are accepted may opening change the files.
        try journal.finishOpening()
        if isPublic { startScanTimer() }
        retireAssetCopies()
        assets.removeAbandonedImports()
        if configuration.automaticSync { startAutomaticSync() }
    }

    /// The time `clock` has moved since now, read each time it is called.
    private static func elapsedTime<C: Clock<Duration>>(on clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    deinit {
        for task in backgroundTasks { task.cancel() }
        refusalRetryTimer?.cancel()
        currentRun?.cancel()
        pageAhead?.answer.cancel()
        changeBroadcaster.finish()
        statusBroadcaster.finish()
        eventBroadcaster.finish()
    }

    /// Stops the engine: cancels the sync under way and the timers and
    /// notification listeners of automatic sync, waits until the journal has
    /// written everything queued, and releases the directory, which can be
    /// opened again at once. Calls that change anything then throw
    /// ``SyncEngineError`` with code `closed`; closing again does nothing.
    ///
    /// A change that was being sent when the sync was cancelled is in doubt
    /// in the journal, and the next engine settles it against the server.
    public func close() async {
        guard !isClosed else { return }
        isClosed = true
        for task in backgroundTasks { task.cancel() }
        backgroundTasks.removeAll()
        refusalRetryTimer?.cancel()
        refusalRetryTimer = nil
        while let run = currentRun {
            run.cancel()
            _ = try? await run.value
            if currentRun == run { currentRun = nil }
        }
        releaseFirstFetchWaiters(.failure(SyncEngineError(.closed, "the engine was closed")))
        await journal.close()
        changeBroadcaster.finish()
        statusBroadcaster.finish()
        eventBroadcaster.finish()
    }

    func checkOpen() throws {
        guard !isClosed else { throw SyncEngineError(.closed, "the engine was closed") }
    }

    // MARK: Streams

    /// Confirmed changes to models: each read is a new subscriber that sees
    /// every change from then on, each once, in the order the engine applied
    /// them, and drops none (see ``ModelChanges``).
    public nonisolated var changes: ModelChanges<Model> { ModelChanges(changeBroadcaster.subscribe()) }

    /// The account's status: each read is a new subscriber that first gets
    /// the latest known status (``AccountStatus/couldNotDetermine`` until
    /// the engine has checked the account), then every change, keeping only
    /// the newest one unread (see ``AccountStatusUpdates``).
    public nonisolated var accountStatus: AccountStatusUpdates { AccountStatusUpdates(statusBroadcaster.subscribe()) }

    /// What the engine is doing: each read is a new subscriber that sees
    /// every event from then on and drops none (see ``SyncEvents``).
    public nonisolated var events: SyncEvents { SyncEvents(eventBroadcaster.subscribe()) }

    // MARK: The local replica

    /// Every model as this device knows it: local changes not yet sent
    /// included, local deletions excluded. Ordered by identifier.
    public var models: [Model] {
        let capacity = replica.server.count + replica.pendingModels.count
        var found: [Model] = []
        found.reserveCapacity(capacity)
        // Names and positions are sorted rather than (name, model) pairs:
        // inside the generic engine every move of a pair goes through the
        // model type's value witnesses.
        var order: [(name: String, position: Int)] = []
        order.reserveCapacity(capacity)
        for (name, version) in replica.server where replica.pending[name] == nil {
            if let model = version.model {
                order.append((name, found.count))
                found.append(model)
            }
        }
        for (name, model) in replica.pendingModels {
            order.append((name, found.count))
            found.append(model)
        }
        order.sort { $0.name < $1.name }
        return order.map { found[$0.position] }
    }

    /// The model with this identifier as this device knows it, or `nil`.
    ///
    /// Edit this copy (or the latest one from ``changes``): an upload is an
    /// edit of the version its ``CloudCodable/cloudMetadata`` names.
    public func model(withIdentifier identifier: String) -> Model? {
        replica.model(named: identifier)
    }

    /// The number of `fsync` calls the engine's journal has made since the
    /// engine was opened: how many durable writes its changes cost. For
    /// tests and benchmarks (`@_spi(Testing) import Cumulus`).
    @_spi(Testing) public nonisolated var journalSyncCount: Int { journal.syncCount }

    /// The number of local changes the server has not acknowledged.
    public var pendingChangeCount: Int { replica.pending.count }

    /// The identifiers of records the server refused, with why. Each change
    /// stays in the journal, is reported once through ``events``, and is
    /// sent again when the app uploads, deletes or discards it
    /// (``discardChanges(identifiers:)``) or when what refused it passes.
    /// A refusal for lack of permission (`ACCESS_DENIED`: in a shared zone,
    /// or another user's record of the public database) lasts across
    /// restarts, until the share changes, and so does one for a `VALIDATE`
    /// reference to a missing record (`VALIDATING_REFERENCE_ERROR`), until
    /// that record appears (fetched, or uploaded here). The others (a field
    /// the production schema does not have yet is `BAD_REQUEST`) are tried
    /// again by the first sync after
    /// ``SyncConfiguration/refusalRetryInterval``, and when the engine next opens.
    public var refusedChanges: [String: CloudError] { replica.refused }

    /// The identifiers of records this version of the model cannot decode
    /// (a newer version wrote a value of another type, or left out a field
    /// this one requires). Each is kept in the journal as the server wrote
    /// it, reported through ``events`` once for each version the server
    /// sends (not on every sync), never deleted or overwritten by
    /// the engine, and decoded when an engine whose model can is opened.
    public var undecodableRecords: Set<String> {
        Set(replica.server.compactMap { $0.value.model == nil ? $0.key : nil })
    }

    // MARK: Local changes

    /// Queues one model for upload; see ``upload(_:)-([Model])``.
    public func upload(_ model: Model) async throws {
        try await upload([model])
    }

    /// Queues models for upload and returns once the change is durable in
    /// the journal.
    ///
    /// Each model is an edit of the version its ``CloudCodable/cloudMetadata``
    /// names (`nil`: a new model). When this device already holds a newer
    /// version (another device's edit that a fetch brought, or a queued
    /// change based on another version), the model's resolver merges the
    /// two at once, with the version the model was based on as the
    /// ancestor. A later upload based on the same version as a queued
    /// change replaces it, so that an edit undone before it was sent stays
    /// undone. The bytes of each new ``CloudAsset`` are copied into the
    /// engine's directory, durably, before the change is queued.
    ///
    /// - Throws: ``RecordTooLargeError`` for a record over the size limit,
    ///   an `EncodingError`, or ``SyncEngineError`` with code
    ///   `crossZoneReference` for a reference to another zone, or
    ///   ``FieldEncryptionError`` for an asset or a reference in an
    ///   encrypted field, before anything is queued;
    ///   ``JournalError`` when the journal or an asset's copy cannot be
    ///   written; ``SyncEngineError`` when the engine was closed (or, with
    ///   code `assetUnavailable`, when an asset's file changed since the
    ///   asset was made from it).
    public func upload(_ models: [Model]) async throws {
        try checkOpen()
        let (uploads, newAssets) = try CloudAsset.collecting { try replica.prepare(models) }
        guard !uploads.isEmpty else { return }
        if let encryptedFields {
            for upload in uploads { try encryptedFields.checkSealable(upload.record) }
        }
        // The assets' bytes are durable before the saves that hold them.
        try assets.stage(newAssets)
        try await carryOut(replica.upload(uploads))
        eventBroadcaster.yield(.pendingChanges(replica.pending.count))
        requestAutomaticSync(fetching: false)
    }

    /// Queues models for deletion; see ``delete(identifiers:)``.
    public func delete(_ models: [Model]) async throws {
        try await delete(identifiers: models.map(\.cloudIdentifier))
    }

    /// Queues the models with these identifiers for deletion and returns
    /// once that is durable. Deleting a model that never reached the server
    /// just cancels its queued upload; one whose upload was sent and not
    /// answered is deleted on the server in case the upload arrived.
    ///
    /// - Throws: ``JournalError`` when the journal cannot be written;
    ///   ``SyncEngineError`` when the engine was closed.
    public func delete(identifiers: [String]) async throws {
        try checkOpen()
        guard !identifiers.isEmpty else { return }
        try await carryOut(replica.delete(identifiers))
        eventBroadcaster.yield(.pendingChanges(replica.pending.count))
        requestAutomaticSync(fetching: false)
    }

    // MARK: Carrying out

    /// Makes a decision's journal batch durable, then reports its events
    /// and publishes its changes. The replica changed before the call, in
    /// the same order as the journal writes the batches.
    func carryOut(_ effects: ReplicaEffects<Model>) async throws {
        if !effects.journal.isEmpty { try await journal.enqueue(effects.journal).durable() }
        report(effects)
    }

    /// Reports a decision's events and publishes its changes.
    func report(_ effects: ReplicaEffects<Model>) {
        for event in effects.events { eventBroadcaster.yield(event) }
        if !effects.updated.isEmpty { changeBroadcaster.yield(.updated(effects.updated)) }
        if !effects.deleted.isEmpty { changeBroadcaster.yield(.deleted(effects.deleted)) }
    }
}
