import CloudCodable
import CloudProtocol

/// What carrying out one of the ``Replica``'s decisions takes: the journal
/// batch that makes it durable, the model changes to publish and the events
/// to report, in that order.
struct ReplicaEffects<Model: CloudCodable>: Sendable {
    var journal = JournalBatch()
    var updated: [Model] = []
    var deleted: [String] = []
    var events: [SyncEvent] = []

    /// Adds another decision's effects after these.
    mutating func append(_ other: ReplicaEffects) {
        journal.merge(other.journal)
        updated += other.updated
        deleted += other.deleted
        events += other.events
    }
}

/// The engine's records and every decision about them: a value whose
/// methods take what happened (a local upload or delete, an answer of the
/// server, a fetched page, the zone missing, the account changed) and
/// return what to do about it as ``ReplicaEffects``.
///
/// The actor around it (``SyncEngine``) only makes requests and carries the
/// effects out; nothing else writes a journal key. Every change of the state
/// is mirrored by the journal batch returned with it, so the journal
/// replays to the same state, but for a sync token that a page changing
/// nothing else moved on (``advanceToken(to:)``).
struct Replica<Model: CloudCodable>: Sendable {
    typealias Effects = ReplicaEffects<Model>

    /// What the replica needs to know of the engine's configuration.
    struct Settings: Sendable {
        var zoneID: ZoneID
        var encoder: RecordEncoder
        var maximumConflictAttempts: Int
        var earlierVersionLimit: Int
        /// The source of the write identifiers' random numbers, in 0..<1.
        var random: @Sendable () -> Double
        /// Whether an edit is sent as an `update` of the fields it changed
        /// (``SyncConfiguration/sendsFieldDeltas``) rather than a `replace`.
        var sendsFieldDeltas = true
        /// Whether the database clears the fields an `update` names
        /// (``CloudDatabase/supportsFieldClearing``); otherwise an edit that
        /// clears one is sent as a `replace`.
        var clearsFields = false
        /// How long a change refused for a reason that may pass waits
        /// before it is sent again (``SyncConfiguration/refusalRetryInterval``).
        var refusalRetryInterval: Duration = .seconds(300)
        /// The time on the engine's clock, since any fixed instant.
        var elapsed: @Sendable () -> Duration = { .zero }
        /// A record as the model reads it: its encrypted fields opened,
        /// or the reason one cannot be.
        var opening: @Sendable (Record) throws -> Record = { $0 }
    }

    let settings: Settings
    // The actor reads the state; only the replica's own methods (in these
    // files) change it, each with the journal batch that mirrors the change.
    var meta = EngineMeta()
    /// The last server version of each record.
    var server: [String: ServerVersion<Model>] = [:]
    /// Versions that later server versions replaced, newest first.
    var earlier: [String: [EarlierVersion]] = [:]
    var pending: [String: PendingChange] = [:]
    /// The models of pending saves, as the app handed them over (or as a merge made them).
    var pendingModels: [String: Model] = [:]
    /// Changes sent whose answer did not come, oldest first.
    var inDoubt: [String: [SentWrite]] = [:]
    /// Pending saves read from a format 2 journal, queued without a write
    /// identifier: stamped and written again before they are sent.
    var unstamped: Set<String> = []
    /// The format of the journal's metadata document (0: none yet).
    var journalFormat = 0
    /// Records the server refused: not sent again until changed locally, what
    /// refused them changes, or their retry is due (``refusalRetries``).
    var refused: [String: CloudError] = [:]
    /// When each refusal that may pass is tried again (``Settings/elapsed``);
    /// a refusal without one waits for a local change or for what refused it.
    var refusalRetries: [String: Duration] = [:]
    /// Records that did not decode as this model when the journal was
    /// written and do now (the app was updated): published by the next run.
    var revived: Set<String> = []
    var conflictAttempts: [String: Int] = [:]
    var generationCounter = 0
    /// The values of each record's local-only fields, which its records
    /// here never hold (see ``takingLocalFields(from:)``).
    var local: [String: RecordFields] = [:]
    let decoder = RecordDecoder()

    init(settings: Settings) {
        self.settings = settings
    }

    var zoneID: ZoneID { settings.zoneID }

    // MARK: Reading

