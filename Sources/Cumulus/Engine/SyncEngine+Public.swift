import CloudCodable
import CloudProtocol
import Foundation

/// The public database: every user's records of the type, read by anyone,
/// each written by its creator (see ``PublicFetch`` for a server without
/// a change feed there).
extension SyncEngine {
    /// Marks a scan for deletions due every ``SyncConfiguration/publicScanInterval``,
    /// the first one an interval after the last scan the journal dates (on
    /// this device's clock), so that a restart does not scan at once.
    func startScanTimer() {
        let clock = configuration.clock
        let interval = configuration.publicScanInterval
        var first = interval
        if let last = replica.meta.scanTime {
            let elapsed = Duration.milliseconds(max(0, session.settings.now() - last))
            first = elapsed >= interval ? .zero : interval - elapsed
        }
        let timer = Task { [weak self] in
            var delay = first
            while !Task.isCancelled {
                do { try await clock.sleep(for: delay) } catch { return }
                guard let self else { return }
                await self.scanBecameDue()
                delay = interval
            }
        }
        backgroundTasks.append(timer)
    }

    private func scanBecameDue() {
        session.publicScanDue = true
        // Only a query fetch scans; a fetch from the feed sees deletions itself.
        if session.publicFeedRefused || session.publicFeedRefusedAnonymously { requestAutomaticSync() }
    }

    /// One page of a query of the public database, its records prepared.
    func query(_ request: PublicQueryRequest) async throws -> SyncSession<Model>.Event {
        let answer = try await attempt {
            try await self.checkedDatabase.queryRecords(
                request.query, zoneID: self.zoneID, resultsLimit: request.resultsLimit,
                continuationMarker: request.continuationMarker, desiredKeys: request.desiredKeys)
        }
        guard request.desiredKeys == nil, case .success(let page) = answer else {
            return .queried(answer, prepared: [])
        }
        return .queried(
            answer, prepared: try await Self.prepare(page.records.map(RecordResult.record), opening: opening))
    }

    /// Records of the public database a scan did not list, prepared.
    func lookUpRecords(_ names: [String]) async throws -> SyncSession<Model>.Event {
        let answer = try await attempt {
            try await self.checkedDatabase.lookupRecords(names, zoneID: self.zoneID, desiredKeys: nil)
        }
        guard case .success(let results) = answer else { return .recordsLookedUp(answer, prepared: []) }
        return .recordsLookedUp(answer, prepared: try await Self.prepare(results, opening: opening))
    }
}
