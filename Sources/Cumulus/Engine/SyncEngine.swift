import CloudCodable
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
    /// The zone of the private database this engine syncs.
    public nonisolated let zoneID: ZoneID
    let journal: Journal
    let encoder: RecordEncoder
    let decoder = RecordDecoder()

    // The replica and the pending changes, mirrored in the journal.
    var meta: EngineMeta
    /// The last server version of each record: the ancestor of merges.
    var serverVersions: [String: ServerVersion<Model>] = [:]
    var pending: [String: PendingChange] = [:]
    /// The models of pending saves, as the app handed them over.
    var pendingModels: [String: Model] = [:]
    var generationCounter = 0
    var conflictAttempts: [String: Int] = [:]
    /// Records the server refused for good, not sent again until changed locally.
    var refused: [String: CloudError] = [:]

    let changeBroadcaster = Broadcaster<ModelChange<Model>>()
    let statusBroadcaster = Broadcaster<AccountStatus>(replaysLatest: true)
    let eventBroadcaster = Broadcaster<SyncEvent>()
    var lastStatus: AccountStatus?

    var currentRun: Task<Void, any Error>?
    var rerunRequested = false
    var backgroundTasks: [Task<Void, Never>] = []

    /// Opens the engine whose journal lives in `directory` (created if
    /// missing) and, with automatic sync, starts syncing.
    ///
    /// - Throws: ``JournalError`` when the journal is damaged; the files
    ///   are left as they were.
    public init(database: any CloudDatabase, directory: URL, configuration: SyncConfiguration = .init())
        async throws
    {
        self.database = database
        self.configuration = configuration
        let zoneID = ZoneID(zoneName: configuration.zoneName ?? Model.cloudRecordType)
        self.zoneID = zoneID
        encoder = RecordEncoder(sizeLimit: configuration.sizeLimit, zoneID: zoneID)
        journal = try Journal(directory: directory)
        meta = EngineMeta()
        try await load(journal.takeLoadedDocuments())
        // Only now that the documents are accepted may opening change the files.
        try journal.finishOpening()
        if configuration.automaticSync { startAutomaticSync() }
    }

    deinit {
        for task in backgroundTasks { task.cancel() }
        changeBroadcaster.finish()
        statusBroadcaster.finish()
        eventBroadcaster.finish()
    }

    // MARK: Streams

    /// Confirmed changes to models: each read is a new subscriber that sees
    /// every change from then on.
    public nonisolated var changes: AsyncStream<ModelChange<Model>> { changeBroadcaster.subscribe() }

    /// The account's status: each read is a new subscriber that first gets
    /// the latest known status, then every change.
    public nonisolated var accountStatus: AsyncStream<AccountStatus> { statusBroadcaster.subscribe() }

    /// What the engine is doing: each read is a new subscriber.
    public nonisolated var events: AsyncStream<SyncEvent> { eventBroadcaster.subscribe() }

    // MARK: The local replica

    /// Every model as this device knows it: local changes not yet sent
    /// included, local deletions excluded. Ordered by identifier.
    public var models: [Model] {
        let capacity = serverVersions.count + pendingModels.count
        var found: [Model] = []
        found.reserveCapacity(capacity)
        // Names and positions are sorted rather than (name, model) pairs:
        // inside the generic engine, every move of a pair goes through the
        // model type's value witnesses, which made the sort about five
        // sixths of what this cost on a large replica.
        var order: [(name: String, position: Int)] = []
        order.reserveCapacity(capacity)
        for (name, version) in serverVersions where pending[name] == nil {
            if let model = version.model {
                order.append((name, found.count))
                found.append(model)
            }
        }
        for (name, model) in pendingModels {
            order.append((name, found.count))
            found.append(model)
        }
        order.sort { $0.name < $1.name }
        return order.map { found[$0.position] }
    }

    /// The model with this identifier as this device knows it, or `nil`.
    public func model(withIdentifier identifier: String) -> Model? {
        if let change = pending[identifier] {
            if case .delete = change.kind { return nil }
            return pendingModels[identifier]
        }
        return serverVersions[identifier]?.model
    }

    /// The number of `fsync` calls the engine's journal has made since the
    /// engine was opened: how many durable writes its changes cost.
    public nonisolated var journalSyncCount: Int { journal.syncCount }

    /// The number of local changes the server has not acknowledged.
    public var pendingChangeCount: Int { pending.count }

    /// The identifiers of records the server refused for good, with why.
    /// They stay in the journal until the app uploads or deletes them again.
    public var refusedChanges: [String: CloudError] { refused }

    // MARK: Local changes

    /// Queues one model for upload; see ``upload(_:)-(_:[Model])``.
    public func upload(_ model: Model) async throws {
        try await upload([model])
    }

    /// Queues models for upload and returns once the change is durable in
    /// the journal. A later upload of the same model before it was sent
    /// replaces the queued one.
    ///
    /// - Throws: ``RecordTooLargeError`` for a record over the size limit,
    ///   or an `EncodingError`, before anything is queued;
    ///   ``JournalError`` when the journal cannot be written.
    public func upload(_ models: [Model]) async throws {
        var prepared: [(name: String, record: Record, model: Model)] = []
        prepared.reserveCapacity(models.count)
        for var model in models {
            var record = try encoder.encode(model)
            if record.metadata == nil { record.metadata = serverVersions[record.recordName]?.metadata }
            record.zoneID = zoneID
            record.metadata?.zoneID = zoneID
            model.cloudMetadata = record.metadata
            prepared.append((record.recordName, record, model))
        }
        guard !prepared.isEmpty else { return }
        var batch = JournalBatch()
        for item in prepared {
            batch.set(JournalKeys.save(item.name), try WireFormat.encode(item.record))
            batch.remove(JournalKeys.delete(item.name))
        }
        // State changes and the journal's queue follow call order; the
        // caller returns only once the batch is on disk.
        let ticket = journal.enqueue(batch)
        for item in prepared {
            setPending(item.name, .save(item.record))
            pendingModels[item.name] = item.model
        }
        try await ticket.durable()
        eventBroadcaster.yield(.pendingChanges(pending.count))
        requestAutomaticSync()
    }

    /// Queues models for deletion; see ``delete(identifiers:)``.
    public func delete(_ models: [Model]) async throws {
        try await delete(identifiers: models.map(\.cloudIdentifier))
    }

    /// Queues the models with these identifiers for deletion and returns
    /// once that is durable. Deleting a model that was never sent just
    /// cancels its queued upload.
    public func delete(identifiers: [String]) async throws {
        guard !identifiers.isEmpty else { return }
        var batch = JournalBatch()
        var actions: [(String, PendingChange.Kind?)] = []
        for name in identifiers {
            let knownTag = serverVersions[name]?.metadata?.changeTag ?? pendingSaveBaseTag(name)
            batch.remove(JournalKeys.save(name))
            if serverVersions[name] == nil, knownTag == nil, pending[name] != nil {
                // Never reached the server: cancelling the upload is the deletion.
                batch.remove(JournalKeys.delete(name))
                actions.append((name, nil))
            } else {
                batch.set(JournalKeys.delete(name), DeleteDocument.json(baseTag: knownTag))
                actions.append((name, .delete(baseTag: knownTag)))
            }
        }
        let ticket = journal.enqueue(batch)
        for (name, kind) in actions {
            pendingModels[name] = nil
            if let kind { setPending(name, kind) } else { clearPending(name) }
        }
        try await ticket.durable()
        eventBroadcaster.yield(.pendingChanges(pending.count))
        requestAutomaticSync()
    }

    func setPending(_ name: String, _ kind: PendingChange.Kind) {
        generationCounter += 1
        pending[name] = PendingChange(kind: kind, generation: generationCounter)
        refused[name] = nil
        conflictAttempts[name] = nil
    }

    func clearPending(_ name: String) {
        pending[name] = nil
        pendingModels[name] = nil
        refused[name] = nil
        conflictAttempts[name] = nil
    }

    func pendingSaveBaseTag(_ name: String) -> String? {
        if case .save(let record)? = pending[name]?.kind { return record.changeTag }
        return nil
    }

    // MARK: Loading

    /// Rebuilds the replica and the pending changes from the journal's
    /// documents. Records and models are decoded on every core: this is
    /// what re-opening a large replica costs.
    private func load(_ documents: [String: [UInt8]]) async throws {
        var serverDocuments: [(key: String, json: [UInt8])] = []
        var saveDocuments: [(key: String, json: [UInt8])] = []
        serverDocuments.reserveCapacity(documents.count)
        for (key, value) in documents {
            if key == JournalKeys.meta {
                meta = try EngineMeta(json: value)
            } else if key.hasPrefix(JournalKeys.serverPrefix) {
                serverDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.savePrefix) {
                saveDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.deletePrefix) {
                let name = String(key.dropFirst(JournalKeys.deletePrefix.count))
                generationCounter += 1
                pending[name] = PendingChange(
                    kind: .delete(baseTag: try DeleteDocument.baseTag(value)), generation: generationCounter)
            }
        }

        // A server version that does not decode as a model stays in the
        // replica as a record (the sync reports it); a pending save was
        // written by this engine from a model, so it must decode. Records
        // are dropped as soon as their models are made, on the workers.
        let servers = try await parallelMap(serverDocuments, minimumCount: 4_096) { document in
            let record = try Self.journalRecord(document, prefix: JournalKeys.serverPrefix)
            let model = try? RecordDecoder().decode(Model.self, from: record)
            return (record.recordName, ServerVersion(json: document.json, metadata: record.metadata, model: model))
        }
        serverVersions.reserveCapacity(servers.count)
        for (name, version) in servers { serverVersions[name] = version }
        let saves = try await parallelMap(saveDocuments, minimumCount: 4_096) { document in
            let record = try Self.journalRecord(document, prefix: JournalKeys.savePrefix)
            return (record, try RecordDecoder().decode(Model.self, from: record))
        }
        for (record, model) in saves {
            generationCounter += 1
            pending[record.recordName] = PendingChange(kind: .save(record), generation: generationCounter)
            pendingModels[record.recordName] = model
        }
    }

    /// The record of a journal entry whose key is `prefix` and the record's
    /// name. An entry that holds another record than its key names is
    /// damage: two entries could then claim one record, and which of them
    /// won would depend on the order a dictionary happens to list them in.
    private static func journalRecord(_ document: (key: String, json: [UInt8]), prefix: String) throws -> Record {
        let record: Record
        do {
            record = try WireFormat.decodeRecord(from: document.json)
        } catch {
            throw JournalError(.corrupted, "the journal entry \(document.key) is not a record: \(error)")
        }
        // Compared as strings, as the engine's tables compare names: a name
        // the server spelled in another Unicode normalization is the same.
        guard document.key.dropFirst(prefix.count) == record.recordName else {
            throw JournalError(
                .corrupted, "the journal entry \(document.key) holds the record '\(record.recordName)'")
        }
        return record
    }
}