    /// The model as this device knows it: the pending change, else the server's version.
    func model(named name: String) -> Model? {
        if let change = pending[name] {
            if case .delete = change.kind { return nil }
            return pendingModels[name]
        }
        return server[name]?.model
    }

    /// The model of the version with change tag `tag`, if this replica still has it.
    func model(named name: String, tag: String?) -> Model? {
        guard let tag else { return nil }
        if let version = server[name], version.metadata?.changeTag == tag { return version.model }
        guard let version = earlier[name]?.first(where: { $0.tag == tag }),
            let record = try? WireFormat.decodeRecord(from: version.json)
        else { return nil }
        return try? decoder.decode(Model.self, from: readable(record))
    }

    // MARK: Local changes

    /// A model the app handed over, encoded and checked.
    struct Upload {
        var name: String
        var record: Record
        var model: Model
        /// The values of the model's local-only fields, which `record` lacks.
        var local = RecordFields()
        /// The record is the version it edits, field for field: nothing changed.
        var unchanged = false
    }

    /// Encodes models for ``upload(_:)``; throws before anything changes.
    ///
    /// Each record is the edit of the version its model was based on, with
    /// the fields of that version the model does not declare: the size
    /// check guards the record as the server will hold it.
    func prepare(_ models: [Model]) throws -> [Upload] {
        var prepared: [Upload] = []
        prepared.reserveCapacity(models.count)
        for var model in models {
            var record = try settings.encoder.encode(model)
            let local = Self.takingLocalFields(from: &record)
            try checkReferences(of: record)
            record.zoneID = zoneID
            record.metadata?.zoneID = zoneID
            model.cloudMetadata = record.metadata
            let name = record.recordName
            var unchanged = false
            if let base = uploadBase(of: name, tag: record.changeTag) {
                record = self.record(record, editing: base)
                try settings.encoder.checkSize(of: record)
                unchanged = record.fields == base.record.fields && record.parent == base.record.parent
            }
            prepared.append(Upload(name: name, record: record, model: model, local: local, unchanged: unchanged))
        }
        return prepared
    }

    /// What an upload based on version `tag` edits: the change queued on
    /// that version, which may hold fields this model does not declare (an
    /// older version of the app queued it), or else that version itself.
    private func uploadBase(of name: String, tag: String?) -> EditBase? {
        if case .save(let queued)? = pending[name]?.kind, queued.changeTag == tag {
            return EditBase(record: queued, model: pendingModels[name])
        }
        return editBase(of: name, tag: tag)
    }

    /// The app uploaded models. Each is an edit of the version its metadata
    /// names: when the replica holds a newer one (a fetch brought another
    /// device's edit, or a local change is queued on another version), the
    /// conflict is known now and is resolved against that version as the
    /// ancestor. A model based on the same version as the queued change
    /// replaces it, so that undoing an edit in a later upload stays undone.
    mutating func upload(_ uploads: [Upload]) -> Effects {
        var effects = Effects()
        for upload in uploads {
            let name = upload.name
            referenceTargetAppeared(name, &effects)
            let localChanged = setLocal(name, upload.local, &effects)
            let base = upload.record.changeTag
            if case .save(let queued)? = pending[name]?.kind, let queuedModel = pendingModels[name] {
                if base == queued.changeTag {
                    setPending(name, .save(upload.record), model: upload.model, &effects)
                } else {
                    let newer = EditBase(record: queued, model: queuedModel)
                    merge(upload, into: newer, keepingPending: true, &effects)
                }
            } else if let version = server[name], let serverModel = version.model,
                version.metadata?.changeTag != base, let record = try? version.record()
            {
                merge(upload, into: EditBase(record: record, model: serverModel), keepingPending: false, &effects)
            } else if pending[name] == nil, upload.unchanged {
                // Nothing changed: sending it would show as a change on every other device.
                if localChanged, let model = server[name]?.model { effects.updated.append(model) }
                continue
            } else {
                setPending(name, .save(upload.record), model: upload.model, &effects)
            }
        }
        return effects
    }

