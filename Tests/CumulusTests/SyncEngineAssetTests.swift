import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

struct Snapshot: CloudCodable, Identifiable, Hashable {
    var id: String
    var caption: String
    var image: CloudAsset
    var cloudMetadata: RecordMetadata?
}

/// Bytes that differ from one seed to another and from one position to the next.
func assetBytes(_ count: Int, seed: UInt64 = 1) -> Data {
    var state = seed &* 0x9E37_79B9_7F4A_7C15
    var bytes = [UInt8](repeating: 0, count: count)
    for index in bytes.indices {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
    }
    return Data(bytes)
}

/// Engines of photos on one in-memory server.
struct SnapshotDevices {
    let server = InMemoryCloudServer()
    let zone = ZoneID(zoneName: "Snapshot")

    func engine(
        user: String = "alice", directory: URL = temporaryDirectory("photos"),
        configure: (inout SyncConfiguration) -> Void = { _ in }
    ) async throws -> (SyncEngine<Snapshot>, InMemoryCloudDatabase) {
        let database = server.database(signedInAs: user)
        var configuration = SyncConfiguration(
            automaticSync: false, retryPolicy: RetryPolicy(initialDelay: .milliseconds(1), jitter: 0))
        configure(&configuration)
        let engine = try await SyncEngine<Snapshot>(
            database: database, directory: directory, configuration: configuration)
        return (engine, database)
    }

    /// The asset values the server stores for the record.
    func storedAsset(_ name: String) async -> Asset? {
        let records = await server.storedRecords(in: zone, of: "alice")
        guard case .asset(let asset)? = records.first(where: { $0.recordName == name })?["image"] else { return nil }
        return asset
    }
}

@Suite("SyncEngine assets")
struct SyncEngineAssetTests {
    @Test("a 5 MB asset goes up; another device downloads it with progress, cancelled mid-way, then resumed")
    func uploadAndDownload() async throws {
        let devices = SnapshotDevices()
        let bytes = assetBytes(5_000_000)
        let (phone, _) = try await devices.engine()
        let photo = Snapshot(id: "p", caption: "dunes", image: CloudAsset(data: bytes))
        try await phone.upload(photo)
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        let stored = try #require(await devices.storedAsset("p"))
        #expect(stored.fileChecksum == photo.image.checksum)
        #expect(stored.size == 5_000_000)
        #expect(await devices.server.storedAssetCount() == 1)
        // The phone reads its own asset without a download.
        devices.server.resetRequestCounts()
        #expect(try await phone.data(for: photo.image) == bytes)
        #expect(devices.server.requestCount(of: .downloadAsset) == 0)

        // The tablet's downloads stall after three chunks while the gate is shut.
        let gate = DownloadGate()
        var interposed = InterposedDatabase(devices.server.database(signedInAs: "alice"))
        interposed.beforeDownloadChunk = { index in
            if index >= 3 { try await gate.wait() }
        }
        let tablet = try await SyncEngine<Snapshot>(
            database: interposed, directory: temporaryDirectory("tablet"),
            configuration: SyncConfiguration(automaticSync: false))
        try await tablet.sync()
        let fetched = try #require(await tablet.model(withIdentifier: "p"))
        #expect(fetched.image == photo.image)
        #expect(await !tablet.hasContents(of: fetched.image))

        // Stop once three chunks arrived: the transfer stops, what was written stays.
        var lastProgress: Int64 = 0
        for try await update in tablet.download(fetched.image) {
            if case .progress(let completed, _) = update { lastProgress = completed }
            if lastProgress == 3 * 65_536 { break }
        }
        #expect(lastProgress == 3 * 65_536)
        #expect(await !tablet.hasContents(of: fetched.image))
        gate.open()

        var updates: [AssetDownloadUpdate] = []
        for try await update in tablet.download(fetched.image) { updates.append(update) }
        guard case .progress(let resumedFrom, let total)? = updates.first, case .finished(let file)? = updates.last
        else {
            Issue.record("unexpected updates \(updates.prefix(3))")
            return
        }
        #expect(resumedFrom == 3 * 65_536)
        #expect(total == 5_000_000)
        #expect(try Data(contentsOf: file) == bytes)
        #expect(await tablet.hasContents(of: fetched.image))
        devices.server.resetRequestCounts()
        #expect(try await tablet.data(for: fetched.image) == bytes)
        #expect(devices.server.requestCount(of: .downloadAsset) == 0)
    }

