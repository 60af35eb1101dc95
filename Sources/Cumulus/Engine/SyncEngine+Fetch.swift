import CloudCodable
import Foundation

extension SyncEngine {
    /// Fetches the zone's changes since the saved token, page by page. Each
    /// page's replica changes and its token are one journal write, so a
    /// crash can never skip changes.
    ///
    /// Pages are written in order but not waited for one by one: the next
    /// page is fetched while the journal writes the last, and pages that
    /// queue up behind a write share its `fsync`. A crash loses at most the
    /// pages not yet written, whose token was not saved either, so they are
    /// fetched again. The fetch returns once every page is durable.
    func fetchChanges() async throws {
        var writes = PipelinedWrites(journal: journal)
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
            let prepared = try await Self.prepare(page.records)
            for (entry, decoded) in zip(page.records, prepared) {
                switch entry {
                case .record(let record):
                    // Only a refetch needs the names: hashing every one
                    // was about a tenth of a large fetch's CPU time.
                    if refetching { seen.insert(record.recordName) }
                    try apply(fetched: record, decoded, &batch, &updated)
                case .deleted(let name, _):
                    try apply(deletion: name, &batch, &deleted)
                case .failure:
                    continue
                }
            }
            if refetching && !page.moreComing {
                for name in serverVersions.keys where !seen.contains(name) && pending[name] == nil {
                    try apply(deletion: name, &batch, &deleted)
                }
            }
            if !refetching || !page.moreComing {
                meta.syncToken = page.syncToken
                batch.set(JournalKeys.meta, meta.json())
            }
            try await writes.enqueue(batch)
            publish(updated: updated, deleted: deleted)
            let stalled = page.records.isEmpty && page.syncToken == token
            token = page.syncToken
            if !page.moreComing || stalled {
                try await writes.finish()
                return
            }
        }
    }

    /// A record changed on the server. A local change waiting for it is
    /// kept: sending it meets the new version as a conflict, which the
    /// resolver settles against the ancestor this device last saw.
    private func apply(
        fetched record: Record, _ decoded: Decoded?, _ batch: inout JournalBatch, _ updated: inout [Model]
    ) throws {
        let name = record.recordName
        guard pending[name] == nil, let decoded else { return }
        let json = try decoded.json.get()
        batch.set(JournalKeys.server(name), json)
        var model: Model?
        switch decoded.model {
        case .success(let decodedModel):
            model = decodedModel
            updated.append(decodedModel)
        case .failure(let error):
            eventBroadcaster.yield(.undecodableRecord(recordName: name, reason: "\(error)"))
        }
        serverVersions[name] = ServerVersion(json: json, metadata: record.metadata, model: model)
    }

    /// A fetched record as the journal and the app want it.
    struct Decoded: Sendable {
        var json: Result<[UInt8], any Error>
        var model: Result<Model, any Error>
    }

    /// Encodes and decodes a page's records on every core: the bulk of
    /// applying a page.
    private static func prepare(_ entries: [RecordResult]) async throws -> [Decoded?] {
        try await parallelMap(entries, minimumCount: 64) { entry in
            guard case .record(let record) = entry else { return nil }
            return Decoded(
                json: Result { try WireFormat.encode(record) },
                model: Result { try RecordDecoder().decode(Model.self, from: record) })
        }
    }

    /// A record was deleted on the server. A local edit waiting for it wins
    /// and creates it again; a local deletion is done.
    private func apply(deletion name: String, _ batch: inout JournalBatch, _ deleted: inout [String]) throws {
        let wasKnown = serverVersions.removeValue(forKey: name) != nil
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

/// Journal writes that go on while the caller carries on, at most a few
/// at a time. Writes left unfinished when the caller gives up still
/// happen, in order, before anything written after them.
struct PipelinedWrites {
    let journal: Journal
    private var tickets: [JournalTicket] = []
    /// How many writes may be under way before the next one waits.
    static let depth = 8

    init(journal: Journal) {
        self.journal = journal
    }

    /// Queues `batch`, waiting first for the oldest write if too many are under way.
    mutating func enqueue(_ batch: JournalBatch) async throws {
        guard !batch.isEmpty else { return }
        if tickets.count >= Self.depth { try await tickets.removeFirst().durable() }
        tickets.append(journal.enqueue(batch))
    }

    /// Waits until every queued write is durable.
    mutating func finish() async throws {
        // Tickets complete in order: the last one is durable only after the others.
        for ticket in tickets { try await ticket.durable() }
        tickets.removeAll()
    }
}
