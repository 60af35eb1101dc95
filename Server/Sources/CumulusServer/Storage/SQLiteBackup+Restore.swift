import CloudCodable
import CloudProtocol
import Foundation
import SQLiteNIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension SQLiteBackup {
    /// What a restore did.
    public struct Restoration: Sendable {
        /// What the restored backup holds.
        public var summary: Summary
        /// Where the data it replaced was moved, or `nil` when there was none.
        public var replacedDirectory: String?
    }

    /// Replaces the database and assets of `dataDirectory` (created if
    /// missing) with the backup in `backup`, once ``check(backup:)`` passes.
    ///
    /// No server may use the directory meanwhile (the caller holds its
    /// lock). The backup is first copied beside the data and synced; then
    /// the old database and assets are moved into `replaced-<time>` and the
    /// copies renamed into place. A failure before the end moves the old
    /// data back; a crash leaves ``restoreMarkerName``, which names both
    /// directories and makes servers refuse the directory until a restore
    /// finishes. Everything it writes, the data directory included, is
    /// the server's alone: directories 0700 and files 0600 (``PrivateFiles``).
    public static func restore(backup: String, into dataDirectory: String) async throws -> Restoration {
        let summary = try await check(backup: backup)
        let marker = dataDirectory + "/" + restoreMarkerName
        let earlier = (try? String(contentsOfFile: marker, encoding: .utf8))?.split(separator: "\n")
        let stamp = Self.stamp()
        let staging = dataDirectory + "/restoring-" + stamp
        // A restore cut short named where it had put the data it replaced: keep it all there.
        let aside =
            earlier?.first { $0.hasPrefix("replaced: ") }.map { String($0.dropFirst(10)) }
            ?? dataDirectory + "/replaced-" + stamp
        let abandoned = earlier?.first { $0.hasPrefix("staging: ") }.map { String($0.dropFirst(9)) }
        let wasCutShort = earlier != nil
        try await onPool {
            try PrivateFiles.createDirectory(dataDirectory)
            if let abandoned, abandoned.hasPrefix(dataDirectory + "/restoring-") {
                try? FileManager.default.removeItem(atPath: abandoned)
            }
            do {
                try stage(backup, in: staging)
            } catch {
                try? FileManager.default.removeItem(atPath: staging)
                throw error
            }
        }
        try await checkpoint(dataDirectory + "/" + databaseFileName)
        let replaced = try await onPool {
            try writeSynced("staging: \(staging)\nreplaced: \(aside)\n", to: marker, in: dataDirectory)
            let replaced: Bool
            do {
                replaced = try swap(dataDirectory, staging: staging, aside: aside)
            } catch {
                // What was there before is back in place: whole, unless an earlier restore was cut short.
                if !wasCutShort { _ = unlink(marker) }
                try? FileManager.default.removeItem(atPath: staging)
                throw error
            }
            // The restored data is in place; what is left is tidying up, and
            // taking what others could read of an older directory away from them.
            try? FileManager.default.removeItem(atPath: staging)
            _ = unlink(marker)
            try? FileAssetStore.syncDirectory(dataDirectory)
            try PrivateFiles.tighten(dataDirectory)
            return replaced
        }
        return Restoration(summary: summary, replacedDirectory: replaced ? aside : nil)
    }

    /// Copies the backup's database and assets into `staging`, synced and private.
    private static func stage(_ backup: String, in staging: String) throws {
        try PrivateFiles.createDirectory(staging)
        _ = try copySynced(backup + "/" + databaseFileName, to: staging + "/" + databaseFileName)
        let assets = backup + "/" + assetDirectoryName
        if FileManager.default.fileExists(atPath: assets) {
            try PrivateFiles.copyTree(assets, to: staging + "/" + assetDirectoryName)
        } else {
            try PrivateFiles.createDirectory(staging + "/" + assetDirectoryName)
        }
        try syncTree(staging)
    }

    /// Folds the old database's WAL into its file, so that the file moves
    /// aside whole and no `-wal` is left to be read with the new one.
    private static func checkpoint(_ database: String) async throws {
        guard FileManager.default.fileExists(atPath: database + "-wal") else { return }
        if let connection = try? await SQLiteConnection.open(storage: .file(path: database)) {
            _ = try? await connection.query("PRAGMA wal_checkpoint(TRUNCATE)")
            try? await connection.close()
        }
    }

    /// Moves the old data into `aside` and the staged data into place;
    /// returns whether there was old data. A failure moves back what moved.
    private static func swap(_ directory: String, staging: String, aside: String) throws -> Bool {
        let old = [databaseFileName + "-wal", databaseFileName + "-shm", databaseFileName, assetDirectoryName]
            .filter { FileManager.default.fileExists(atPath: directory + "/" + $0) }
        var moved: [(from: String, to: String)] = []
        do {
            if !old.isEmpty {
                try PrivateFiles.createDirectory(aside)
                try FileAssetStore.syncDirectory(directory)
            }
            for name in old {
                try move(directory + "/" + name, to: aside + "/" + name, log: &moved)
            }
            if !old.isEmpty { try FileAssetStore.syncDirectory(aside) }
            for name in [assetDirectoryName, databaseFileName] {
                try move(staging + "/" + name, to: directory + "/" + name, log: &moved)
            }
            try FileAssetStore.syncDirectory(directory)
        } catch {
            for step in moved.reversed() { _ = rename(step.to, step.from) }
            throw error
        }
        return !old.isEmpty
    }

    private static func move(_ from: String, to: String, log: inout [(from: String, to: String)]) throws {
        try FileAssetStore.check(rename(from, to), "rename", from)
        log.append((from, to))
    }

    private static func writeSynced(_ text: String, to path: String, in directory: String) throws {
        try PrivateFiles.writeFile(Array(text.utf8), to: path)
        try FileAssetStore.syncDirectory(directory)
    }

    /// The time, for directory names that sort by it.
    private static func stamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return formatter.string(from: Date()) + "-" + UUID().uuidString.prefix(8).lowercased()
    }
}
