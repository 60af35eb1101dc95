import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// `SyncEngine.asset(contentsOf:)` reads a file once: the engine's copy is
/// taken as the bytes are hashed, and the upload sends that copy.
@Suite("Making an asset from a file", .timeLimit(.minutes(1)))
struct AssetImportTests {
    @Test("the asset of a file equals CloudAsset(contentsOf:), and the upload sends the bytes read then")
    func uploadSendsTheBytesReadOnce() async throws {
        let devices = SnapshotDevices()
        let (phone, _) = try await devices.engine()
        let file = temporaryDirectory("import").appendingPathComponent("dunes.jpg")
        let bytes = assetBytes(300_000)
        try bytes.write(to: file)
        let asset = try await phone.asset(contentsOf: file)
        #expect(asset == (try CloudAsset(contentsOf: file)))

        // The file changes before the upload: the engine's copy still holds the bytes read.
        try assetBytes(300_000, seed: 2).write(to: file)
        try await phone.upload(Snapshot(id: "p", caption: "dunes", image: asset))
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)

        let (laptop, _) = try await devices.engine()
        try await laptop.sync()
        let fetched = try #require(await laptop.model(withIdentifier: "p"))
        #expect(try await laptop.data(for: fetched.image) == bytes)
        await phone.close()
        await laptop.close()
    }

    @Test("a copy an import left half written when the process died is deleted when the engine opens")
    func abandonedImportIsDeleted() async throws {
        let devices = SnapshotDevices()
        let directory = temporaryDirectory("abandoned")
        let partial = directory.appendingPathComponent("assets/partial", isDirectory: true)
        try FileManager.default.createDirectory(at: partial, withIntermediateDirectories: true)
        let abandoned = partial.appendingPathComponent("import-\(UUID().uuidString)")
        try assetBytes(1_000).write(to: abandoned)
        let (phone, _) = try await devices.engine(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: abandoned.path))
        await phone.close()
    }

    @Test("an asset made by CloudAsset(contentsOf:) whose file changed before the upload is refused, not sent")
    func plainAssetOfAChangedFile() async throws {
        let devices = SnapshotDevices()
        let (phone, _) = try await devices.engine()
        let file = temporaryDirectory("plain").appendingPathComponent("dunes.jpg")
        try assetBytes(1_000).write(to: file)
        let asset = try CloudAsset(contentsOf: file)
        try assetBytes(1_000, seed: 2).write(to: file)
        await #expect(throws: SyncEngineError.self) {
            try await phone.upload(Snapshot(id: "p", caption: "dunes", image: asset))
        }
        await phone.close()
    }
}
