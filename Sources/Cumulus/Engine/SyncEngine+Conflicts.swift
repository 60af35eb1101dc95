import CloudCodable
import Foundation

extension SyncEngine {
    /// Settles a change that met a newer server version: the model's
    /// resolver decides what to send on top of the server's version, or
    /// keeps the server's. A record that keeps conflicting is reported and
    /// held back rather than retried forever.
    func resolveConflict(_ name: String, server: Record, into outcome: inout BatchOutcome) throws {
        let attempts = (conflictAttempts[name] ?? 0) + 1
        conflictAttempts[name] = attempts
        let ancestor = serverVersions[name]?.model
        let json = try WireFormat.encode(server)
        outcome.journal.set(JournalKeys.server(name), json)
        let decoded = try? decoder.decode(Model.self, from: server)
        serverVersions[name] = ServerVersion(json: json, metadata: server.metadata, model: decoded)
        guard let serverModel = decoded else {
            refuse(
                name,
                CloudError(.conflict, reason: "the server's version does not decode as \(Model.self)", recordName: name)
            )
            return
        }
        guard attempts <= configuration.maximumConflictAttempts else {
            refuse(
                name,
                CloudError(.conflict, reason: "still conflicting after \(attempts - 1) resolutions", recordName: name))
            return
        }
        guard let change = pending[name] else { return }

        switch change.kind {
        case .save:
            guard let client = pendingModels[name] else { return }
            if var resolved = Model.resolveConflict(client: client, server: serverModel, ancestor: ancestor) {
                resolved.cloudMetadata = server.metadata
                var record = try encoder.encode(resolved)
                record.zoneID = zoneID
                record.metadata = server.metadata
                pending[name]?.kind = .save(record)
                pendingModels[name] = resolved
                outcome.journal.set(JournalKeys.save(name), try WireFormat.encode(record))
                eventBroadcaster.yield(.conflict(recordName: name, resolution: .resolved))
            } else {
                clearPending(name)
                outcome.journal.remove(JournalKeys.save(name))
                outcome.updated.append(serverModel)
                eventBroadcaster.yield(.conflict(recordName: name, resolution: .keptServerVersion))
            }
        case .delete:
            // The deletion was based on an older version: ask the resolver
            // whether the local intent (the model as it was) still stands.
            let client = ancestor ?? serverModel
            if Model.resolveConflict(client: client, server: serverModel, ancestor: ancestor) != nil {
                pending[name]?.kind = .delete(baseTag: server.changeTag)
                outcome.journal.set(JournalKeys.delete(name), DeleteDocument.json(baseTag: server.changeTag))
                eventBroadcaster.yield(.conflict(recordName: name, resolution: .resolved))
            } else {
                clearPending(name)
                outcome.journal.remove(JournalKeys.delete(name))
                outcome.updated.append(serverModel)
                eventBroadcaster.yield(.conflict(recordName: name, resolution: .keptServerVersion))
            }
        }
    }
}
