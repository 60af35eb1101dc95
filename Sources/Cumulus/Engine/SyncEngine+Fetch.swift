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
        var token = replica.meta.syncToken
        // The names seen while fetching the whole zone (after an expired
        // token, or from no token at all into a replica that holds records):
        // what the zone no longer has is removed once all of it was seen.
        var seen: Set<String>? = token == nil && !replica.server.isEmpty ? [] : nil
        while true {
            let request = ZoneChangesRequest(
                zoneID: zoneID, syncToken: token, resultsLimit: configuration.fetchResultsLimit)
            let answers = try await database.fetchZoneChanges([request])
            guard let answer = answers.first else { return try await writes.finish() }
            let page: ZoneChanges
            switch answer {
            case .success(let changes):
                page = changes
            case .failure(let error) where error.code == .zoneNotFound:
                try await writes.finish()
                try await recreateZone()
                return
            case .failure(let error) where error.code == .changeTokenExpired && seen == nil:
                // Fetch everything again; what the server no longer has is
                // removed once the whole zone has been seen.
                seen = []
                token = nil
                eventBroadcaster.yield(.fullRefetch)
                continue
            case .failure(let error):
                throw error
            }

            let fetched = try await Self.prepare(page.records)
            var effects = replica.applyFetched(page.records, fetched, seen: &seen)
            if let seen, !page.moreComing { effects.append(replica.removeUnseen(seen)) }
            if seen == nil || !page.moreComing {
                effects.append(replica.updateMeta { $0.syncToken = page.syncToken })
            }
            try await writes.enqueue(effects.journal)
            report(effects)
            madeProgress = true
            let stalled = page.records.isEmpty && page.syncToken == token
            token = page.syncToken
            if !page.moreComing || stalled { return try await writes.finish() }
        }
    }

    /// Encodes and decodes a page's records on every core: the bulk of
    /// applying a page.
    private static func prepare(_ entries: [RecordResult]) async throws -> [Replica<Model>.Fetched?] {
        try await parallelMap(entries, minimumCount: 64) { entry in
            guard case .record(let record) = entry else { return nil }
            return Replica<Model>.Fetched(
                json: Result { try WireFormat.encode(record) },
                model: Result { try RecordDecoder().decode(Model.self, from: record) })
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
