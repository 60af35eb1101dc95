import CloudCodable
import CloudProtocol

extension Replica {
    /// A fetched record as the journal and the app want it, made on the workers.
    struct Fetched: Sendable {
        var json: Result<[UInt8], any Error>
        var model: Result<Model, any Error>
    }

    /// Applies a page of the zone's changes.
    ///
    /// A record with a local change waiting is left for the send to meet
    /// as a conflict, unless it is this device's own write in doubt, which
    /// it acknowledges. A version this replica already holds (an
    /// acknowledged write coming back) changes nothing and is not published
    /// again. With `seen` (a refetch after an expired token), the names are
    /// collected so that what the server no longer has can be removed.
    mutating func applyFetched(
        _ entries: [RecordResult], _ fetched: [Fetched?], seen: inout Set<String>?
    ) -> Effects {
        var effects = Effects()
        for (entry, prepared) in zip(entries, fetched) {
            switch entry {
            case .record(let record):
                if record.recordType == ShareDetails.recordType {
                    // The share changed, a permission perhaps: what it refused is tried again.
                    for (name, error) in refused where error.code == .accessDenied { forgetRefusal(name, &effects) }
                    continue
                }
                referenceTargetAppeared(record.recordName, &effects)
                // In a zone shared by several engines, the others' records are theirs.
                guard record.recordType == Model.cloudRecordType else { continue }
                let name = record.recordName
                seen?.insert(name)
                guard let prepared else { continue }
                do {
                    try apply(fetched: record, prepared, &effects)
                } catch {
                    effects.events.append(.undecodableRecord(recordName: name, reason: "\(error)"))
                }
            case .deleted(let name, _):
                // Another engine's record (read while a reference waits for its target).
                guard server[name] != nil || pending[name] != nil || inDoubt[name] != nil else { continue }
                applyDeletion(name, &effects)
            case .failure:
                continue
            }
        }
        return effects
    }

    private mutating func apply(fetched record: Record, _ prepared: Fetched, _ effects: inout Effects) throws {
        let name = record.recordName
        if pending[name] != nil {
            if let own = ownWrite(name, in: record) {
                try acknowledge(
                    name, record, generation: own.generation, json: try prepared.json.get(),
                    model: prepared.model, &effects)
            }
            return
        }
        if let tag = record.changeTag, server[name]?.metadata?.changeTag == tag { return }
        let model = try setServer(
            name, record, json: try prepared.json.get(), model: prepared.model, &effects)
        if let model { effects.updated.append(model) }
    }

    /// A record was deleted on the server. A local edit waiting for it wins
    /// and creates it again; a local deletion is done.
    mutating func applyDeletion(_ name: String, _ effects: inout Effects) {
        let wasKnown = server[name] != nil
        removeServer(name, &effects)
        settle(name, &effects)
        switch pending[name]?.kind {
        case .save?:
            rebasePending(name, on: nil, &effects)
        case .delete?:
            clearPending(name, &effects)
            removeLocal(name, &effects)
            effects.deleted.append(name)
        case nil:
            removeLocal(name, &effects)
            if wasKnown { effects.deleted.append(name) }
        }
    }

    /// After a whole refetch: removes the records the server no longer has.
    mutating func removeUnseen(_ seen: Set<String>) -> Effects {
        var effects = Effects()
        for name in server.keys where !seen.contains(name) && pending[name] == nil {
            applyDeletion(name, &effects)
        }
        return effects
    }

