import CloudCodable
import Foundation

extension SyncEngine {
    /// Sends pending changes in batches until none is left that can be sent.
    ///
    /// Each batch is made from what is pending when it is sent, after the
    /// account was checked, and is recorded in the journal as sent (in
    /// doubt) before the request leaves: a crash or a lost answer never
    /// makes the engine treat a change that may have arrived as unsent.
    func sendPending() async throws {
        var batchSize = configuration.batchSize
        while true {
            guard replica.hasChangesToSend else { return }
            try await checkAccount()
            let batch = replica.nextBatch(limit: batchSize)
            guard !batch.isEmpty else { return }
            try await carryOut(replica.send(batch))
            let results: [RecordResult]
            do {
                results = try await database.modifyRecords(batch.map(\.operation), zoneID: zoneID, atomic: false)
            } catch let error as CloudError where error.code == .badRequest && batch.count > 1 {
                // Too much for one request: halve the batch and go on.
                batchSize = max(1, batch.count / 2)
                continue
            } catch let error as CloudError where error.code == .zoneNotFound {
                try await recreateZone()
                continue
            }
            guard results.count == batch.count else {
                throw CloudError(
                    .internalError, reason: "the server answered \(results.count) results for \(batch.count) operations"
                )
            }
            let answers = replica.apply(results, for: batch)
            try await carryOut(answers.effects)
            for change in answers.lookups {
                let found = try await database.lookupRecords([change.name], zoneID: zoneID, desiredKeys: nil)
                var record: Record?
                if case .record(let value)? = found.first { record = value }
                try await carryOut(replica.lookedUp(change, found: record))
            }
            madeProgress = true
            eventBroadcaster.yield(.pendingChanges(replica.pending.count))
            if answers.zoneMissing {
                try await recreateZone()
            } else if let transient = answers.transient {
                throw transient
            }
        }
    }
}
