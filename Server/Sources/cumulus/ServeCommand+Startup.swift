import CumulusServer
import Foundation
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension ServeCommand {
    /// Logs how many containers the store holds, and what to do when it holds none.
    func reportContainers(of service: CloudService, logger: Logger) async throws {
        let count = try await service.containerCount()
        guard count == 0 else {
            logger.info("Serving \(count) container\(count == 1 ? "" : "s")")
            return
        }
        let store = try data.postgresURL() == nil ? "--data \(data.directory)" : "--postgres URL"
        logger.warning(
            "Serving no container: every request will be refused. Create one with: cumulus container add NAME \(store)"
        )
    }

    /// Takes away from the group and others what they could read of the
    /// data directory (an older server made it 0755 and its files 0644),
    /// and says so: every user's records, the credentials' hashes and the
    /// secret that signs download URLs are in it.
    func tightenDataDirectory(logger: Logger) throws {
        let directory = data.directory
        let changed: [String]
        do {
            changed = try PrivateFiles.tighten(directory)
        } catch {
            throw CommandFailure("Cannot make the data directory \(directory) private: \(DataOptions.reason(error))")
        }
        guard !changed.isEmpty else { return }
        let prefix = directory + "/"
        let names = changed.prefix(5).map { $0 == directory ? "." : String($0.dropFirst(prefix.count)) }
        let paths = changed.count == 1 ? "path" : "paths"
        logger.warning(
            """
            Tightened the data directory \(directory): \(changed.count) \(paths) other accounts could read \
            made 0700 (directories) or 0600 (files)
            """,
            metadata: ["paths": "\(names.joined(separator: ", "))\(changed.count > 5 ? ", …" : "")"])
    }

    /// Serves until SIGINT or SIGTERM; a failure to listen is one line
    /// naming the address, not the socket call.
    func listen(service: CloudService, configuration: ServerConfiguration, location: String) async throws {
        let server = CumulusHTTPServer(service: service, configuration: configuration)
        let (host, scheme, logger) = (self.host, network.scheme, configuration.logger)
        let console = configuration.console != nil
        let listening = ListeningFlag()
        do {
            try await server.runUntilTerminated { port in
                listening.value.withLock { $0 = true }
                logger.info("Cumulus \(CumulusVersion.current) listening on \(scheme)://\(host):\(port) (\(location))")
                if console { logger.info("Console at \(scheme)://\(host):\(port)/console/") }
            }
        } catch  where !listening.value.withLock({ $0 }) {
            throw CommandFailure("Cannot listen on \(host):\(port): \(Self.reason(error)).")
        }
    }

    /// Why listening failed, in words: the system's for a failed call.
    static func reason(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return String(describing: error)
    }
}

/// Whether the server got as far as listening: a failure before is one to listen.
private final class ListeningFlag: Sendable {
    let value = Mutex(false)
}
