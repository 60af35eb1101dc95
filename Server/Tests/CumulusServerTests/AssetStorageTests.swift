import Cumulus
import CumulusServer
import Foundation
import Testing

/// The rows and bytes of assets in each store, below the record service.
@Suite("Asset storage")
struct AssetStorageTests {
    /// Writes and reads every kind of asset row in `storage`.
    static func roundTripRows(_ storage: any ServerStorage) async throws {
        let key = DatabaseKey(container: "iCloud.assets", environment: .development, scope: .private, owner: "_a")
        let ticket = StoredUploadTicket(
            id: "t1", key: key, zone: 41, recordName: "photo é x", recordType: "Photo", fieldName: "image",
            user: "_a", expires: 1000)
        let pending = StoredAsset(
            id: "a1", zone: 41, recordName: "photo é x", fieldName: "image", user: "_a", size: nil, checksum: nil,
            created: 10, unheldSince: 10)
        let done = StoredAsset(
            id: "a1", zone: 41, recordName: "photo é x", fieldName: "image", user: "_a", size: 3, checksum: "c2hh",
            created: 10, unheldSince: 20)
        let other = StoredAsset(
            id: "a2", zone: 42, recordName: "other", fieldName: "image", user: "", size: 0, checksum: "ZW1wdHk=",
            created: 5, unheldSince: nil)
        let receipt = StoredAssetReceipt(
            id: "r1", asset: "a1", zone: 41, recordName: "photo é x", fieldName: "image", user: "_a", expires: 2000)
        try await storage.write { transaction async throws in
            #expect(try await transaction.assetSigningSecret(proposing: [1, 2, 3]) == [1, 2, 3])
            // A second proposal gets the first secret: every server signs alike.
            #expect(try await transaction.assetSigningSecret(proposing: [9]) == [1, 2, 3])
            try await transaction.createUploadTicket(ticket)
            try await transaction.saveAsset(pending)
            try await transaction.saveAsset(done)
            try await transaction.saveAsset(other)
            try await transaction.createAssetReceipt(receipt)
        }
        try await storage.read { transaction async throws in
            #expect(try await transaction.uploadTicket(id: "t1") == ticket)
            #expect(try await transaction.uploadTicket(id: "T1") == nil)
            let found = try await transaction.assets(ids: ["a1", "a2", "a3"]).sorted { $0.id < $1.id }
            #expect(found == [done, other])
            #expect(try await transaction.assetReceipts(ids: ["r1", "r2"]) == [receipt])
            #expect(try await transaction.unheldAssets(since: 20, limit: 10) == ["a1"])
            #expect(try await transaction.unheldAssets(since: 19, limit: 10) == [])
        }
        try await storage.write { transaction async throws in
            try await transaction.holdAssets(ids: ["a1"])
            try await transaction.releaseAssets(ids: ["a2"], at: 30)
            // Releasing again keeps the first release's time.
            try await transaction.releaseAssets(ids: ["a2"], at: 99)
        }
        try await storage.read { transaction async throws in
            #expect(try await transaction.assets(ids: ["a1"]).first?.unheldSince == nil)
            #expect(try await transaction.unheldAssets(since: 100, limit: 10) == ["a2"])
        }
        try await storage.write { transaction async throws in
            try await transaction.releaseAssets(inZone: 41, at: 50)
            try await transaction.deleteExpiredUploads(at: 1000)
        }
        try await storage.read { transaction async throws in
            #expect(try await transaction.unheldAssets(since: 100, limit: 10) == ["a2", "a1"])
            #expect(try await transaction.unheldAssets(since: 100, limit: 1) == ["a2"])
            #expect(try await transaction.uploadTicket(id: "t1") == nil)
            #expect(try await transaction.assetReceipts(ids: ["r1"]) == [receipt])
        }
        try await storage.write { transaction async throws in
            try await transaction.deleteExpiredUploads(at: 2000)
            try await transaction.deleteAssets(ids: ["a1", "a2"])
        }
        try await storage.read { transaction async throws in
            #expect(try await transaction.assetReceipts(ids: ["r1"]) == [])
            #expect(try await transaction.assets(ids: ["a1", "a2"]) == [])
        }
    }

    /// Runs `body` on a fresh storage of `store`, closed after.
    static func withStorage(_ store: TestStore, _ body: (any ServerStorage) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-assets-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let services = try await store.makeServices(directory: directory)
        do {
            try await body(services.services[0].storage)
        } catch {
            await services.close()
            throw error
        }
        await services.close()
    }

    @Test("every asset row is written and read back as it was", arguments: TestStore.single)
    func rows(_ store: TestStore) async throws {
        try await Self.withStorage(store) { try await Self.roundTripRows($0) }
    }

