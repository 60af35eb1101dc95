import Cumulus
import CumulusServer
import Foundation
import Testing

@testable import cumulus

/// `cumulus backup` and `cumulus restore`.
@Suite("Backups", .serialized)
struct BackupTests {
    @Test("a backup taken while the server writes, restored after SIGKILL, holds exactly what it held")
    func backupWhileServing() async throws {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        let backup = directory.appendingPathComponent("backup").path

        // serve creates the data directory; the other commands work beside it.
        let first = try await ServeProcess.start(executable: executable, data: data)
        defer { first.kill() }
        let apiToken = try await ServerCrashTests.lastLine(
            of: executable, ["container", "add", "crash", "--data", data.path])
        let userToken = try await ServerCrashTests.lastLine(
            of: executable, ["user", "add", "alice", "--container", "crash", "--data", data.path])
        let database = first.database(apiToken: apiToken, webAuthToken: userToken)
        let kept = AssetHTTP.randomBytes(300_000)
        _ = try await AssetHTTP.savePhoto("kept", bytes: kept, in: database, on: first.baseURL)
        _ = try await database.modifyRecords(
            [RecordOperation(.create, Record(recordType: "Entry", recordName: "before", zoneID: .defaultZone))],
            zoneID: .defaultZone, atomic: true)

        let backedUp = try await CumulusProcess.run(["backup", backup, "--data", data.path])
        #expect(backedUp.status == 0, "\(backedUp.output)")
        #expect(backedUp.output.contains("1 asset files (300000 bytes)"), "\(backedUp.output)")

        _ = try await AssetHTTP.savePhoto("later", bytes: [1, 2, 3], in: database, on: first.baseURL)
        _ = try await database.modifyRecords(
            [RecordOperation(.create, Record(recordType: "Entry", recordName: "after", zoneID: .defaultZone))],
            zoneID: .defaultZone, atomic: true)
        let refused = try await CumulusProcess.run(["restore", backup, "--data", data.path])
        #expect(
            refused.status == 1 && refused.output.contains("in use by a running cumulus serve"), "\(refused.output)")
        first.kill()

