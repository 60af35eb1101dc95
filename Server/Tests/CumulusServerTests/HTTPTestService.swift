import CumulusServer
import Foundation

/// The service the HTTP tests run over: the SQLite store in `directory`,
/// where `cumulus` keeps it.
func makeTestService(directory: URL) async throws -> CloudService {
    try await CloudService.open(path: directory.appendingPathComponent("cumulus.sqlite").path, logger: quietLogger)
}
