import CloudCodable
import Foundation

extension SyncEngine {
    /// Fetches the zone's changes since the saved token, page by page. Each
    /// page's replica changes and its token are one journal write, so a
    /// crash can never skip changes.
    func fetchChanges() async throws {
        var token = meta.syncToken
        var refetching = false
        var seen = Set<String>()
        var backoff = Backoff(policy: configuration.retryPolicy)
        while true {
            let request = ZoneChangesRequest(
                zoneID: zoneID, syncToken: token, resultsLimit: configuration.fetchResultsLimit)
            let answers = try await withRetries { try await database.fetchZoneChanges([request]) }
            guard let answer = answers.first else { return }
            let page: ZoneChanges
            switch answer {
            case .success(let changes):
                page = changes
            case .failure(let error) where error.code == .zoneNotFound:
                try await recreateZone()
                return
            case .failure(let error) where error.code == .changeTokenExpired && !refetching:
                // Fetch everything again; what the server no longer has is
                // removed once the whole zone has been seen.
                refetching = true
                token = nil
                seen.removeAll()
                eventBroadcaster.yield(.fullRefetch)
                continue
            case .failure(let error) where error.isTransient:
                guard backoff.canRetry else { throw error }
                try await pause(&backoff, error)
                continue
            case .failure(let error):
                throw error
            }

            var batch = JournalBatch()
            var updated: [Model] = []
            var deleted: [String] = []
            for entry in page.records {
                switch entry {
                case .record(let record):
                    seen.insert(record.recordName)
                    try apply(fetched: record, &batch, &updated)
                case .deleted(let name, _):
                    try apply(deletion: name, &batch, &deleted)
                case .failure:
                    continue
                }
            }
            if refetching && !page.moreComing {
                for name in serverRecords.keys where !seen.contains(name) && pending[name] == nil {
                    try apply(deletion: name, &batch, &deleted)
                }
            }
            if !refetching || !page.moreComing {
                meta.syncToken = page.syncToken
                batch.set(JournalKeys.meta, meta.json())
            }
            try await commit(batch)
            publish(updated: updated, deleted: deleted)
            let stalled = page.records.isEmpty && page.syncToken == token
            token = page.syncToken
            if !page.moreComing || stalled { return }
        }
    }

    /// A record changed on the server. A local change waiting for it is
    /// kept: sending it meets the new version as a conflict, which the
    /// resolver settles against the ancestor this device last saw.
    private func apply(fetched record: Record, _ batch: inout JournalBatch, _ updated: inout [Model]) throws {
        let name = record.recordName
        if pending[name] != nil { return }
        serverRecords[name] = record
        batch.set(JournalKeys.server(name), try WireFormat.encode(record))
        do {
            let model = try decoder.decode(Model.self, from: record)
            serverModels[name] = model
            updated.append(model)
        } catch {
            serverModels[name] = nil
            eventBroadcaster.yield(.undecodableRecord(recordName: name, reason: "\(error)"))
        }
    }

    /// A record was deleted on the server. A local edit waiting for it wins
    /// and creates it again; a local deletion is done.
    private func apply(deletion name: String, _ batch: inout JournalBatch, _ deleted: inout [String]) throws {
        let wasKnown = serverRecords[name] != nil
        serverRecords[name] = nil
        serverModels[name] = nil
        batch.remove(JournalKeys.server(name))
        switch pending[name]?.kind {
        case .save(var record)?:
            record.metadata = nil
            pending[name]?.kind = .save(record)
            pendingModels[name]?.cloudMetadata = nil
            batch.set(JournalKeys.save(name), try WireFormat.encode(record))
        case .delete?:
            clearPending(name)
            batch.remove(JournalKeys.delete(name))
            deleted.append(name)
        case nil:
            if wasKnown { deleted.append(name) }
        }
    }
}