        let restored = try await CumulusProcess.run(["restore", backup, "--data", data.path])
        #expect(restored.status == 0, "\(restored.output)")
        let replaced = try #require(
            restored.output.split(separator: "\n").last { $0.hasPrefix("The data it replaced is in ") })
        let aside = String(replaced.dropFirst("The data it replaced is in ".count).prefix { $0 != ";" })
        #expect(FileManager.default.fileExists(atPath: aside + "/cumulus.sqlite"), "\(restored.output)")

        let second = try await ServeProcess.start(executable: executable, data: data)
        defer { second.kill() }
        let again = second.database(apiToken: apiToken, webAuthToken: userToken)
        let found = try await again.lookupRecords(
            ["before", "kept", "after", "later"], zoneID: .defaultZone, desiredKeys: nil)
        #expect(found[0].record != nil && found[1].record != nil)
        #expect(found[2].record == nil && found[3].record == nil, "\(found)")
        let url = try #require(AssetHTTP.downloadURL(of: found[1].record))
        let downloaded = try await AssetHTTP.download(url, on: second.baseURL)
        #expect(downloaded.status == 200 && downloaded.body == kept)
    }

    @Test("a restore into a new directory, then backups refused into a non-empty directory and on PostgreSQL")
    func restoreAndRefusals() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        let backup = directory.appendingPathComponent("backup").path
        try await CumulusCommandTests.createDatabase(data)
        _ = try await CumulusCommandTests.run(["container", "add", "iCloud.com.example.one", "--data", data])
        _ = try await CumulusCommandTests.run(["backup", backup, "--data", data])

        await #expect(throws: CommandFailure.self) {
            _ = try await CumulusCommandTests.run(["backup", backup, "--data", data])
        }
        for command in ["backup", "restore"] {
            do {
                _ = try await CumulusCommandTests.run([command, backup, "--postgres", "postgres://u@localhost/d"])
                Issue.record("\(command) ran on PostgreSQL")
            } catch let failure as CommandFailure {
                #expect(failure.description.contains("pg_dump"), "\(failure)")
            }
        }

        let fresh = directory.appendingPathComponent("fresh").path
        let printed = try await CumulusCommandTests.run(["restore", backup, "--data", fresh])
        #expect(printed.count == 1, "\(printed)")
        let serve = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", fresh]) as? ServeCommand)
        let service = try await serve.openService(logger: quietLogger)
        #expect(try await service.containerCount() == 1)
        try await service.close()
    }

    @Test("a restore cut short leaves a marker every command refuses until a restore finishes")
    func interruptedRestore() async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        let backup = directory.appendingPathComponent("backup").path
        try await CumulusCommandTests.createDatabase(data)
        _ = try await CumulusCommandTests.run(["container", "add", "iCloud.com.example.one", "--data", data])
        _ = try await CumulusCommandTests.run(["backup", backup, "--data", data])
        _ = try await CumulusCommandTests.run(["container", "add", "iCloud.com.example.two", "--data", data])

        // What a crash after the old data moved aside leaves: the marker, the staging copy, the aside.
        let aside = data + "/replaced-earlier"
        let staging = data + "/restoring-earlier"
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: false)
        try FileManager.default.moveItem(atPath: data + "/cumulus.sqlite", toPath: aside + "/cumulus.sqlite")
        try "staging: \(staging)\nreplaced: \(aside)\n".write(
            toFile: data + "/restore-in-progress", atomically: true, encoding: .utf8)
        for command in [["container", "add", "iCloud.com.example.three"], ["backup", directory.path + "/again"]] {
            do {
                _ = try await CumulusCommandTests.run(command + ["--data", data])
                Issue.record("\(command) ran during a restore")
            } catch let failure as CommandFailure {
                #expect(failure.description.contains("did not finish"), "\(failure)")
            }
        }
        let serve = try #require(try CumulusCommand.parseAsRoot(["serve", "--data", data]) as? ServeCommand)
        await #expect(throws: CommandFailure.self) { _ = try await serve.openService(logger: quietLogger) }

        let printed = try await CumulusCommandTests.run(["restore", backup, "--data", data])
        #expect(printed.last?.contains(aside) == true, "\(printed)")
        let entries = try FileManager.default.contentsOfDirectory(atPath: data)
        #expect(!entries.contains("restore-in-progress") && !entries.contains("restoring-earlier"), "\(entries)")
        #expect(FileManager.default.fileExists(atPath: aside + "/cumulus.sqlite"))
        let service = try await serve.openService(logger: quietLogger)
        #expect(try await service.containerCount() == 1)
        try await service.close()
    }

    @Test("restore checks the backup before touching the data: none, a newer schema, a missing asset file")
    func restoreRefusesBadBackups() async throws {
        let executable = try #require(ServerCrashTests.executableURL, "the cumulus executable was not built")
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        let server = try await ServeProcess.start(executable: executable, data: data)
        let apiToken = try await ServerCrashTests.lastLine(
            of: executable, ["container", "add", "crash", "--data", data.path])
        let userToken = try await ServerCrashTests.lastLine(
            of: executable, ["user", "add", "alice", "--container", "crash", "--data", data.path])
        let database = server.database(apiToken: apiToken, webAuthToken: userToken)
        _ = try await AssetHTTP.savePhoto("photo", bytes: [9, 8, 7, 6], in: database, on: server.baseURL)
        server.kill()
        let backup = directory.appendingPathComponent("backup")
        _ = try await CumulusCommandTests.run(["backup", backup.path, "--data", data.path])
        let original = try Data(contentsOf: data.appendingPathComponent("cumulus.sqlite"))
        let assetFiles = try #require(
            FileManager.default.enumerator(atPath: backup.appendingPathComponent("assets").path)
        )
        .compactMap { $0 as? String }.filter { $0.contains("/") }
        #expect(assetFiles.count == 1, "\(assetFiles)")

        let newer = directory.appendingPathComponent("newer")
        try FileManager.default.copyItem(at: backup, to: newer)
        // The schema version (`PRAGMA user_version`) is the header's big-endian integer at byte 60.
        let handle = try FileHandle(forWritingTo: newer.appendingPathComponent("cumulus.sqlite"))
        try handle.seek(toOffset: 60)
        try handle.write(contentsOf: Data([0, 0, 0, 99]))
        try handle.close()

        let missing = directory.appendingPathComponent("missing")
        try FileManager.default.copyItem(at: backup, to: missing)
        try FileManager.default.removeItem(at: missing.appendingPathComponent("assets/" + assetFiles[0]))

        for (bad, expected) in [
            (directory.appendingPathComponent("none"), "holds no cumulus.sqlite"),
            (newer, "schema version 99"), (missing, "missing"),
        ] {
            do {
                _ = try await CumulusCommandTests.run(["restore", bad.path, "--data", data.path])
                Issue.record("\(bad.lastPathComponent) was restored")
            } catch let failure as CommandFailure {
                #expect(failure.description.contains("Nothing was restored"), "\(failure)")
                #expect(failure.description.contains(expected), "\(failure)")
            }
        }
        #expect(try Data(contentsOf: data.appendingPathComponent("cumulus.sqlite")) == original)
        let entries = try FileManager.default.contentsOfDirectory(atPath: data.path)
        #expect(!entries.contains { $0.hasPrefix("replaced-") || $0.hasPrefix("restoring-") }, "\(entries)")
    }
}