    /// Resolves an upload against a newer version known here: the queued
    /// change (`keepingPending`) or the server's version.
    private mutating func merge(
        _ upload: Upload, into newer: EditBase, keepingPending: Bool, _ effects: inout Effects
    ) {
        let name = upload.name
        guard let newerModel = newer.model else {
            preconditionFailure("Internal inconsistency: a merge into a version without a model")
        }
        let ancestor = model(named: name, tag: upload.record.changeTag)
        if ancestor == nil { effects.events.append(.mergedWithoutAncestor(recordName: name)) }
        guard var resolved = Model.resolveConflict(client: upload.model, server: newerModel, ancestor: ancestor)
        else {
            effects.events.append(.conflict(recordName: name, resolution: .keptServerVersion))
            if !keepingPending, pending[name] != nil {
                clearPending(name, &effects)
                effects.updated.append(newerModel)
            }
            return
        }
        let record = encodeResolved(&resolved, client: upload.model, editing: newer, &effects)
        setPending(name, .save(record), model: resolved, &effects)
        effects.events.append(.conflict(recordName: name, resolution: .resolved))
    }

    /// The record of a resolver's value, as an edit of the version `base`
    /// it was resolved against: the fields the model does not declare stay
    /// as that version has them. A value that does not encode (over the
    /// size limit, say) gives way to the client's own, which did: the
    /// change is never dropped for it. The value's local-only fields are
    /// kept as the record's.
    mutating func encodeResolved(
        _ resolved: inout Model, client: Model, editing base: EditBase, _ effects: inout Effects
    ) -> Record {
        let metadata = base.record.metadata
        resolved.cloudMetadata = metadata
        var record: Record
        if let encoded = try? settings.encoder.encode(resolved) {
            record = encoded
        } else {
            resolved = client
            resolved.cloudMetadata = metadata
            // A model queued by an earlier version of the app may not encode
            // as this one; the base then stays as it is rather than lose a field.
            guard let encoded = try? limitlessEncoder.encode(resolved) else { return base.record }
            record = encoded
        }
        setLocal(base.record.recordName, Self.takingLocalFields(from: &record), &effects)
        record.zoneID = zoneID
        record.metadata = metadata
        return self.record(record, editing: base)
    }

    /// The app deleted models. Deleting a model that never reached the
    /// server just cancels its upload; one whose create was sent and not
    /// answered is deleted on the server whatever it holds, since the
    /// create may have arrived.
    mutating func delete(_ names: [String]) -> Effects {
        var effects = Effects()
        for name in names {
            // The device's own values of a model go with it.
            removeLocal(name, &effects)
            let knownTag = server[name]?.metadata?.changeTag ?? pending[name]?.baseTag
            if server[name] == nil, knownTag == nil, pending[name] != nil, inDoubt[name] == nil {
                clearPending(name, &effects)
            } else {
                setPending(name, .delete(baseTag: knownTag), model: nil, &effects)
            }
        }
        return effects
    }

    // MARK: The state and its journal keys

    /// Queues a local change; it replaces any earlier one of the record.
    /// A change made by a conflict's resolution keeps the record's count
    /// of conflicts (`resettingConflicts: false`), so that one that keeps
    /// conflicting is held back.
    mutating func setPending(
        _ name: String, _ kind: PendingChange.Kind, model: Model?, resettingConflicts: Bool = true,
        _ effects: inout Effects
    ) {
        generationCounter += 1
        pending[name] = PendingChange(kind: stamped(name, kind), generation: generationCounter)
        pendingModels[name] = model
        forgetRefusal(name, &effects)
        if resettingConflicts { conflictAttempts[name] = nil }
        writePending(name, &effects)
    }

    /// A save with a new write identifier on top of its base version's, so
    /// that the write can be recognised on the server from the moment it is
    /// queued: sending it then needs no journal write of its own.
    private func stamped(_ name: String, _ kind: PendingChange.Kind) -> PendingChange.Kind {
        guard case .save(let record) = kind else { return kind }
        return .save(
            WriteLineage.stamped(
                record, identifier: WriteLineage.newIdentifier(settings.random),
                basedOn: lineage(of: name, tag: record.changeTag)))
    }

    /// Changes what a queued change is based on, keeping its generation. A
    /// save becomes another write, with an identifier of its own.
    mutating func rebasePending(_ name: String, on metadata: RecordMetadata?, _ effects: inout Effects) {
        guard let change = pending[name] else { return }
        switch change.kind {
        case .save(var record):
            record.metadata = metadata
            let kind = stamped(name, .save(record))
            pending[name]?.kind = kind
            pendingModels[name]?.cloudMetadata = metadata
        case .delete:
            pending[name]?.kind = .delete(baseTag: metadata?.changeTag)
        }
        writePending(name, &effects)
    }

