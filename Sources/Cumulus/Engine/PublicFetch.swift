import CloudCodable
import CloudProtocol

/// A fetch of the public database by queries, for a server that answers
/// `changes/zone` there with a refusal (CloudKit's public database has no
/// change feed).
///
/// Changes come from `records/query` on the engine's record type, oldest
/// modification first, from a little before the newest modification time
/// applied so far (``SyncSession/queryOverlap``): a record stamped just
/// before another but stored after it is not skipped, and the versions read
/// twice change nothing, their change tags being known. Deletions leave no
/// record to query: a scan of the type's record names (no fields), every
/// ``SyncConfiguration/publicScanInterval``, finds the names the replica
/// holds and the server no longer lists, and a lookup confirms each before
/// it is removed, so that a page that shifted under the scan deletes
/// nothing.
struct PublicFetch: Sendable {
    enum Stage: Sendable, Equatable {
        /// Records modified since ``since``, oldest first.
        case modified
        /// Every record name of the type.
        case scanning
    }

    var stage = Stage.modified
    /// The query's lower bound (inclusive) in server milliseconds; `nil` for every record.
    var since: Int64?
    var marker: String?
    /// The newest modification time applied.
    var newest: Int64?
    /// The names a query of every record or a scan listed.
    var seen: Set<String>?
    /// When this fetch started to list every name, on this device's clock.
    var scanStarted: Int64?
}

/// One `records/query` request of a ``PublicFetch``.
struct PublicQueryRequest: Sendable, Hashable {
    var query: RecordQuery
    var resultsLimit: Int?
    var continuationMarker: String?
    /// `[]` for a scan of names.
    var desiredKeys: [String]?
}

extension SyncSession {
    /// How far before the newest modification applied a query starts again,
    /// in milliseconds.
    static var queryOverlap: Int64 { 5_000 }

    /// The system field of a record's modification time in queries.
    static var modificationTimeField: String { "___modTime" }

    /// Whether this pass fetches by queries rather than by the feed.
    var usesPublicQueries: Bool {
        settings.isPublic && (publicFeedRefused || (run?.anonymous == true && publicFeedRefusedAnonymously))
    }

    /// Whether an error of `changes/zone` says that the public database has
    /// no feed for this caller: a plain CloudKit server refuses the request
    /// (`BAD_REQUEST`); one may also refuse it to a reader without a user.
    func isFeedRefusal(_ error: CloudError) -> Bool {
        guard settings.isPublic else { return false }
        return error.code == .badRequest || (run?.anonymous == true && error.code == .authenticationRequired)
    }

    /// The feed was refused: remember it, and fetch by queries.
    mutating func feedRefused(_ error: CloudError) -> [Action] {
        if run?.anonymous == true && error.code == .authenticationRequired {
            publicFeedRefusedAnonymously = true
            return startPublicQuery()
        }
        publicFeedRefused = true
        // A token the server cannot read (from another server, say) is not asked with again.
        guard replica.meta.syncToken != nil else { return startPublicQuery() }
        return [.persist(replica.updateMeta { $0.syncToken = nil })] + startPublicQuery()
    }

    mutating func startPublicQuery() -> [Action] {
        var fetch = PublicFetch(since: replica.meta.queryTime.map { $0 - Self.queryOverlap })
        fetch.newest = replica.meta.queryTime
        if fetch.since == nil {
            // A query of every record lists every name: it is a scan too.
            fetch.scanStarted = settings.now()
            if !replica.server.isEmpty { fetch.seen = [] }
        }
        run?.publicFetch = fetch
        return requestQuery()
    }

    private mutating func requestQuery() -> [Action] {
        guard let fetch = run?.publicFetch else {
            preconditionFailure("Internal inconsistency: a query without a query fetch")
        }
        run?.awaiting = .query
        var query = RecordQuery(recordType: Model.cloudRecordType)
        var desiredKeys: [String]?
        switch fetch.stage {
        case .modified:
            query.sort = [QuerySort(Self.modificationTimeField)]
            if let since = fetch.since {
                query.filters = [
                    QueryFilter(
                        Self.modificationTimeField, .greaterThanOrEquals, .timestamp(RecordStamp(timestamp: since).date)
                    )
                ]
            }
        case .scanning:
            desiredKeys = []
        }
        return [
            .query(
                PublicQueryRequest(
                    query: query, resultsLimit: settings.fetchResultsLimit, continuationMarker: fetch.marker,
                    desiredKeys: desiredKeys))
        ]
    }

