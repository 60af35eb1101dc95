import CloudCodable
import CloudProtocol

extension Replica {
    /// One change of a `records/modify` request, to match its answer against.
    struct SentChange: Sendable {
        var name: String
        var generation: Int
        var operation: RecordOperation
        /// The whole record of a save, of which the operation may carry
        /// only the changed fields: what is in doubt until answered.
        var record: Record?
    }

    /// What the answers to a request leave to do besides the effects.
    struct Answers {
        var effects = Effects()
        /// A record's transient failure: send again after a wait.
        var transient: CloudError?
        /// The zone is gone.
        var zoneMissing = false
        /// Conflicts whose answer did not carry the server's record.
        var lookups: [SentChange] = []
    }

    /// Whether a pending change waits that the server has not refused, or
    /// whose refusal's retry is due.
    var hasChangesToSend: Bool {
        let now = settings.elapsed()
        return pending.keys.contains { maySend($0, at: now) }
    }

    /// The next request: up to `limit` pending changes the server has not
    /// refused for good, as they stand now. A save is sent with the write
    /// identifier it was queued with; one queued by a format 2 journal gets
    /// one now.
    func nextBatch(limit: Int) -> [SentChange] {
        let now = settings.elapsed()
        return pending.keys.filter { maySend($0, at: now) }.sorted().prefix(limit).map { name in
            change(for: name, generation: pending[name]!.generation)
        }
    }

    private func change(for name: String, generation: Int) -> SentChange {
        switch pending[name]!.kind {
        case .save(var record):
            if unstamped.contains(name) {
                record = WriteLineage.stamped(
                    record, identifier: WriteLineage.newIdentifier(settings.random),
                    basedOn: lineage(of: name, tag: record.changeTag))
            }
            return SentChange(
                name: name, generation: generation, operation: saveOperation(record, name: name), record: record)
        case .delete(let baseTag):
            var record = Record(recordType: Model.cloudRecordType, recordName: name, zoneID: zoneID)
            guard let baseTag else {
                return SentChange(name: name, generation: generation, operation: RecordOperation(.forceDelete, record))
            }
            record.metadata = RecordMetadata(changeTag: baseTag, zoneID: zoneID)
            return SentChange(name: name, generation: generation, operation: RecordOperation(.delete, record))
        }
    }

    /// The batch is about to be sent: each change is in doubt until
    /// answered. The journal holds each pending change as in doubt already,
    /// so this writes nothing, but for a save queued without an identifier:
    /// it is written again, stamped, before it leaves.
    mutating func send(_ batch: [SentChange]) -> Effects {
        var effects = Effects()
        for change in batch {
            let kind: SentWrite.Kind = change.record.map { .save($0) } ?? .delete
            if case .save(let record) = kind, unstamped.contains(change.name) {
                pending[change.name]?.kind = .save(record)
                writePending(change.name, &effects)
            }
            setInDoubt(change.name, SentWrite(kind: kind, generation: change.generation))
        }
        return effects
    }

    /// Applies the server's answers to a batch, one per change, in order.
    mutating func apply(_ results: [RecordResult], for batch: [SentChange]) -> Answers {
        var answers = Answers()
        for (change, result) in zip(batch, results) {
            do {
                try apply(result, for: change, &answers)
            } catch {
                // A server record the journal cannot hold: the change stays, reported.
                let reason = "the server's answer cannot be kept: \(error)"
                refuse(
                    change.name, CloudError(.internalError, reason: reason, recordName: change.name), &answers.effects)
            }
        }
        return answers
    }

    private mutating func apply(_ result: RecordResult, for change: SentChange, _ answers: inout Answers) throws {
        let name = change.name
        switch result {
        case .record(let record):
            try acknowledge(name, record, generation: change.generation, &answers.effects)
        case .deleted:
            acknowledgeDeletion(name, generation: change.generation, &answers.effects)
        case .failure(let error):
            switch error.code {
            case .conflict, .exists:
                if let server = error.serverRecord {
                    try conflict(name, server: server, &answers.effects)
                } else {
                    answers.lookups.append(change)
                }
            case .notFound:
                if change.operation.type.isDelete {
                    acknowledgeDeletion(name, generation: change.generation, &answers.effects)
                } else {
                    recreate(name, &answers.effects)
                }
            case .zoneNotFound:
                answers.zoneMissing = true
            case _ where error.isTransient:
                // Still in doubt: sent again after the wait.
                answers.transient = error
            default:
                refuse(name, error, retryingLater: !Self.isLasting(error), &answers.effects)
                keepInDoubtAfterRefusal(name, &answers.effects)
            }
        }
    }

    /// The server stored the record: it becomes the server version, and
    /// the local change it answers is done. A newer local change now builds
    /// on it.
    mutating func acknowledge(
        _ name: String, _ record: Record, generation: Int, json: [UInt8]? = nil,
        model decoded: Result<Model, any Error>? = nil, _ effects: inout Effects
    ) throws {
        settle(name, &effects)
        resetConflicts(name)
        referenceTargetAppeared(name, &effects)
        let model = try setServer(name, record, json: json, model: decoded, &effects)
        guard let current = pending[name] else { return }
        if current.generation == generation {
            clearPending(name, &effects)
            if let model { effects.updated.append(model) }
        } else {
            rebasePending(name, on: record.metadata, &effects)
        }
    }