    /// Journals the pending change, with the writes in doubt it does not
    /// stand for itself: a write that may have been sent stays in doubt in
    /// the journal once another change replaces it.
    mutating func writePending(_ name: String, _ effects: inout Effects) {
        if unstamped.remove(name) != nil { effects.journal.remove(JournalKeys.save(name)) }
        switch pending[name]?.kind {
        case .save(let record)?:
            // Records in the replica were written by the encoder or read
            // from the wire, so they always write again.
            guard let json = try? WireFormat.encode(record) else {
                preconditionFailure("Internal inconsistency: a queued record does not encode")
            }
            effects.journal.set(JournalKeys.write(name), json)
            effects.journal.remove(JournalKeys.delete(name))
            // An engine of an earlier format would not see `write/`: it must refuse the journal.
            if journalFormat < EngineMeta.format { writeMeta(&effects) }
        case .delete(let baseTag)?:
            effects.journal.set(JournalKeys.delete(name), DeleteDocument.json(baseTag: baseTag))
            effects.journal.remove(JournalKeys.write(name))
        case nil:
            effects.journal.remove(JournalKeys.write(name))
            effects.journal.remove(JournalKeys.delete(name))
        }
        if inDoubt[name] != nil { writeInDoubt(name, &effects) }
    }

    mutating func clearPending(_ name: String, _ effects: inout Effects) {
        pending[name] = nil
        pendingModels[name] = nil
        forgetRefusal(name, &effects)
        conflictAttempts[name] = nil
        writePending(name, &effects)
    }

    /// Makes `record` the record's server version; the one it replaces is
    /// kept as an earlier version. Returns the record as a model, or `nil`
    /// (and an event) when it does not decode.
    @discardableResult
    mutating func setServer(
        _ name: String, _ record: Record, json: [UInt8]? = nil, model decoded: Result<Model, any Error>? = nil,
        _ effects: inout Effects
    ) throws -> Model? {
        let json = try json ?? WireFormat.encode(record)
        // A model decoded before this point may carry local values that changed since.
        let prepared = Model.cloudLocalFields.isEmpty ? decoded : nil
        let result = prepared ?? Result { try decoder.decode(Model.self, from: readable(record)) }
        let wasUndecodable = server[name].map { $0.model == nil } ?? false
        let model: Model?
        switch result {
        case .success(let value):
            model = value
            if wasUndecodable { effects.journal.remove(JournalKeys.undecodable(name)) }
        case .failure(let error):
            model = nil
            // Each version is reported once: a version already held is never set again.
            if !wasUndecodable { effects.journal.set(JournalKeys.undecodable(name), Array("{}".utf8)) }
            effects.events.append(.undecodableRecord(recordName: name, reason: "\(error)"))
        }
        let replaced = server.updateValue(
            ServerVersion(json: json, metadata: record.metadata, model: model), forKey: name)
        effects.journal.set(JournalKeys.server(name), json)
        if let replaced { keepEarlier(name, replaced, replacedBy: record.changeTag, &effects) }
        return model
    }

    private mutating func keepEarlier(
        _ name: String, _ old: ServerVersion<Model>, replacedBy tag: String?, _ effects: inout Effects
    ) {
        guard settings.earlierVersionLimit > 0, let oldTag = old.metadata?.changeTag, oldTag != tag else { return }
        var versions = earlier[name] ?? []
        versions.removeAll { $0.tag == oldTag }
        versions.insert(EarlierVersion(tag: oldTag, json: old.json), at: 0)
        if versions.count > settings.earlierVersionLimit {
            versions.removeLast(versions.count - settings.earlierVersionLimit)
        }
        earlier[name] = versions
        effects.journal.set(JournalKeys.earlier(name), RecordListDocument.json(versions.map(\.json)))
    }

    /// The record is gone from the server, with what was kept of it.
    mutating func removeServer(_ name: String, _ effects: inout Effects) {
        if let removed = server.removeValue(forKey: name), removed.model == nil {
            effects.journal.remove(JournalKeys.undecodable(name))
        }
        effects.journal.remove(JournalKeys.server(name))
        if earlier.removeValue(forKey: name) != nil { effects.journal.remove(JournalKeys.earlier(name)) }
    }

