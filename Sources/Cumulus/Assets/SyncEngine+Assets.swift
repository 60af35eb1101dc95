import CloudCodable
import CloudProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension SyncEngine {
    // MARK: Making assets

    /// An asset of the file's contents, read once: the engine copies the
    /// bytes as it hashes them, and the upload of a model holding the asset
    /// takes that copy without reading the file again (the file may change
    /// or go away meanwhile). `CloudAsset(contentsOf:)` hashes the file
    /// now and copies it, hashing again, on upload.
    ///
    /// The copy waits in the cache until the upload; should the cache drop
    /// it first (``SyncConfiguration/assetCacheLimit``), the upload copies
    /// the file again and checks that its bytes are still the asset's.
    ///
    /// - Throws: What reading the file or writing the copy throws.
    public func asset(contentsOf file: URL) async throws -> CloudAsset {
        try checkOpen()
        let assets = assets
        let (checksum, size) = try await assets.offPool { try assets.importFile(file) }
        return CloudAsset(checksum: checksum, size: size, source: .file(file))
    }

    // MARK: Reading assets

    /// The file of an asset's bytes, downloaded first when this device does
    /// not have them (see ``download(_:)`` for progress).
    ///
    /// An asset made on this device reads from the engine's copy (or from
    /// where it was made, before its model was uploaded), without a download.
    /// The file belongs to the engine: read it, or copy it, but do not
    /// change it; an unpinned downloaded file may be deleted later to keep
    /// the cache under ``SyncConfiguration/assetCacheLimit``.
    ///
    /// - Throws: ``SyncEngineError`` with code `assetUnavailable` when no
    ///   record of this engine holds the asset; ``CloudError`` when the
    ///   download fails; `CancellationError` when the task is cancelled (a
    ///   later request resumes from what was written).
    public func fileURL(for asset: CloudAsset) async throws -> URL {
        try await transferAsset(asset) { _ in }
    }

    /// The bytes of an asset, downloaded first when this device does not
    /// have them; see ``fileURL(for:)``.
    public func data(for asset: CloudAsset) async throws -> Data {
        if case .data(let data)? = asset.source { return data }
        let file = try await fileURL(for: asset)
        return try await assets.offPool { try Data(contentsOf: file, options: .mappedIfSafe) }
    }

    /// Downloads an asset with progress; iterate to start it:
    ///
    /// ```swift
    /// for try await update in engine.download(photo.image) {
    ///     if case .progress(let completed, let total) = update { show(completed, of: total) }
    /// }
    /// ```
    ///
    /// Cancelling the iterating task stops the transfer; a later download
    /// (or ``fileURL(for:)``) resumes from what was written. An asset this
    /// device has answers its file at once. A download URL that expired is
    /// replaced by looking the record up again.
    public nonisolated func download(_ asset: CloudAsset) -> AssetDownloadProgress {
        AssetDownloadProgress { report in _ = try await self.transferAsset(asset, report: report) }
    }

    /// Keeps the asset's file in the cache whatever its size limit, from
    /// its next download on (and across restarts), until ``unpin(_:)``.
    public func pin(_ asset: CloudAsset) throws {
        try assets.setPinned(asset.checksum, true)
    }

    /// Lets the asset's file be evicted from the cache again.
    public func unpin(_ asset: CloudAsset) throws {
        try assets.setPinned(asset.checksum, false)
        assets.evict(protecting: pendingAssetKeys())
    }

    /// Whether this device has the asset's bytes, so that reading it
    /// needs no download.
    public func hasContents(of asset: CloudAsset) -> Bool {
        assets.file(for: asset.checksum, peeking: true) != nil
    }

    // MARK: The transfer

    /// The asset's file on this device, downloading it into the cache when
    /// needed. Runs off the actor but for the look-ups.
    nonisolated func transferAsset(
        _ asset: CloudAsset, report: @escaping @Sendable (AssetDownloadUpdate) -> Void
    ) async throws -> URL {
        if let file = try assets.file(for: asset.checksum) ?? ownFile(of: asset) {
            report(.progress(completed: asset.size, total: asset.size))
            report(.finished(file))
            return file
        }
        var location = try await locate(asset)
        let partial = try await assets.claimPartial(asset.checksum)
        defer { assets.release(asset.checksum) }
        // Another download may have finished it meanwhile.
        if let file = assets.file(for: asset.checksum) {
            report(.progress(completed: asset.size, total: asset.size))
            report(.finished(file))
            return file
        }
        var refreshed = false
        while true {
            var written = assets.exists(partial) ? assets.size(of: partial) : 0
            if written > asset.size {
                unlink(partial.path)
                written = 0
            }
            report(.progress(completed: written, total: asset.size))
            if written == asset.size { break }
            do {
                let download = try await database.downloadAsset(
                    location.value, range: written > 0 ? written..<asset.size : nil)
                try await Self.append(download, to: partial, from: written, of: asset, report: report)
                break
            } catch let error as CloudError where error.code == .expired && !refreshed {
                refreshed = true
                location = try await lookUpAgain(asset, location)
            }
        }
        if !assets.exists(partial) { _ = FileManager.default.createFile(atPath: partial.path, contents: nil) }
        let assets = assets
        let file = try await assets.offPool { try assets.complete(partial, as: asset) }
        await trimCache(keeping: AssetStore.key(asset.checksum))
        report(.finished(file))
        return file
    }

    /// The file of an asset made on this device that was not uploaded:
    /// where it was made from (its bytes written into the cache).
    private nonisolated func ownFile(of asset: CloudAsset) throws -> URL? {
        switch asset.source {
        case .file(let url)?: return url
        case .data(let data)?: return try assets.cacheData(data, as: asset)
        case nil: return nil
        }
    }

    /// Writes the chunks of a download after the `written` bytes of `file`.
    private static func append(
        _ download: AssetDownload, to file: URL, from written: Int64, of asset: CloudAsset,
        report: @Sendable (AssetDownloadUpdate) -> Void
    ) async throws {
        if written == 0 { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(written))
        var count = written
        for try await chunk in download {
            try Task.checkCancellation()
            count += Int64(chunk.count)
            guard count <= asset.size else {
                throw CloudError(.internalError, reason: "the download of \(asset) is longer than the asset")
            }
            try handle.write(contentsOf: chunk)
            report(.progress(completed: count, total: asset.size))
        }
        try Task.checkCancellation()
        guard count == asset.size else {
            throw CloudError(
                .networkFailure, reason: "the download of \(asset) ended after \(count) of \(asset.size) bytes")
        }
    }

    /// A record of the engine that holds the asset, with its download URL.
    func locate(_ asset: CloudAsset) throws -> AssetLocation {
        if let fresh = assets.freshLocation(asset.checksum) { return fresh }
        guard let location = replica.location(of: asset) else {
            throw SyncEngineError(.assetUnavailable, "no record of this engine holds \(asset)")
        }
        return location
    }

    /// Looks the record up again for a fresh download URL.
    private func lookUpAgain(_ asset: CloudAsset, _ stale: AssetLocation) async throws -> AssetLocation {
        let found = try await database.lookupRecords([stale.recordName], zoneID: zoneID, desiredKeys: [stale.field])
        guard case .record(let record)? = found.first, let location = AssetLocation(of: asset, in: record) else {
            throw SyncEngineError(.assetUnavailable, "record \(stale.recordName) no longer holds \(asset)")
        }
        assets.setFreshLocation(location, for: asset.checksum)
        return location
    }

    private func trimCache(keeping key: String) {
        var protected = pendingAssetKeys()
        protected.insert(key)
        assets.evict(protecting: protected)
    }
}