    /// The record is deleted on the server: the deletion sent is done.
    mutating func acknowledgeDeletion(_ name: String, generation: Int, _ effects: inout Effects) {
        settle(name, &effects)
        removeServer(name, &effects)
        guard let current = pending[name] else { return }
        if current.generation == generation {
            clearPending(name, &effects)
            effects.deleted.append(name)
        } else {
            // A newer local change creates the record again.
            rebasePending(name, on: nil, &effects)
        }
    }

    /// The record is gone from the server but this device still changes
    /// it: the local change wins and creates it again.
    mutating func recreate(_ name: String, _ effects: inout Effects) {
        settle(name, &effects)
        removeServer(name, &effects)
        if case .save? = pending[name]?.kind { rebasePending(name, on: nil, &effects) }
    }

    /// The server holds another version than the local change was based on.
    ///
    /// When it is the very write this device sent and never heard back
    /// about, it is an acknowledgement. Otherwise the model's resolver
    /// decides, with the version the local change was based on as the
    /// ancestor; a record that keeps conflicting is held back and reported.
    mutating func conflict(_ name: String, server record: Record, _ effects: inout Effects) throws {
        if let own = ownWrite(name, in: record) {
            try acknowledge(name, record, generation: own.generation, &effects)
            return
        }
        let ancestor = conflictAncestor(name, server: record)
        // A create whose answer was lost has no base tag: the write it sent,
        // which the server's version grew from, is the base of what was queued since.
        let queuedBase =
            pending[name].flatMap { editBase(of: name, tag: $0.baseTag)?.record } ?? sentCreate(name, grownInto: record)
        settle(name, &effects)
        guard let serverModel = try setServer(name, record, &effects) else {
            let reason = "the server's version does not decode as \(Model.self)"
            refuse(name, CloudError(.conflict, reason: reason, recordName: name), &effects)
            return
        }
        guard countConflict(name) else {
            let reason = "still conflicting after \(settings.maximumConflictAttempts) resolutions"
            refuse(name, CloudError(.conflict, reason: reason, recordName: name), &effects)
            return
        }
        guard let change = pending[name] else { return }
        let client: Model
        switch change.kind {
        case .save:
            guard let model = pendingModels[name] else { return }
            client = model
        case .delete:
            // Whether the local intent (the model as it was) still stands.
            client = ancestor ?? serverModel
        }
        if ancestor == nil { effects.events.append(.mergedWithoutAncestor(recordName: name)) }
        guard var resolved = Model.resolveConflict(client: client, server: serverModel, ancestor: ancestor) else {
            clearPending(name, &effects)
            effects.updated.append(serverModel)
            effects.events.append(.conflict(recordName: name, resolution: .keptServerVersion))
            return
        }
        if case .delete = change.kind {
            setPending(name, .delete(baseTag: record.changeTag), model: nil, resettingConflicts: false, &effects)
        } else {
            var merged = encodeResolved(
                &resolved, client: client, editing: EditBase(record: record, model: serverModel), &effects)
            if case .save(let queued) = change.kind {
                merged = spelledAsQueued(
                    merged, resolved: resolved, client: client, queued: queued, server: serverModel)
                if let queuedBase {
                    merged = keepingQueuedEdits(
                        merged, queued: queued, base: queuedBase, server: record, resolved: resolved)
                }
            }
            setPending(name, .save(merged), model: resolved, resettingConflicts: false, &effects)
        }
        effects.events.append(.conflict(recordName: name, resolution: .resolved))
    }

    /// The version the local change of a conflict was based on.
    ///
    /// A write whose answer was lost may have arrived, and the server's
    /// version grown from it since: then that write is the ancestor.
    /// Otherwise it is the version the change names. For a record written
    /// without a lineage (by another client), a create that may have
    /// arrived is a better ancestor than none.
    private func conflictAncestor(_ name: String, server record: Record) -> Model? {
        if let grown = writeGrownFrom(name, in: record), case .save(let sent) = grown.kind {
            return try? decoder.decode(Model.self, from: readable(sent))
        }
        let baseTag = pending[name]?.baseTag
        if let base = model(named: name, tag: baseTag) { return base }
        if baseTag == nil, WriteLineage.identifiers(of: record).isEmpty { return lastSentModel(name) }
        return nil
    }

    /// The create in doubt the server's record grew from, when the pending
    /// change has no base tag (it was queued on that create).
    private func sentCreate(_ name: String, grownInto record: Record) -> Record? {
        guard let change = pending[name], change.baseTag == nil,
            let grown = writeGrownFrom(name, in: record), case .save(let sent) = grown.kind
        else { return nil }
        return sent
    }

    /// The model of the last save in doubt of the record, if any.
    private func lastSentModel(_ name: String) -> Model? {
        for write in (inDoubt[name] ?? []).reversed() {
            if case .save(let record) = write.kind { return try? decoder.decode(Model.self, from: readable(record)) }
        }
        return nil
    }
}

extension Replica {
    /// The answer to the lookup made for a conflict that came without the
    /// server's record: `found` is the record, or `nil` when it is gone.
    mutating func lookedUp(_ change: SentChange, found: Record?) -> Effects {
        var effects = Effects()
        let name = change.name
        if let found {
            do {
                try conflict(name, server: found, &effects)
            } catch {
                let reason = "the server's record cannot be kept: \(error)"
                refuse(name, CloudError(.internalError, reason: reason, recordName: name), &effects)
            }
        } else if change.operation.type.isDelete {
            acknowledgeDeletion(name, generation: change.generation, &effects)
        } else {
            let reason = "the server reported a conflict but has no such record"
            refuse(name, CloudError(.conflict, reason: reason, recordName: name), &effects)
        }
        return effects
    }
}