    /// How many unanswered sends of one record are remembered: the first and
    /// the latest ones.
    static var inDoubtLimit: Int { 8 }

    /// Records that a change was sent, before it is: until it is answered
    /// it is in doubt. A change sent again is the same write.
    mutating func setInDoubt(_ name: String, _ write: SentWrite) {
        var writes = inDoubt[name] ?? []
        guard !writes.contains(where: { Self.sameWrite($0, write) }) else { return }
        writes.append(write)
        // The first send is the likeliest to have arrived (a create sent
        // again after it is refused as existing), so it is kept with the latest.
        if writes.count > Self.inDoubtLimit { writes.remove(at: 1) }
        inDoubt[name] = writes
    }

    /// Whether two sends are one write: the same save identifier, or both deletions.
    static func sameWrite(_ left: SentWrite, _ right: SentWrite) -> Bool {
        switch (left.kind, right.kind) {
        case (.delete, .delete): return true
        case (.save(let one), .save(let other)):
            guard let identifier = WriteLineage.identifiers(of: one).first else { return false }
            return identifier == WriteLineage.identifiers(of: other).first
        default: return false
        }
    }

    /// Journals the writes in doubt of the record, but for the pending
    /// change, whose own entry counts as in doubt already (unless refused).
    mutating func writeInDoubt(_ name: String, _ effects: inout Effects) {
        var current: SentWrite?
        if let change = pending[name], !unstamped.contains(name), refused[name] == nil {
            switch change.kind {
            case .save(let record): current = SentWrite(kind: .save(record), generation: change.generation)
            case .delete: current = SentWrite(kind: .delete, generation: change.generation)
            }
        }
        var saves: [[UInt8]] = []
        var deletes = false
        for write in inDoubt[name] ?? [] where current.map({ !Self.sameWrite($0, write) }) ?? true {
            switch write.kind {
            case .save(let record):
                guard let json = try? WireFormat.encode(record) else {
                    preconditionFailure("Internal inconsistency: a queued record does not encode")
                }
                saves.append(json)
            case .delete:
                deletes = true
            }
        }
        if saves.isEmpty {
            effects.journal.remove(JournalKeys.sent(name))
        } else {
            effects.journal.set(JournalKeys.sent(name), RecordListDocument.json(saves))
        }
        if deletes {
            effects.journal.set(JournalKeys.sentDelete(name), Array("{}".utf8))
        } else {
            effects.journal.remove(JournalKeys.sentDelete(name))
        }
    }

    /// The save in doubt that the server's record is: this device's own
    /// write, come back (by its write identifier, or by its content).
    func ownWrite(_ name: String, in record: Record) -> SentWrite? {
        let lineage = WriteLineage.identifiers(of: record)
        return inDoubt[name]?.last { write in
            guard case .save(let sent) = write.kind else { return false }
            if let identifier = WriteLineage.identifiers(of: sent).first, identifier == lineage.first { return true }
            return Self.sameContent(sent, record)
        }
    }

    /// The save in doubt that the server's record grew from: it arrived, and
    /// another device changed the record since.
    func writeGrownFrom(_ name: String, in record: Record) -> SentWrite? {
        let lineage = Set(WriteLineage.identifiers(of: record).dropFirst())
        guard !lineage.isEmpty else { return nil }
        return inDoubt[name]?.last { write in
            guard case .save(let sent) = write.kind, let identifier = WriteLineage.identifiers(of: sent).first else {
                return false
            }
            return lineage.contains(identifier)
        }
    }

    /// Whether the server's record holds what this device sent.
    static func sameContent(_ sent: Record, _ stored: Record) -> Bool {
        WriteLineage.sameContent(sent, stored)
    }

    /// The write identifiers of the version with change tag `tag`.
    func lineage(of name: String, tag: String?) -> [String] {
        guard let tag else { return [] }
        let json: [UInt8]?
        if let version = server[name], version.metadata?.changeTag == tag {
            json = version.json
        } else {
            json = earlier[name]?.first(where: { $0.tag == tag })?.json
        }
        guard let json, let record = try? WireFormat.decodeRecord(from: json) else { return [] }
        return WriteLineage.identifiers(of: record)
    }

