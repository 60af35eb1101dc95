import CloudCodable
import Foundation

extension SyncEngine {
    /// What was sent for one record, to match the answer against.
    struct SentChange {
        var name: String
        var generation: Int
        var operation: RecordOperation
    }

    /// The outcome of handling one batch's answers.
    struct BatchOutcome {
        var journal = JournalBatch()
        var updated: [Model] = []
        var deleted: [String] = []
        var transient: CloudError?
        var zoneMissing = false
    }

    /// Sends pending changes in batches until none is left that can be sent.
    func sendPending() async throws {
        var batchSize = configuration.batchSize
        var backoff = Backoff(policy: configuration.retryPolicy)
        while true {
            let names = pending.keys.filter { refused[$0] == nil }.sorted().prefix(batchSize)
            guard !names.isEmpty else { return }
            let sent = names.map { name in
                SentChange(name: name, generation: pending[name]!.generation, operation: operation(for: name))
            }
            let results: [RecordResult]
            do {
                results = try await withRetries {
                    try await database.modifyRecords(sent.map(\.operation), zoneID: zoneID, atomic: false)
                }
            } catch let error as CloudError where error.code == .badRequest && sent.count > 1 {
                // Too much for one request: halve the batch and go on.
                batchSize = max(1, sent.count / 2)
                continue
            } catch let error as CloudError where error.code == .zoneNotFound {
                try await recreateZone()
                continue
            }
            guard results.count == sent.count else {
                throw CloudError(
                    .internalError, reason: "the server answered \(results.count) results for \(sent.count) operations")
            }
            var outcome = BatchOutcome()
            for (change, result) in zip(sent, results) {
                try await handle(result, for: change, into: &outcome)
            }
            try await commit(outcome.journal)
            publish(updated: outcome.updated, deleted: outcome.deleted)
            eventBroadcaster.yield(.pendingChanges(pending.count))
            if outcome.zoneMissing {
                try await recreateZone()
            } else if let transient = outcome.transient {
                guard backoff.canRetry else { throw transient }
                try await pause(&backoff, transient)
            }
        }
    }

    /// The operation that sends the pending change of `name`.
    private func operation(for name: String) -> RecordOperation {
        switch pending[name]!.kind {
        case .save(let record):
            // `replace` clears on the server the fields that became nil.
            return RecordOperation(record.changeTag == nil ? .create : .replace, record)
        case .delete(let baseTag):
            var record = Record(recordType: Model.cloudRecordType, recordName: name, zoneID: zoneID)
            guard let baseTag else { return RecordOperation(.forceDelete, record) }
            record.metadata = RecordMetadata(changeTag: baseTag, zoneID: zoneID)
            return RecordOperation(.delete, record)
        }
    }

    private func handle(_ result: RecordResult, for change: SentChange, into outcome: inout BatchOutcome) async throws {
        let name = change.name
        switch result {
        case .record(let record):
            try acknowledge(record, change, &outcome)
        case .deleted:
            acknowledgeDeletion(change, &outcome)
        case .failure(let error):
            switch error.code {
            case .conflict, .exists:
                var server = error.serverRecord
                if server == nil {
                    let found = try await withRetries {
                        try await database.lookupRecords([name], zoneID: zoneID, desiredKeys: nil)
                    }
                    server = found.first?.record
                }
                if let server {
                    try resolveConflict(name, server: server, into: &outcome)
                } else if change.operation.type.isDelete {
                    acknowledgeDeletion(change, &outcome)
                } else {
                    refuse(name, error)
                }
            case .notFound:
                if change.operation.type.isDelete {
                    acknowledgeDeletion(change, &outcome)
                } else {
                    try recreateRecord(name, &outcome)
                }
            case .zoneNotFound:
                outcome.zoneMissing = true
            default:
                if error.isTransient {
                    outcome.transient = error
                } else {
                    refuse(name, error)
                }
            }
        }
    }

    /// The server stored the record: it becomes the new ancestor, and the
    /// model comes back to the app with fresh metadata.
    private func acknowledge(_ record: Record, _ change: SentChange, _ outcome: inout BatchOutcome) throws {
        let name = change.name
        // Encoded first: a record the journal cannot hold changes nothing.
        let json = try WireFormat.encode(record)
        outcome.journal.set(JournalKeys.server(name), json)
        let model = try? decoder.decode(Model.self, from: record)
        serverVersions[name] = ServerVersion(json: json, metadata: record.metadata, model: model)
        conflictAttempts[name] = nil
        guard let current = pending[name] else { return }
        if current.generation == change.generation {
            clearPending(name)
            outcome.journal.remove(JournalKeys.save(name))
            outcome.journal.remove(JournalKeys.delete(name))
            if let model { outcome.updated.append(model) }
            return
        }
        // A newer local change waits: it now builds on this version.
        switch current.kind {
        case .save(var newer):
            newer.metadata = record.metadata
            outcome.journal.set(JournalKeys.save(name), try WireFormat.encode(newer))
            pending[name]?.kind = .save(newer)
            pendingModels[name]?.cloudMetadata = record.metadata
        case .delete:
            pending[name]?.kind = .delete(baseTag: record.changeTag)
            outcome.journal.set(JournalKeys.delete(name), DeleteDocument.json(baseTag: record.changeTag))
        }
    }

    private func acknowledgeDeletion(_ change: SentChange, _ outcome: inout BatchOutcome) {
        let name = change.name
        serverVersions[name] = nil
        outcome.journal.remove(JournalKeys.server(name))
        if pending[name]?.generation == change.generation {
            clearPending(name)
            outcome.journal.remove(JournalKeys.delete(name))
            outcome.journal.remove(JournalKeys.save(name))
            outcome.deleted.append(name)
        }
    }

    /// The record is gone from the server but this device still changes it:
    /// the local change wins and creates it again.
    private func recreateRecord(_ name: String, _ outcome: inout BatchOutcome) throws {
        serverVersions[name] = nil
        outcome.journal.remove(JournalKeys.server(name))
        guard case .save(var record)? = pending[name]?.kind else { return }
        record.metadata = nil
        pending[name]?.kind = .save(record)
        pendingModels[name]?.cloudMetadata = nil
        outcome.journal.set(JournalKeys.save(name), try WireFormat.encode(record))
    }

    /// Keeps the change in the journal and reports it; it is not sent again
    /// until the app changes the model again.
    func refuse(_ name: String, _ error: CloudError) {
        refused[name] = error
        eventBroadcaster.yield(.recordFailed(recordName: name, error: error))
    }
}
