import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus backup DIR`: a consistent copy of a SQLite data directory,
/// taken while `cumulus serve` runs on it.
struct BackupCommand: PrintingCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the data directory's database and assets into DIR while the server runs.",
        discussion: "With PostgreSQL, back up the database with pg_dump instead: it holds the assets too.")

    @Argument(help: "A new or empty directory to write the backup into.")
    var destination: String

    @OptionGroup var data: DataOptions

    func run(output: CommandOutput) async throws {
        if try data.postgresURL() != nil { throw Self.postgresRefusal("backup") }
        _ = try data.storePath(creating: false)
        let destination = URL(fileURLWithPath: destination).standardizedFileURL.path
        let summary: SQLiteBackup.Summary
        do {
            summary = try await SQLiteBackup.backUp(dataDirectory: data.directory, into: destination)
        } catch let error as CloudError {
            throw CommandFailure("The backup failed: \(error.reason).")
        }
        output.write(
            "Backed up \(data.directory) into \(destination): schema version \(summary.schemaVersion), "
                + "\(summary.assetCount) asset files (\(summary.assetBytes) bytes).")
    }

    /// The refusal of `command` on PostgreSQL, with what to do instead.
    static func postgresRefusal(_ command: String) -> CommandFailure {
        CommandFailure(
            "cumulus \(command) works on a SQLite data directory. On PostgreSQL everything, assets included, is in the "
                + "database: use pg_dump --format=custom and pg_restore (see the README's Backups).")
    }
}

/// `cumulus restore DIR`: replaces a data directory's database and assets
/// with a backup, while no server runs on it.
struct RestoreCommand: PrintingCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Replace the data directory's database and assets with the backup in DIR.",
        discussion: "The server must be stopped; the data replaced is kept in a replaced-<time> directory beside it.")

    @Argument(help: "The directory cumulus backup wrote.")
    var backup: String

    @OptionGroup var data: DataOptions

    func run(output: CommandOutput) async throws {
        if try data.postgresURL() != nil { throw BackupCommand.postgresRefusal("restore") }
        let backup = URL(fileURLWithPath: backup).standardizedFileURL.path
        let directory = data.directory
        do {
            try PrivateFiles.createDirectory(directory)
        } catch {
            throw CommandFailure("Cannot create the data directory \(directory): \(DataOptions.reason(error))")
        }
        let restoration: SQLiteBackup.Restoration
        do {
            restoration = try await DataDirectoryLock.withLock(directory: directory) {
                try await SQLiteBackup.restore(backup: backup, into: directory)
            }
        } catch let error as CloudError {
            throw CommandFailure("Nothing was restored: \(error.reason).")
        }
        let summary = restoration.summary
        output.write(
            "Restored \(backup) into \(directory): schema version \(summary.schemaVersion), "
                + "\(summary.assetCount) asset files (\(summary.assetBytes) bytes).")
        if let replaced = restoration.replacedDirectory {
            output.write("The data it replaced is in \(replaced); delete it once the server runs well.")
        }
    }
}
