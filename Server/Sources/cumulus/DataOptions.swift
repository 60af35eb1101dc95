import ArgumentParser
import CumulusServer
import Foundation

/// The data directory every command works on.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The data directory; it holds cumulus.sqlite.")
    var data: String = "./cumulus-data"

    /// The store's file, in a data directory created if missing.
    func storePath() throws -> String {
        let directory = URL(fileURLWithPath: data, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("Cannot create the data directory \(data): \(error.localizedDescription)")
        }
        return directory.appendingPathComponent("cumulus.sqlite").path
    }

    /// Opens the service on the data directory's store, runs `body` and
    /// closes the store.
    func withService<T: Sendable>(_ body: (CloudService) async throws -> T) async throws -> T {
        let service = try await CloudService.open(path: storePath())
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
