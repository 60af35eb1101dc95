import Cumulus
import CumulusServer
import Foundation
import Testing

@testable import cumulus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The data directory, its backups and its restores are the server's
/// alone: directories 0700 and files 0600 whatever the umask, an older,
/// looser directory tightened when `serve` starts.
///
/// The umask is the process's: the tests set it to the usual 022 around
/// what they check, one at a time.
@Suite("Private data files", .serialized)
struct PrivateFilesTests {
    /// The permission bits of `path`, not following a symbolic link.
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// `root` and every path under it whose mode is not 0700 (a directory)
    /// or 0600 (anything else), with its mode in octal.
    static func looser(under root: String) -> [String] {
        var paths = [root]
        if let walker = FileManager.default.enumerator(atPath: root) {
            while let relative = walker.nextObject() as? String { paths.append(root + "/" + relative) }
        }
        return paths.compactMap { path in
            var info = stat()
            guard lstat(path, &info) == 0 else { return "\(path): gone" }
            let wanted: mode_t = (info.st_mode & S_IFMT) == S_IFDIR ? 0o700 : 0o600
            let mode = info.st_mode & 0o7777
            return mode == wanted ? nil : "\(path): \(String(mode, radix: 8))"
        }
    }

    /// Runs `body` with the process's umask at 022, then puts it back.
    static func withUmask022<T>(_ body: () async throws -> T) async rethrows -> T {
        let previous = umask(0o022)
        defer { umask(previous) }
        return try await body()
    }

    /// One chunk of bytes as an asset store takes them.
    static func chunks(_ bytes: [UInt8]) -> AsyncStream<[UInt8]> {
        AsyncStream { continuation in
            continuation.yield(bytes)
            continuation.finish()
        }
    }

    @Test("a data directory serve's startup creates holds its database, -wal, -shm and asset files privately")
    func newDataDirectory() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("nested/data").path
        try await Self.withUmask022 {
            let serve = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", data]) as? ServeCommand)
            let service = try await serve.openService(logger: quietLogger)
            do {
                _ = try await service.addContainer(named: "iCloud.com.example.private")
                let assets = try FileAssetStore(directory: data + "/" + SQLiteBackup.assetDirectoryName)
                try await assets.write(Self.chunks([1, 2, 3]), as: "asset-1")
                // While the store is open, SQLite's -wal and -shm are there.
                for suffix in ["", "-wal", "-shm"] {
                    #expect(Self.mode(data + "/cumulus.sqlite" + suffix) == 0o600, "cumulus.sqlite\(suffix)")
                }
                #expect(Self.looser(under: data).isEmpty, "\(Self.looser(under: data))")
                #expect(Self.mode(directory.appendingPathComponent("nested").path) == 0o700)
            } catch {
                try? await service.close()
                throw error
            }
            try await service.close()
        }
    }

    @Test("serve, its asset files, backup and restore write 0700 directories and 0600 files under umask 022")
    func serveBackupRestore() async throws {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        let backup = directory.appendingPathComponent("backup").path
        try await Self.withUmask022 {
            let server = try await ServeProcess.start(executable: executable, data: data)
            defer { server.kill() }
            let apiToken = try await ServerCrashTests.lastLine(
                of: executable, ["container", "add", "crash", "--data", data.path])
            let userToken = try await ServerCrashTests.lastLine(
                of: executable, ["user", "add", "alice", "--container", "crash", "--data", data.path])
            let database = server.database(apiToken: apiToken, webAuthToken: userToken)
            _ = try await AssetHTTP.savePhoto("photo", bytes: [1, 2, 3, 4], in: database, on: server.baseURL)
            for name in ["cumulus.sqlite", "cumulus.sqlite-wal", "cumulus.sqlite-shm", "serve.lock", "assets"] {
                #expect(FileManager.default.fileExists(atPath: data.path + "/" + name), "\(name)")
            }
            #expect(Self.looser(under: data.path).isEmpty, "\(Self.looser(under: data.path))")

            let backedUp = try await CumulusProcess.run(["backup", backup, "--data", data.path])
            #expect(backedUp.status == 0, "\(backedUp.output)")
            #expect(Self.looser(under: backup).isEmpty, "\(Self.looser(under: backup))")
            // An empty directory given for a backup is the backup's now: private too.
            let given = directory.appendingPathComponent("given").path
            try FileManager.default.createDirectory(atPath: given, withIntermediateDirectories: false)
            #expect(Self.mode(given) == 0o755)
            _ = try await CumulusCommandTests.run(["backup", given, "--data", data.path])
            #expect(Self.looser(under: given).isEmpty, "\(Self.looser(under: given))")

            server.kill()
            let restored = try await CumulusProcess.run(["restore", backup, "--data", data.path])
            #expect(restored.status == 0, "\(restored.output)")
            #expect(Self.looser(under: data.path).isEmpty, "\(Self.looser(under: data.path))")
            let fresh = directory.appendingPathComponent("fresh").path
            _ = try await CumulusCommandTests.run(["restore", backup, "--data", fresh])
            #expect(Self.looser(under: fresh).isEmpty, "\(Self.looser(under: fresh))")
        }
    }

    @Test("serve tightens a data directory others can read, says so, and says nothing once it is private")
    func tightening() async throws {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        try await CumulusCommandTests.createDatabase(data.path)
        let assets = try FileAssetStore(directory: data.path + "/" + SQLiteBackup.assetDirectoryName)
        try await assets.write(Self.chunks([9, 9]), as: "asset-1")
        // As an older server left it.
        var loose: [(String, mode_t)] = [(data.path, 0o755), (data.path + "/cumulus.sqlite", 0o644)]
        loose.append((assets.directory, 0o775))
        for folder in try FileManager.default.contentsOfDirectory(atPath: assets.directory) {
            let path = assets.directory + "/" + folder
            loose.append((path, 0o755))
            for file in try FileManager.default.contentsOfDirectory(atPath: path) {
                loose.append((path + "/" + file, 0o664))
            }
        }
        for (path, mode) in loose { #expect(chmod(path, mode) == 0, "\(path)") }
        try await Self.withUmask022 {
            let first = try await ServeProcess.start(executable: executable, data: data)
            first.kill()
            #expect(first.startupOutput.contains("Tightened"), "\(first.startupOutput)")
            #expect(first.startupOutput.contains(data.path), "\(first.startupOutput)")
            #expect(Self.looser(under: data.path).isEmpty, "\(Self.looser(under: data.path))")
            let second = try await ServeProcess.start(executable: executable, data: data)
            second.kill()
            #expect(!second.startupOutput.contains("Tightened"), "\(second.startupOutput)")
        }
    }
}