    @Test("bytes are stored whole, read by range a chunk at a time, listed and deleted", arguments: TestStore.single)
    func bytes(_ store: TestStore) async throws {
        try await Self.withStorage(store) { storage in
            let bytes = AssetHTTP.randomBytes(2_500_000)
            // Chunks of odd sizes, as a network delivers them.
            let pieces = stride(from: 0, to: bytes.count, by: 70_001).map {
                Array(bytes[$0..<min($0 + 70_001, bytes.count)])
            }
            try await storage.assetBytes.write(Pieces(pieces: pieces), as: "big")
            try await storage.assetBytes.write(Pieces(pieces: []), as: "empty")
            #expect(Set(try await storage.assetBytes.storedIDs()) == ["big", "empty"])
            let size = Int64(bytes.count)
            for range in [0..<size, 1..<2, 262_143..<1_048_577, 2_000_000..<size] {
                let download = try await storage.assetBytes.read("big", range: range, assetSize: size)
                var read: [UInt8] = []
                var largest = 0
                for try await chunk in download {
                    read += chunk
                    largest = max(largest, chunk.count)
                }
                #expect(read == Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)]), "\(range)")
                #expect(largest <= 1 << 20, "\(range)")
            }
            let empty = try await storage.assetBytes.read("empty", range: 0..<0, assetSize: 0)
            for try await chunk in empty { Issue.record("an empty asset yielded \(chunk.count) bytes") }

            try await storage.assetBytes.delete(["big", "never-stored"])
            #expect(try await storage.assetBytes.storedIDs() == ["empty"])
            do {
                _ = try await storage.assetBytes.read("big", range: 0..<1, assetSize: size)
                Issue.record("deleted bytes were read")
            } catch let error as CloudError {
                #expect(error.code == .notFound)
            }
        }
    }

    @Test("a write whose chunks fail keeps nothing and passes the error on", arguments: TestStore.single)
    func failedWrite(_ store: TestStore) async throws {
        try await Self.withStorage(store) { storage in
            let pieces = Pieces(pieces: Array(repeating: [UInt8](repeating: 1, count: 400_000), count: 4), failAt: 3)
            do {
                try await storage.assetBytes.write(pieces, as: "broken")
                Issue.record("a failing write succeeded")
            } catch let error as CloudError {
                #expect(error.code == .limitExceeded)
            }
            #expect(try await storage.assetBytes.storedIDs() == [])
        }
    }

    @Test("a file store names any id, and leaves a temporary file to the sweep only once it is old")
    func fileNames() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-files-\(UUID().uuidString)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try FileAssetStore(directory: directory.path)
        // Ids that differ only in case, or hold a slash, stay apart.
        for id in ["abc", "ABC", "a/b", "..", "é"] {
            try await store.write(Pieces(pieces: [Array(id.utf8)]), as: id)
        }
        #expect(Set(try await store.storedIDs()) == ["abc", "ABC", "a/b", "..", "é"])
        for id in ["abc", "ABC", "a/b", "..", "é"] {
            var read: [UInt8] = []
            for try await chunk in try await store.read(id, range: 0..<Int64(id.utf8.count), assetSize: 0) {
                read += chunk
            }
            #expect(read == Array(id.utf8))
        }
        // A write a crash cut short leaves a temporary file: kept while it may
        // still be written, deleted once it is old.
        let folder = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).first { $0.count == 2 })
        let fresh = directory.appendingPathComponent(folder).appendingPathComponent("61.fresh.partial")
        let old = directory.appendingPathComponent(folder).appendingPathComponent("61.old.partial")
        try Data([1]).write(to: fresh)
        try Data([1]).write(to: old)
        try FileManager.default.setAttributes(
            [.modificationDate: Date().addingTimeInterval(-2 * 3600)], ofItemAtPath: old.path)
        #expect(Set(try await store.storedIDs()) == ["abc", "ABC", "a/b", "..", "é"])
        #expect(FileManager.default.fileExists(atPath: fresh.path))
        #expect(!FileManager.default.fileExists(atPath: old.path))
    }
}

/// Chunks from memory, failing with `LIMIT_EXCEEDED` at `failAt` if given.
struct Pieces: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let pieces: [[UInt8]]
    var failAt: Int? = nil

    func makeAsyncIterator() -> Iterator { Iterator(pieces: pieces, failAt: failAt) }

    struct Iterator: AsyncIteratorProtocol {
        let pieces: [[UInt8]]
        let failAt: Int?
        var index = 0

        mutating func next() async throws -> [UInt8]? {
            defer { index += 1 }
            if index == failAt { throw CloudError(.limitExceeded, reason: "too large") }
            return index < pieces.count ? pieces[index] : nil
        }
    }
}
