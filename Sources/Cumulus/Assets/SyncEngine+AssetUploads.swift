import CloudCodable
import CloudProtocol
import Foundation

/// The asset actions of a run, carried out: what to upload, and what a
/// receipt changes, is decided by the session (`SyncSession+Assets.swift`).
extension SyncEngine {
    /// The files of these assets' bytes on this device, a local copy or a
    /// cached file, by checksum.
    func findAssetFiles(_ checksums: [String]) -> [String: URL] {
        var files: [String: URL] = [:]
        for checksum in checksums { files[checksum] = assets.file(for: checksum) }
        return files
    }

    /// Where to upload the bytes of these assets, on the database the pass checked.
    func requestAssetUploads(_ requests: [AssetUploadRequest]) async throws -> SyncSession<Model>.Event {
        .assetUploadsRequested(
            try await attempt { try await self.checkedDatabase.requestAssetUploads(requests, zoneID: self.zoneID) })
    }

    /// Sends a file's bytes to its upload target: the server's answer, or
    /// why the file could not be read.
    func uploadAsset(_ file: URL, to target: AssetUploadTarget) async throws -> SyncSession<Model>.Event {
        do {
            return .assetUploaded(
                try await attempt { try await self.checkedDatabase.uploadAsset(contentsOf: file, to: target) })
        } catch let error where !(error is CancellationError) {
            return .assetFileUnreadable("\(error)")
        }
    }

    // MARK: Local copies

    /// The keys of the assets the pending saves hold: their local copies stay.
    func pendingAssetKeys() -> Set<String> {
        Set(replica.pendingAssetChecksums.map(AssetStore.key))
    }

    /// Moves the local copies no pending save holds into the cache (the
    /// server acknowledged their records, or they were never queued), and
    /// trims the cache.
    func retireAssetCopies() {
        // An engine without local copies (most sends) has nothing to move.
        guard assets.hasLocalCopies else { return }
        let held = pendingAssetKeys()
        assets.retire(keeping: held)
        assets.evict(protecting: held)
    }
}
