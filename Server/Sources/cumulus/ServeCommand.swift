import ArgumentParser
import CumulusServer
import Logging

/// `cumulus serve`: runs the record server until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the record server until interrupted.")

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The port to listen on (0: any free port).")
    var port: Int = 8080

    @Option(help: "Seconds from a request's first byte to the end of its headers before it is answered 408.")
    var headerTimeout: Double = Self.seconds(Self.defaults.requestHeadTimeout)

    @Option(help: "Seconds from the end of a request's headers to the end of its body before it is answered 408.")
    var bodyTimeout: Double = Self.seconds(Self.defaults.requestBodyTimeout)

    @Option(help: "Seconds a connection may stay open with no request before it is closed.")
    var idleTimeout: Double = Self.seconds(Self.defaults.idleConnectionTimeout)

    @OptionGroup var data: DataOptions

    /// The configuration whose settings the options default to.
    private static let defaults = ServerConfiguration(logger: Logger(label: "cumulus"))

    func validate() throws {
        for (name, value) in [("header", headerTimeout), ("body", bodyTimeout), ("idle", idleTimeout)] {
            guard value > 0, value <= 86_400 else {
                throw ValidationError("--\(name)-timeout must be more than 0 and at most 86400 seconds.")
            }
        }
    }

    /// The server's configuration from the options.
    func serverConfiguration(logger: Logger) -> ServerConfiguration {
        var configuration = ServerConfiguration(host: host, port: port, logger: logger)
        configuration.requestHeadTimeout = .milliseconds(Int64(headerTimeout * 1000))
        configuration.requestBodyTimeout = .milliseconds(Int64(bodyTimeout * 1000))
        configuration.idleConnectionTimeout = .milliseconds(Int64(idleTimeout * 1000))
        return configuration
    }

    func run() async throws {
        let logger = Logger(label: "cumulus")
        let location = try data.location()
        let service = try await data.openService(logger: logger)
        let server = CumulusHTTPServer(service: service, configuration: serverConfiguration(logger: logger))
        let host = self.host
        do {
            try await server.runUntilTerminated { port in
                logger.info("Cumulus listening on http://\(host):\(port) (\(location))")
            }
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        logger.info("Cumulus stopped")
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
