import CumulusTesting
import Foundation
import Testing

@testable import Cumulus
@testable import CumulusCrashChild

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Kills a process that is uploading as fast as it can and checks that
/// every upload that returned before the kill is in the journal.
@Suite("Crash safety", .serialized)
struct CrashTests {
    static var childURL: URL? {
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = runner.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("CumulusCrashChild")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    /// Runs the child until it has reported `acknowledged` uploads (or
    /// finished), kills it with SIGKILL, and returns what it reported.
    func runAndKill(directory: URL, first: Int, acknowledged: Int, burst: Int) throws -> [String] {
        let child = try #require(Self.childURL, "the CumulusCrashChild executable was not built")
        let process = Process()
        process.executableURL = child
        process.arguments = [directory.path, "\(first)", "1000000", "\(burst)"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        var reported = 0
        let reader = output.fileHandleForReading
        while reported < acknowledged {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            let piece = String(decoding: chunk, as: UTF8.self)
            text += piece
            reported += piece.filter { $0 == "\n" }.count
        }
        kill(process.processIdentifier, SIGKILL)
        // What it wrote before it died is still in the pipe.
        text += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        return text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("note-") }
    }

    @Test("SIGKILL after an upload with an asset returned: the asset reaches the server with its bytes")
    func killAfterAssetUpload() async throws {
        let child = try #require(Self.childURL, "the CumulusCrashChild executable was not built")
        let directory = temporaryDirectory("killAsset")
        let source = directory.deletingLastPathComponent().appendingPathComponent("asset-\(UUID().uuidString)")
        let bytes = Data((0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
        try bytes.write(to: source)
        let process = Process()
        process.executableURL = child
        process.arguments = ["--asset", directory.path, source.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        while !text.contains("uploaded") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(text.contains("uploaded"))
        // The app's file is gone too: only the engine's copy is left.
        try FileManager.default.removeItem(at: source)

        let server = InMemoryCloudServer()
        let engine = try await SyncEngine<CrashPhoto>(
            database: server.database(signedInAs: "alice"), directory: directory,
            configuration: SyncConfiguration(automaticSync: false))
        try await engine.sync()
        #expect(await engine.pendingChangeCount == 0)
        let reader = try await SyncEngine<CrashPhoto>(
            database: server.database(signedInAs: "alice"), directory: temporaryDirectory("killAssetReader"),
            configuration: SyncConfiguration(automaticSync: false))
        try await reader.sync()
        let photo = try #require(await reader.model(withIdentifier: "photo"))
        #expect(try await reader.data(for: photo.image) == bytes)
    }

    @Test("SIGKILL in a burst of uploads loses none that returned", arguments: [(1, 300), (64, 2_000)])
    func killDuringUploads(burst: Int, acknowledged: Int) async throws {
        let directory = temporaryDirectory("kill\(burst)")
        var expected = Set<String>()
        // Kill it three times over the same journal: each restart must
        // continue from what the previous run left, torn tail included.
        for round in 0..<3 {
            let reported = try runAndKill(
                directory: directory, first: round * 1_000_000, acknowledged: acknowledged, burst: burst)
            #expect(reported.count >= min(acknowledged, 1), "the child reported \(reported.count) uploads")
            expected.formUnion(reported)
            let engine = try await SyncEngine<CrashNote>(
                database: UnreachableDatabase(), directory: directory,
                configuration: SyncConfiguration(automaticSync: false))
            let present = Set(await engine.models.map(\.id))
            let missing = expected.subtracting(present)
            #expect(missing.isEmpty, "lost \(missing.count) acknowledged uploads, e.g. \(Array(missing.prefix(3)))")
        }
    }
}
