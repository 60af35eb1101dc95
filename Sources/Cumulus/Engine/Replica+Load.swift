import CloudCodable
import CloudProtocol

extension Replica {
    /// Rebuilds the replica from the journal's documents. Records and
    /// models are decoded on every core: this is what re-opening a large
    /// replica costs.
    static func load(_ documents: [String: [UInt8]], settings: Settings) async throws -> Replica {
        var replica = Replica(settings: settings)
        var serverDocuments: [(key: String, json: [UInt8])] = []
        var saveDocuments: [(key: String, json: [UInt8])] = []
        var writeDocuments: [(key: String, json: [UInt8])] = []
        var sentDocuments: [(key: String, json: [UInt8])] = []
        var sentDeletes: [String] = []
        var earlierDocuments: [(key: String, json: [UInt8])] = []
        var localDocuments: [(key: String, json: [UInt8])] = []
        serverDocuments.reserveCapacity(documents.count)
        for (key, value) in documents {
            if key == JournalKeys.meta {
                replica.meta = try EngineMeta(json: value)
                replica.journalFormat = replica.meta.format
            } else if key.hasPrefix(JournalKeys.writePrefix) {
                writeDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.serverPrefix) {
                serverDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.savePrefix) {
                saveDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.deletePrefix) {
                let name = String(key.dropFirst(JournalKeys.deletePrefix.count))
                replica.generationCounter += 1
                replica.pending[name] = PendingChange(
                    kind: .delete(baseTag: try DeleteDocument.baseTag(value)), generation: replica.generationCounter)
            } else if key.hasPrefix(JournalKeys.sentPrefix) {
                sentDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.sentDeletePrefix) {
                sentDeletes.append(String(key.dropFirst(JournalKeys.sentDeletePrefix.count)))
            } else if key.hasPrefix(JournalKeys.earlierPrefix) {
                earlierDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.undecodablePrefix) {
                replica.revived.insert(String(key.dropFirst(JournalKeys.undecodablePrefix.count)))
            } else if key.hasPrefix(JournalKeys.localPrefix) {
                localDocuments.append((key, value))
            } else if key.hasPrefix(JournalKeys.refusedPrefix) {
                let name = String(key.dropFirst(JournalKeys.refusedPrefix.count))
                replica.refused[name] = try RefusedDocument.error(value, recordName: name, zoneID: settings.zoneID)
            }
        }

        for document in localDocuments {
            let record = try journalRecord(document, prefix: JournalKeys.localPrefix)
            replica.local[record.recordName] = record.fields
        }
        let local = replica.local

        // A server version that does not decode as a model stays in the
        // replica as a record (the sync reports it), and so does a pending
        // save that does not (a zone created again from such a version).
        // Records are dropped as soon as their models are made, on the workers.
        let servers = try await parallelMap(serverDocuments, minimumCount: 4_096) { document in
            let record = try journalRecord(document, prefix: JournalKeys.serverPrefix)
            let model = try? RecordDecoder().decode(
                Model.self, from: readable(record, settings: settings, local: local))
            return (record.recordName, ServerVersion(json: document.json, metadata: record.metadata, model: model))
        }
        replica.server.reserveCapacity(servers.count)
        for (name, version) in servers { replica.server[name] = version }
        // `write/` entries hold saves stamped when queued; `save/` ones
        // (format 2) were not, and are stamped before they are sent.
        let documents =
            writeDocuments.map { ($0, JournalKeys.writePrefix) }
            + saveDocuments.map { ($0, JournalKeys.savePrefix) }
        let saves = try await parallelMap(documents, minimumCount: 4_096) { item in
            let (document, prefix) = item
            let record = try journalRecord(document, prefix: prefix)
            return (
                record,
                try? RecordDecoder().decode(Model.self, from: readable(record, settings: settings, local: local)),
                prefix == JournalKeys.savePrefix
            )
        }
        for (record, model, unstamped) in saves {
            let name = record.recordName
            guard replica.pending[name] == nil else {
                throw JournalError(.corrupted, "the journal holds two pending saves of '\(name)'")
            }
            replica.generationCounter += 1
            replica.pending[name] = PendingChange(kind: .save(record), generation: replica.generationCounter)
            replica.pendingModels[name] = model
            if unstamped { replica.unstamped.insert(name) }
        }
        for document in earlierDocuments {
            let name = String(document.key.dropFirst(JournalKeys.earlierPrefix.count))
            var versions: [EarlierVersion] = []
            for entry in try RecordListDocument.records(document.json, key: document.key, name: name) {
                guard let tag = entry.record.changeTag else {
                    throw JournalError(
                        .corrupted, "the journal entry \(document.key) holds a version without a change tag")
                }
                versions.append(EarlierVersion(tag: tag, json: entry.json))
            }
            replica.earlier[name] = versions
        }
        // Of the versions that did not decode when they were written, those
        // that decode now wait to be published; the others stay undecodable.
        replica.revived = replica.revived.filter { replica.server[$0]?.model != nil }
        try replica.loadInDoubt(sentDocuments, sentDeletes)
        // A refusal counts only while its change waits.
        replica.refused = replica.refused.filter { replica.pending[$0.key] != nil }
        return replica
    }

    /// The changes in doubt. One that is still the pending change takes its
    /// generation, so that its acknowledgement clears it; an older one
    /// (generation 0) only moves the pending change onto its version. A
    /// pending change stamped when queued, and a pending deletion, may have
    /// been sent before the crash: they are in doubt too, but for one the
    /// server refused (``JournalKeys/refusedPrefix``).
    private mutating func loadInDoubt(_ saves: [(key: String, json: [UInt8])], _ deletes: [String]) throws {
        for document in saves {
            let name = String(document.key.dropFirst(JournalKeys.sentPrefix.count))
            for entry in try RecordListDocument.records(document.json, key: document.key, name: name) {
                var generation = 0
                if let change = pending[name], case .save(let queued) = change.kind,
                    Self.sameContent(queued, entry.record)
                {
                    generation = change.generation
                }
                inDoubt[name, default: []].append(SentWrite(kind: .save(entry.record), generation: generation))
            }
        }
        for name in deletes {
            var generation = 0
            if let change = pending[name], case .delete = change.kind { generation = change.generation }
            inDoubt[name, default: []].append(SentWrite(kind: .delete, generation: generation))
        }
        // A change refused for good was answered, and is not sent again while the refusal stands.
        for (name, change) in pending where !unstamped.contains(name) && refused[name] == nil {
            switch change.kind {
            case .save(let record): setInDoubt(name, SentWrite(kind: .save(record), generation: change.generation))
            case .delete: setInDoubt(name, SentWrite(kind: .delete, generation: change.generation))
            }
        }
    }

    /// The record of a journal entry whose key is `prefix` and the record's
    /// name. An entry that holds another record than its key names is
    /// damage: two entries could then claim one record, and which of them
    /// won would depend on the order a dictionary happens to list them in.
    static func journalRecord(_ document: (key: String, json: [UInt8]), prefix: String) throws -> Record {
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
