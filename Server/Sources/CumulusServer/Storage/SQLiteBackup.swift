import CloudCodable
import CloudProtocol
import Foundation
import NIOPosix
import SQLiteNIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Backups of a SQLite data directory (`cumulus.sqlite` and the assets'
/// files in `assets`), taken while a server writes to it, and restores.
///
/// A backup is a directory with the same layout. Its database is a
/// snapshot taken with `VACUUM INTO` on a connection of its own, which
/// reads one transaction's view while the server goes on writing (WAL); it
/// holds the asset files that snapshot's rows name. An asset's file is
/// written and synced before its row commits and never changes after, so
/// a file named by a row of the snapshot is whole. The database is renamed
/// into place last: a backup directory without `cumulus.sqlite` is one that
/// did not finish. A backup holds what the data directory holds, so it is
/// as private: directories 0700 and files 0600 (``PrivateFiles``).
public enum SQLiteBackup {
    /// The database file's name in a data or backup directory.
    public static let databaseFileName = "cumulus.sqlite"
    /// The assets' directory's name in a data or backup directory.
    public static let assetDirectoryName = "assets"
    /// The file a restore leaves in a data directory until it has finished:
    /// while it is there, the directory holds neither state for sure.
    public static let restoreMarkerName = "restore-in-progress"

    /// What a backup holds.
    public struct Summary: Sendable, Equatable {
        /// The schema version of its database.
        public var schemaVersion: Int
        /// How many asset files it holds.
        public var assetCount: Int
        /// The asset files' bytes.
        public var assetBytes: Int64
    }

    /// An asset row, as a backup needs it.
    struct AssetRow {
        var id: String
        var size: Int64?
        var isHeld: Bool

        /// Whether its bytes must exist: a held asset whose upload finished.
        var needsBytes: Bool { isHeld && size != nil }
    }

    // MARK: Backing up

    /// Copies the data directory `dataDirectory` into `destination` (a new
    /// or empty directory), synced, without stopping a server using it.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for a destination that is not
    ///   empty; `INTERNAL_ERROR` when a held asset's file is missing.
    public static func backUp(dataDirectory: String, into destination: String) async throws -> Summary {
        let database = dataDirectory + "/" + databaseFileName
        try await onPool { try prepareEmptyDirectory(destination) }
        let partial = destination + "/" + databaseFileName + ".partial"
        // VACUUM INTO fills an empty file: one made 0600 here, whatever the umask.
        PrivateFiles.prepareDatabaseFile(partial)
        let source = try await SQLiteConnection.open(storage: .file(path: database))
        do {
            _ = try await source.query("PRAGMA busy_timeout = 10000")
            _ = try await source.query("VACUUM INTO ?", [.text(partial)])
        } catch {
            try? await source.close()
            throw error
        }
        try await source.close()
        let (version, rows) = try await inspect(partial, integrity: false, makeStandalone: true)
        let from = try FileAssetStore(directory: dataDirectory + "/" + assetDirectoryName)
        let to = try FileAssetStore(directory: destination + "/" + assetDirectoryName)
        let summary = try await onPool {
            var summary = Summary(schemaVersion: version, assetCount: 0, assetBytes: 0)
            for row in rows {
                let source = try from.location(of: row.id).path
                guard FileManager.default.fileExists(atPath: source) else {
                    guard !row.needsBytes else {
                        throw CloudError(
                            .internalError, reason: "the file of the held asset \(row.id) is missing: \(source)")
                    }
                    continue
                }
                let target = try to.location(of: row.id)
                try FileAssetStore.makeFolder(target.folder, in: to.directory)
                summary.assetBytes += try copySynced(source, to: target.path)
                summary.assetCount += 1
            }
            try syncTree(to.directory)
            try syncFile(partial)
            try FileAssetStore.check(rename(partial, destination + "/" + databaseFileName), "rename", partial)
            try FileAssetStore.syncDirectory(destination)
            return summary
        }
        return summary
    }

    // MARK: Checking

    /// Checks the backup in `backup` without changing it: its database is
    /// whole (`PRAGMA integrity_check`), of a schema this server knows, and
    /// every held asset has its file, of its size.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) saying what is wrong.
    public static func check(backup: String) async throws -> Summary {
        let database = backup + "/" + databaseFileName
        guard FileManager.default.fileExists(atPath: database) else {
            throw CloudError(
                .badRequest,
                reason: "\(backup) holds no \(databaseFileName): it is no backup, or one that did not finish")
        }
        let (version, rows) = try await inspect(database, integrity: true, makeStandalone: false)
        let assets = backup + "/" + assetDirectoryName
        return try await onPool {
            var summary = Summary(schemaVersion: version, assetCount: 0, assetBytes: 0)
            let store = try? FileAssetStore(directory: assets)
            for row in rows {
                let path = try store?.location(of: row.id).path ?? ""
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
                if let size {
                    summary.assetCount += 1
                    summary.assetBytes += size
                }
                guard row.needsBytes else { continue }
                guard let size, size == row.size else {
                    throw CloudError(
                        .badRequest,
                        reason: "the backup's file of asset \(row.id) is "
                            + (size.map { "\($0) bytes, not \(row.size ?? 0)" } ?? "missing") + " (\(path))")
                }
            }
            return summary
        }
    }

    /// The schema version and asset rows of the database file at `path`,
    /// checked whole when `integrity` is set; `makeStandalone` turns a
    /// snapshot into one file (no `-wal` beside it when it is opened).
    static func inspect(_ path: String, integrity: Bool, makeStandalone: Bool) async throws -> (Int, [AssetRow]) {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        do {
            let result = try await inspect(connection, integrity: integrity, makeStandalone: makeStandalone)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private static func inspect(_ connection: SQLiteConnection, integrity: Bool, makeStandalone: Bool)
        async throws -> (Int, [AssetRow])
    {
        if makeStandalone { _ = try await connection.query("PRAGMA journal_mode=DELETE") }
        if integrity {
            let problems = try await connection.query("PRAGMA integrity_check").compactMap {
                $0.column("integrity_check")?.string
            }
            guard problems == ["ok"] else {
                throw CloudError(
                    .badRequest,
                    reason: "the backup's database is damaged: \(problems.prefix(3).joined(separator: "; "))")
            }
        }
        guard
            case .integer(let version) = try await connection.query("PRAGMA user_version").first?.column(
                "user_version"), version > 0
        else {
            throw CloudError(.badRequest, reason: "the backup's database holds no Cumulus schema")
        }
        guard version <= SQLiteSchema.version else {
            throw CloudError(
                .badRequest,
                reason: "the backup's database has schema version \(version); this server knows \(SQLiteSchema.version)"
            )
        }
        // Version six brought assets.
        guard version >= 6 else { return (Int(version), []) }
        let rows = try await connection.query("SELECT CAST(id AS BLOB) AS id, size, unheld_since FROM assets")
        let assets = try rows.map { row in
            guard case .blob(let id) = row.column("id"),
                let text = String(validating: id.readableBytesView, as: UTF8.self)
            else {
                throw CloudError(.badRequest, reason: "the backup's database has an asset without an id")
            }
            var size: Int64?
            if case .integer(let value) = row.column("size") { size = Int64(value) }
            return AssetRow(id: text, size: size, isHeld: row.column("unheld_since") == .null)
        }
        return (Int(version), assets)
    }

    // MARK: Files

    /// Runs blocking file calls on NIO's thread pool, off the tasks' threads.
    static func onPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }

    /// Creates `path` (and its parents) 0700 if missing; refuses one that
    /// is not an empty directory, and makes an empty one 0700: it is the
    /// backup's now.
    static func prepareEmptyDirectory(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue, try FileManager.default.contentsOfDirectory(atPath: path).isEmpty else {
                throw CloudError(.badRequest, reason: "\(path) is not an empty directory; a backup goes into a new one")
            }
            try PrivateFiles.tighten(path)
            return
        }
        try PrivateFiles.createDirectory(path)
        try FileAssetStore.syncDirectory(URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// Copies the file at `source` to `target` (which must not exist, and
    /// is made 0600) and syncs it; returns its size.
    static func copySynced(_ source: String, to target: String) throws -> Int64 {
        try PrivateFiles.copyFile(source, to: target)
    }

    static func syncFile(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try FileAssetStore.check(descriptor, "open", path)
        defer { close(descriptor) }
        try FileAssetStore.check(fsync(descriptor), "fsync", path)
    }

    /// Syncs every file and directory under `directory`, and it.
    static func syncTree(_ directory: String) throws {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return }
        var folders = [directory]
        while let relative = walker.nextObject() as? String {
            let path = directory + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue { folders.append(path) } else { try syncFile(path) }
        }
        for folder in folders { try FileAssetStore.syncDirectory(folder) }
    }
}
