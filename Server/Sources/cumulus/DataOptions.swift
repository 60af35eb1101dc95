import ArgumentParser
import Cumulus
import CumulusServer
import Foundation
import Logging

/// Where every command keeps the data: the SQLite file of a data
/// directory, or a PostgreSQL database that several servers share.
struct DataOptions: ParsableArguments {
    /// The environment variable that selects PostgreSQL when `--postgres` is absent.
    static let postgresVariable = "CUMULUS_POSTGRES_URL"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The data directory; it holds cumulus.sqlite and the assets' files.",
            discussion: "serve creates it; the other commands refuse one that holds no database."))
    var data: String = "./cumulus-data"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A PostgreSQL database to keep the data in instead of --data, e.g. postgres://user:password@host:5432/db.",
            discussion: "CUMULUS_POSTGRES_URL does the same; this option wins."))
    var postgres: String?

    func validate() throws {
        _ = try postgresURL()
    }

    /// The PostgreSQL database selected by `--postgres` or
    /// `CUMULUS_POSTGRES_URL` in `environment`, or `nil` for the SQLite file.
    func postgresURL(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PostgresURL? {
        let flag = postgres.flatMap { $0.isEmpty ? nil : $0 }
        let variable = environment[Self.postgresVariable].flatMap { $0.isEmpty ? nil : $0 }
        guard let text = flag ?? variable else { return nil }
        do {
            return try PostgresURL(text)
        } catch let error as CloudError {
            let source = flag == nil ? Self.postgresVariable : "--postgres"
            throw ValidationError("\(source) is not a valid PostgreSQL URL: \(error.reason)")
        }
    }

    /// Where the data is, for the log (a PostgreSQL URL without its password).
    func location() throws -> String {
        if let url = try postgresURL() { return "postgres: \(url)" }
        return "data: \(directory)"
    }

    /// The data directory as an absolute path, for messages and the lock.
    var directory: String {
        URL(fileURLWithPath: data, isDirectory: true).standardizedFileURL.path
    }

    /// The store's file, in a data directory created if missing (0700,
    /// see ``PrivateFiles``) when `creating`; else one without a database is refused, so that a
    /// command given the wrong directory (or none) does not quietly make an
    /// empty one.
    func storePath(creating: Bool) throws -> String {
        let directory = self.directory
        let path = directory + "/" + SQLiteBackup.databaseFileName
        if FileManager.default.fileExists(atPath: directory + "/" + SQLiteBackup.restoreMarkerName) {
            throw CommandFailure(
                "A restore into \(directory) did not finish (\(SQLiteBackup.restoreMarkerName) says where the data "
                    + "is); run cumulus restore again before using it.")
        }
        guard creating else {
            guard FileManager.default.fileExists(atPath: path) else {
                throw CommandFailure(
                    "No Cumulus database in \(directory) (no \(SQLiteBackup.databaseFileName) there). Pass --data "
                        + "the directory cumulus serve uses, or --postgres; cumulus serve --data \(directory) creates one."
                )
            }
            return path
        }
        do {
            try PrivateFiles.createDirectory(directory)
        } catch {
            throw CommandFailure("Cannot create the data directory \(directory): \(Self.reason(error))")
        }
        return path
    }

    /// What went wrong, in words: a ``CloudError``'s reason, else the error's description.
    static func reason(_ error: any Error) -> String {
        (error as? CloudError)?.reason ?? error.localizedDescription
    }

    /// Opens the service on PostgreSQL (bounded by `postgresLimits`) when
    /// one is selected, else on the data directory's SQLite file with the
    /// assets' files in its `assets` directory, created only when
    /// `creating`; its storage logs to `logger`, and share and asset URLs
    /// start with `publicURL`.
    func openService(
        logger: Logger, postgresLimits: PostgresStorage.Limits = PostgresStorage.Limits(), publicURL: String? = nil,
        assetSettings: AssetSettings = AssetSettings(), creating: Bool = false
    ) async throws -> CloudService {
        if let url = try postgresURL() {
            return try await CloudService.open(
                postgres: url, limits: postgresLimits, publicURL: publicURL, assetSettings: assetSettings,
                logger: logger)
        }
        let path = try storePath(creating: creating)
        let assets = directory + "/" + SQLiteBackup.assetDirectoryName
        return try await CloudService.open(
            path: path, assetDirectory: assets, publicURL: publicURL, assetSettings: assetSettings, logger: logger)
    }

    /// Opens the service on an existing store, runs `body` and closes the store.
    func withService<T: Sendable>(_ body: (CloudService) async throws -> T) async throws -> T {
        let service = try await openService(logger: Logger(label: "cumulus"))
        do {
            let result = try await body(service)
            try await service.close()
            return result
        } catch {
            try? await service.close()
            throw error
        }
    }
}