    /// The zone vanished from the server (the caller has checked that the
    /// account is still the one the replica belongs to): every local record
    /// is queued to be created again, and pending deletions delete whatever
    /// the server holds.
    ///
    /// Another device may create the zone again first, with the same
    /// records: until this device hears, each record it knew may be on the
    /// server, so it stays in doubt as the version it was. A deletion then
    /// still reaches it, and the version coming back is recognised.
    mutating func zoneMissing() -> Effects {
        var effects = Effects()
        let known = server
        for (name, version) in known where pending[name] == nil {
            guard var fresh = try? version.record() else {
                preconditionFailure("Internal inconsistency: a server version's JSON does not parse")
            }
            fresh.metadata = nil
            let model = version.model.map { model in
                var model = model
                model.cloudMetadata = nil
                return model
            }
            setPending(name, .save(fresh), model: model, &effects)
        }
        for (name, change) in pending {
            settle(name, &effects)
            if change.baseTag != nil { rebasePending(name, on: nil, &effects) }
            if let record = try? known[name]?.record() {
                setInDoubt(name, SentWrite(kind: .save(record), generation: 0))
                writeInDoubt(name, &effects)
            }
        }
        for name in Array(server.keys) { removeServer(name, &effects) }
        // The replica keeps what it showed: the first fetch stays done.
        effects.append(updateMeta { $0 = EngineMeta(user: $0.user, fetched: $0.fetched) })
        effects.events.append(.zoneRecreated)
        return effects
    }

    /// Drops local changes the app gives up (a change the server refused,
    /// for instance): each model goes back to the version the server last
    /// had, or away when it had none. A change sent and not answered may
    /// have arrived, so it is kept.
    ///
    /// Fetches skip the versions of a record with a change waiting, so the
    /// version kept here may be stale: the next fetch starts again from the
    /// zone's beginning (or, querying the public database, from its first record).
    mutating func discard(_ names: [String]) -> Effects {
        var effects = Effects()
        var discarded = false
        for name in names where pending[name] != nil && !pendingIsInDoubt(name) {
            // Earlier writes in doubt only mattered as the base of this change.
            settle(name, &effects)
            clearPending(name, &effects)
            discarded = true
            if let model = server[name]?.model {
                effects.updated.append(model)
            } else {
                removeLocal(name, &effects)
                effects.deleted.append(name)
            }
        }
        if discarded, meta.syncToken != nil || meta.queryTime != nil {
            effects.append(
                updateMeta {
                    $0.syncToken = nil
                    $0.queryTime = nil
                })
        }
        return effects
    }

    /// The shared zone is out of reach (the participant was removed, left,
    /// or the owner stopped sharing): every shared model leaves the replica
    /// and the journal, and the local changes that can no longer reach the
    /// server are reported as discarded. Nothing is reported twice: a
    /// replica with nothing of the zone left says nothing.
    mutating func loseSharedZone() -> Effects {
        var effects = Effects()
        let discarded = pending.keys.sorted()
        let vanished = Set(server.keys).union(pendingModels.keys).sorted()
        guard !vanished.isEmpty || !discarded.isEmpty || meta.syncToken != nil else { return effects }
        for name in Array(pending.keys) {
            settle(name, &effects)
            clearPending(name, &effects)
        }
        for name in Array(server.keys) { removeServer(name, &effects) }
        for name in Array(inDoubt.keys) { settle(name, &effects) }
        for name in Array(refused.keys) { forgetRefusal(name, &effects) }
        for name in Array(local.keys) { removeLocal(name, &effects) }
        effects.append(updateMeta { $0 = EngineMeta(user: $0.user) })
        effects.events.append(.shareLost(discardedChanges: discarded))
        effects.deleted = vanished
        return effects
    }

    /// Another user signed in: the previous user's data is cleared from
    /// the replica and the journal, after reporting what is discarded.
    mutating func switchAccount(to user: String) -> Effects {
        var effects = Effects()
        let previous = meta.user
        let discarded = pending.keys.sorted()
        let vanished = Set(server.keys).union(pendingModels.keys).sorted()
        for name in Array(pending.keys) {
            settle(name, &effects)
            clearPending(name, &effects)
        }
        for name in Array(server.keys) { removeServer(name, &effects) }
        for name in Array(inDoubt.keys) { settle(name, &effects) }
        for name in Array(refused.keys) { forgetRefusal(name, &effects) }
        for name in Array(local.keys) { removeLocal(name, &effects) }
        effects.append(updateMeta { $0 = EngineMeta(user: user) })
        effects.events.append(.accountChanged(previousUser: previous, newUser: user, discardedChanges: discarded))
        effects.deleted = vanished
        return effects
    }
}
