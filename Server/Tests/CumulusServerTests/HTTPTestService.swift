import CumulusServer
import Foundation

/// The service the HTTP tests run over: the SQLite store in `directory`.
func makeTestService(directory: URL) async throws -> any CloudServing {
    throw CocoaError(.featureUnsupported)
}