    @Test("a pending asset survives a restart with its source gone, and reaches the server with its bytes")
    func restartKeepsLocalCopy() async throws {
        let devices = SnapshotDevices()
        let directory = temporaryDirectory("restart")
        let source = directory.deletingLastPathComponent().appendingPathComponent("source-\(UUID().uuidString)")
        let bytes = assetBytes(300_000, seed: 7)
        try bytes.write(to: source)
        let (phone, database) = try await devices.engine(directory: directory) { $0.assetCacheLimit = 1 }
        database.inject(.networkFailure(), count: 100)
        try await phone.upload(Snapshot(id: "p", caption: "c", image: try CloudAsset(contentsOf: source)))
        try? await phone.sync(SyncOptions(maximumAttempts: 1))
        await phone.close()
        try FileManager.default.removeItem(at: source)
        database.removeInjectedFaults()
        devices.server.removeInjectedFaults()

        let (again, _) = try await devices.engine(directory: directory) { $0.assetCacheLimit = 1 }
        let pending = try #require(await again.model(withIdentifier: "p"))
        // The copy is read locally, and not evicted although the cache's limit is 1 byte.
        #expect(try await again.data(for: pending.image) == bytes)
        try await again.sync()
        #expect(await again.pendingChangeCount == 0)
        // Acknowledged, the copy leaves assets/local for the cache, which is over its limit.
        #expect(await !again.assets.hasLocalCopies)
        #expect(await !again.hasContents(of: pending.image))
        #expect(await devices.storedAsset("p")?.fileChecksum == pending.image.checksum)
        let (tablet, _) = try await devices.engine()
        try await tablet.sync()
        let fetched = try #require(await tablet.model(withIdentifier: "p"))
        #expect(try await tablet.data(for: fetched.image) == bytes)
    }