    /// The changes sent for the record were answered, or cannot matter any more.
    mutating func settle(_ name: String, _ effects: inout Effects) {
        guard inDoubt.removeValue(forKey: name) != nil else { return }
        effects.journal.remove(JournalKeys.sent(name))
        effects.journal.remove(JournalKeys.sentDelete(name))
    }

    /// The server refused a send of the pending change. That proves only
    /// that this send did nothing: an earlier send of the same write, or of
    /// an earlier one, whose answer was lost may have arrived (a participant
    /// could write then and cannot now). Every write in doubt stays, so that
    /// a version grown from one is still recognised, and merged against, as
    /// this device's own; the pending change's own write is journaled with
    /// them, as a refused change is not put in doubt again on reload.
    mutating func keepInDoubtAfterRefusal(_ name: String, _ effects: inout Effects) {
        guard inDoubt[name] != nil else { return }
        writeInDoubt(name, &effects)
    }

    /// Whether the pending change itself was sent without an answer (not
    /// only an earlier write of the record). A refused change is not: its
    /// last send did nothing, and giving it up settles its earlier sends.
    func pendingIsInDoubt(_ name: String) -> Bool {
        guard refused[name] == nil, let generation = pending[name]?.generation else { return false }
        return inDoubt[name]?.contains { $0.generation == generation } ?? false
    }

    /// The server (or the engine) refused the pending change. With
    /// `retryingLater`, it is sent again once the retry interval has passed
    /// (a production schema that lacks a field until the operator deploys
    /// it); otherwise it waits for a local change or for what refused it.
    /// The same refusal again is not reported again.
    mutating func refuse(_ name: String, _ error: CloudError, retryingLater: Bool = false, _ effects: inout Effects) {
        let earlier = refused.updateValue(error, forKey: name)
        refusalRetries[name] = retryingLater ? settings.elapsed() + settings.refusalRetryInterval : nil
        if Self.isLasting(error) {
            effects.journal.set(JournalKeys.refused(name), RefusedDocument.json(error))
        }
        guard earlier?.code != error.code || earlier?.reason != error.reason else { return }
        effects.events.append(.recordFailed(recordName: name, error: error))
    }

    /// Whether the pending change may be sent now: it is not refused, or
    /// its refusal's retry is due.
    func maySend(_ name: String, at now: Duration) -> Bool {
        guard refused[name] != nil else { return true }
        guard let due = refusalRetries[name] else { return false }
        return now >= due
    }

    /// When the earliest retry of a refused change still pending is due.
    var nextRefusalRetry: Duration? {
        refusalRetries.filter { pending[$0.key] != nil }.values.min()
    }

    /// The change may be sent again: it changed, went, or what refused it did.
    mutating func forgetRefusal(_ name: String, _ effects: inout Effects) {
        refusalRetries[name] = nil
        guard refused.removeValue(forKey: name) != nil else { return }
        effects.journal.remove(JournalKeys.refused(name))
    }

    /// Counts one more conflict of the record; `false` once it met more than the configured number in a row.
    mutating func countConflict(_ name: String) -> Bool {
        let attempts = (conflictAttempts[name] ?? 0) + 1
        conflictAttempts[name] = attempts
        return attempts <= settings.maximumConflictAttempts
    }

    mutating func resetConflicts(_ name: String) {
        conflictAttempts[name] = nil
    }

    /// Publishes the records that decode now and did not when the journal
    /// was written: the app was updated to a model that reads them.
    mutating func publishRevived() -> Effects {
        var effects = Effects()
        for name in revived.sorted() {
            effects.journal.remove(JournalKeys.undecodable(name))
            if let model = model(named: name) { effects.updated.append(model) }
        }
        revived = []
        return effects
    }

    // MARK: The engine's metadata

    mutating func updateMeta(_ change: (inout EngineMeta) -> Void) -> Effects {
        change(&meta)
        var effects = Effects()
        writeMeta(&effects)
        return effects
    }

    /// Moves the sync token on in memory only: the journal's older token
    /// fetches again versions the replica holds already, which change nothing.
    mutating func advanceToken(to token: SyncToken) {
        meta.syncToken = token
    }

    private mutating func writeMeta(_ effects: inout Effects) {
        meta.format = EngineMeta.format
        journalFormat = EngineMeta.format
        effects.journal.set(JournalKeys.meta, meta.json())
    }
}