    /// A page of the query arrived: its records are applied (a scan only
    /// collects names), and its newest modification time is written with
    /// them, so that a crash fetches again from where the journal is.
    mutating func queried(_ result: Result<QueryResult, CloudError>, _ prepared: [Replica<Model>.Fetched?])
        -> [Action]
    {
        guard var fetch = run?.publicFetch else {
            preconditionFailure("Internal inconsistency: a query page without a query fetch")
        }
        let page: QueryResult
        switch result {
        case .failure(let error): return [.settleJournal] + failed(error)
        case .success(let answer): page = answer
        }
        run?.madeProgress = true
        var actions: [Action] = []
        switch fetch.stage {
        case .scanning:
            for record in page.records { fetch.seen?.insert(record.recordName) }
        case .modified:
            var seen = fetch.seen
            var effects = replica.applyFetched(page.records.map(RecordResult.record), prepared, seen: &seen)
            fetch.seen = seen
            if let newest = page.records.compactMap({ $0.metadata?.modified?.timestamp }).max(),
                newest > fetch.newest ?? .min
            {
                fetch.newest = newest
                effects.append(replica.updateMeta { $0.queryTime = newest })
            }
            actions.append(.persistBehind(effects))
        }
        if let marker = page.continuationMarker, marker != fetch.marker || !page.records.isEmpty {
            let last = page.records.last?.metadata?.modified?.timestamp
            if fetch.stage == .modified, let last, last > fetch.since ?? .min {
                // The next page is a new query from this page's last time: a
                // marker counts positions, which a record changed or deleted
                // meanwhile would shift. Only a page all of one time goes on by marker.
                fetch.since = last
                fetch.marker = nil
            } else {
                fetch.marker = marker
            }
            run?.publicFetch = fetch
            return actions + requestQuery()
        }
        fetch.marker = nil
        if fetch.stage == .modified, fetch.scanStarted == nil, publicScanDue, !replica.server.isEmpty {
            fetch.stage = .scanning
            fetch.seen = []
            fetch.scanStarted = settings.now()
            run?.publicFetch = fetch
            return actions + requestQuery()
        }
        run?.publicFetch = fetch
        let unseen = fetch.seen.map { seen in
            replica.server.keys.filter { !seen.contains($0) && replica.pending[$0] == nil }.sorted()
        }
        return actions + confirm(unseen ?? [])
    }

    /// Looks up, a batch at a time, the names the replica holds and the
    /// listing did not show.
    private mutating func confirm(_ names: [String]) -> [Action] {
        guard !names.isEmpty else { return publicFetchDone() }
        let batch = Array(names.prefix(settings.batchSize))
        run?.awaiting = .confirmation(batch, rest: Array(names.dropFirst(batch.count)))
        return [.lookUpRecords(batch)]
    }

    /// A record the lookup does not find was deleted; one it finds is applied.
    mutating func lookedUp(
        _ names: [String], _ result: Result<[RecordResult], CloudError>, _ prepared: [Replica<Model>.Fetched?],
        rest: [String]
    ) -> [Action] {
        let results: [RecordResult]
        switch result {
        case .failure(let error): return [.settleJournal] + failed(error)
        case .success(let answer): results = answer
        }
        var effects = ReplicaEffects<Model>()
        var found: [RecordResult] = []
        var foundPrepared: [Replica<Model>.Fetched?] = []
        for (index, (name, entry)) in zip(names, results).enumerated() {
            switch entry {
            case .failure(let error) where error.code == .notFound:
                replica.applyDeletion(name, &effects)
            case .record:
                found.append(entry)
                foundPrepared.append(index < prepared.count ? prepared[index] : nil)
            default:
                continue
            }
        }
        var unused: Set<String>?
        effects.append(replica.applyFetched(found, foundPrepared, seen: &unused))
        run?.madeProgress = true
        return [.persistBehind(effects)] + confirm(rest)
    }

    /// The query fetch is over; one that listed every name dates the scan.
    private mutating func publicFetchDone() -> [Action] {
        var actions: [Action] = []
        if let started = run?.publicFetch?.scanStarted {
            publicScanDue = false
            actions.append(.persistBehind(replica.updateMeta { $0.scanTime = started }))
        }
        run?.publicFetch = nil
        return actions + [.settleJournal] + fetchDone()
    }
}