    @Test("the cache keeps to its limit by evicting the least recently used unpinned files")
    func cacheLimit() async throws {
        let devices = SnapshotDevices()
        let (phone, _) = try await devices.engine()
        let photos = (0..<3).map {
            Snapshot(id: "p\($0)", caption: "", image: CloudAsset(data: assetBytes(100_000, seed: UInt64($0) + 10)))
        }
        try await phone.upload(photos)
        try await phone.sync()

        let (tablet, _) = try await devices.engine { $0.assetCacheLimit = 250_000 }
        try await tablet.sync()
        let images = try await photos.asyncMap { try #require(await tablet.model(withIdentifier: $0.id)).image }
        try await tablet.pin(images[0])
        _ = try await tablet.fileURL(for: images[0])
        _ = try await tablet.fileURL(for: images[1])
        _ = try await tablet.fileURL(for: images[2])
        // 300 KB over a 250 KB limit: the oldest unpinned file goes.
        #expect(await tablet.hasContents(of: images[0]))
        #expect(await !tablet.hasContents(of: images[1]))
        #expect(await tablet.hasContents(of: images[2]))
        // Again: the pinned file stays, the oldest other one goes.
        _ = try await tablet.fileURL(for: images[1])
        #expect(await tablet.hasContents(of: images[0]))
        #expect(await tablet.hasContents(of: images[1]))
        #expect(await !tablet.hasContents(of: images[2]))
        // Unpinned, the first is the least recently used.
        try await tablet.unpin(images[0])
        _ = try await tablet.fileURL(for: images[2])
        #expect(await !tablet.hasContents(of: images[0]))
        #expect(await tablet.hasContents(of: images[1]))
        #expect(await tablet.hasContents(of: images[2]))
    }

    @Test("a lost answer to the upload of the bytes sends them again; the unused upload is collected")
    func lostUploadAnswer() async throws {
        let devices = SnapshotDevices()
        let (phone, database) = try await devices.engine()
        let bytes = assetBytes(200_000, seed: 3)
        try await phone.upload(Snapshot(id: "p", caption: "", image: CloudAsset(data: bytes)))
        database.inject(.networkFailure(afterApplying: true), on: [.uploadAsset])
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        #expect(devices.server.requestCount(of: .uploadAsset) == 2)
        #expect(await devices.server.storedAssetCount() == 2)
        devices.server.skipTime(devices.server.assetGracePeriod + .seconds(1))
        await devices.server.collectAssets()
        #expect(await devices.server.storedAssetCount() == 1)
        let (tablet, _) = try await devices.engine()
        try await tablet.sync()
        let fetched = try #require(await tablet.model(withIdentifier: "p"))
        #expect(try await tablet.data(for: fetched.image) == bytes)
    }

    @Test("a save in doubt goes again with the same receipt: one upload, one record")
    func lostSaveAnswer() async throws {
        let devices = SnapshotDevices()
        let (phone, database) = try await devices.engine()
        let image = CloudAsset(data: assetBytes(150_000, seed: 4))
        try await phone.upload(Snapshot(id: "p", caption: "", image: image))
        database.inject(.networkFailure(afterApplying: true), on: [.modifyRecords])
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        #expect(devices.server.requestCount(of: .uploadAsset) == 1)
        #expect(await devices.storedAsset("p")?.fileChecksum == image.checksum)
        #expect(await devices.server.storedAssetCount() == 1)
    }

    @Test("a save in doubt whose local copy is gone goes with the checksum alone, which the server already holds")
    func inDoubtSaveWithoutLocalCopy() async throws {
        let devices = SnapshotDevices()
        let directory = temporaryDirectory("gone")
        let (phone, database) = try await devices.engine(directory: directory)
        let image = CloudAsset(data: assetBytes(120_000, seed: 9))
        try await phone.upload(Snapshot(id: "p", caption: "", image: image))
        database.inject(.networkFailure(afterApplying: true), on: [.modifyRecords])
        try? await phone.sync(SyncOptions(maximumAttempts: 1))
        await phone.close()
        // The server holds the record and its asset; this device lost its copy
        // (as when an acknowledgement never reached the disk before a crash).
        try FileManager.default.removeItem(at: directory.appendingPathComponent("assets/local"))

        let (again, _) = try await devices.engine(directory: directory)
        #expect(await again.pendingChangeCount == 1)
        try await again.sync()
        #expect(await again.pendingChangeCount == 0)
        #expect(await again.refusedChanges.isEmpty)
        #expect(devices.server.requestCount(of: .uploadAsset) == 1)
        #expect(await devices.storedAsset("p")?.fileChecksum == image.checksum)
    }

    @Test("a receipt that expired while the save waited is refused, and the bytes go up again")
    func expiredReceipt() async throws {
        let devices = SnapshotDevices()
        let (phone, database) = try await devices.engine()
        let image = CloudAsset(data: assetBytes(50_000, seed: 5))
        try await phone.upload(Snapshot(id: "p", caption: "", image: image))
        database.inject(.networkFailure(), count: 1, on: [.modifyRecords])
        try? await phone.sync(SyncOptions(maximumAttempts: 1))
        #expect(devices.server.requestCount(of: .uploadAsset) == 1)
        devices.server.skipTime(devices.server.assetGracePeriod + .seconds(1))
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        #expect(await phone.refusedChanges.isEmpty)
        #expect(devices.server.requestCount(of: .uploadAsset) == 2)
        #expect(await devices.storedAsset("p")?.fileChecksum == image.checksum)
    }

    @Test("one device changes the photo, another the caption: the merge keeps both")
    func mergeAssetAndText() async throws {
        let devices = SnapshotDevices()
        let (phone, _) = try await devices.engine()
        let (tablet, _) = try await devices.engine()
        try await phone.upload(Snapshot(id: "p", caption: "old", image: CloudAsset(data: assetBytes(10_000, seed: 1))))
        try await phone.sync()
        try await tablet.sync()
        var onPhone = try #require(await phone.model(withIdentifier: "p"))
        var onTablet = try #require(await tablet.model(withIdentifier: "p"))
        let newImage = CloudAsset(data: assetBytes(20_000, seed: 2))
        onPhone.image = newImage
        onTablet.caption = "new"
        try await phone.upload(onPhone)
        try await phone.sync()
        try await tablet.upload(onTablet)
        try await tablet.sync()
        try await phone.sync()
        for engine in [phone, tablet] {
            let merged = try #require(await engine.model(withIdentifier: "p"))
            #expect(merged.caption == "new")
            #expect(merged.image == newImage)
        }
        #expect(await devices.storedAsset("p")?.fileChecksum == newImage.checksum)
        #expect(try await tablet.data(for: newImage) == assetBytes(20_000, seed: 2))
    }

    @Test("an expired download URL is replaced by looking the record up again")
    func expiredDownloadURL() async throws {
        let devices = SnapshotDevices()
        let (phone, _) = try await devices.engine()
        let bytes = assetBytes(70_000, seed: 9)
        try await phone.upload(Snapshot(id: "p", caption: "", image: CloudAsset(data: bytes)))
        try await phone.sync()
        let (tablet, _) = try await devices.engine()
        try await tablet.sync()
        let fetched = try #require(await tablet.model(withIdentifier: "p"))
        devices.server.skipTime(.seconds(7200))
        devices.server.resetRequestCounts()
        #expect(try await tablet.data(for: fetched.image) == bytes)
        #expect(devices.server.requestCount(of: .lookupRecords) == 1)
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

/// Holds waiters until it is opened; a cancelled waiter stops waiting.
private final class DownloadGate: @unchecked Sendable {
    // Safety: `isOpen` is guarded by `lock`.
    private let lock = NSLock()
    private var isOpen = false

    func open() {
        lock.lock()
        isOpen = true
        lock.unlock()
    }

    func wait() async throws {
        while !lock.withLock({ isOpen }) { try await Task.sleep(for: .milliseconds(2)) }
    }
}
