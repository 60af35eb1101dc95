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

    @OptionGroup var data: DataOptions

    func run() async throws {
        let logger = Logger(label: "cumulus")
        let location = try data.location()
        let service = try await data.openService()
        let server = CumulusHTTPServer(
            service: service, configuration: ServerConfiguration(host: host, port: port, logger: logger))
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
}
