import ArgumentParser
import CumulusServer
import Foundation

/// The options of `cumulus serve` that make it safe to put on a network:
/// TLS and the request limits.
struct NetworkOptions: ParsableArguments {
    @Option(
        name: .customLong("tls-certificate"),
        help: ArgumentHelp(
            "A PEM file of the server's TLS certificate, then its intermediates; with --tls-key, the port speaks HTTPS.",
            valueName: "pem"))
    var tlsCertificate: String?

    @Option(
        name: .customLong("tls-key"),
        help: ArgumentHelp("The PEM file of the certificate's private key.", valueName: "pem"))
    var tlsKey: String?

    @Option(
        help: ArgumentHelp(
            "Requests from one client address, as RATE:BURST (per second : at once), or off.", valueName: "rate:burst"))
    var addressRateLimit: LimitArgument = LimitArgument(RateLimits().perAddress)

    @Option(
        help: ArgumentHelp(
            "Database requests from one signed-in user of a container, as RATE:BURST, or off.",
            valueName: "rate:burst"))
    var userRateLimit: LimitArgument = LimitArgument(RateLimits().perUser)

    @Option(
        help: ArgumentHelp(
            "Failed authentications from one address, as RATE:BURST, or off.",
            discussion: "Once spent, credentials from the address that the server has not found valid lately wait.",
            valueName: "rate:burst"))
    var failedAuthLimit: LimitArgument = LimitArgument(RateLimits().failedAuthentications)

    @Option(
        help: ArgumentHelp(
            "A reverse proxy's IP address whose X-Forwarded-For names the client (repeatable).",
            discussion:
                "Its last address counts against the limits instead of the proxy's. Only for proxies that set it.",
            valueName: "address"))
    var trustedProxy: [String] = []

    @Option(help: "The most clients each request limit remembers.")
    var rateLimitClients: Int = RateLimits().trackedClients

    func validate() throws {
        switch (tlsCertificate, tlsKey) {
        case (nil, nil): break
        case (_?, nil): throw ValidationError("--tls-certificate needs --tls-key.")
        case (nil, _?): throw ValidationError("--tls-key needs --tls-certificate.")
        case (let certificate?, let key?):
            do {
                _ = try ServerTLS(certificateChainFile: certificate, privateKeyFile: key)
            } catch {
                throw ValidationError(error.message)
            }
        }
        do {
            _ = try rateLimits().normalizedTrustedProxies()
        } catch {
            throw ValidationError("--trusted-proxy: \(error.message)")
        }
        guard rateLimitClients >= 1 else { throw ValidationError("--rate-limit-clients must be at least 1.") }
    }

    /// The scheme the server speaks.
    var scheme: String { tlsCertificate == nil ? "http" : "https" }

    /// TLS from the options, `nil` without them.
    func tls() throws -> ServerTLS? {
        guard let tlsCertificate, let tlsKey else { return nil }
        return try ServerTLS(certificateChainFile: tlsCertificate, privateKeyFile: tlsKey)
    }

    /// The request limits from the options.
    func rateLimits() -> RateLimits {
        RateLimits(
            perAddress: addressRateLimit.limit, perUser: userRateLimit.limit,
            failedAuthentications: failedAuthLimit.limit,
            trustedProxies: trustedProxy, trackedClients: rateLimitClients)
    }
}

/// A request limit on the command line: `RATE:BURST`, or `off`.
struct LimitArgument: ExpressibleByArgument, Sendable {
    let limit: RateLimit?

    init(_ limit: RateLimit?) {
        self.limit = limit
    }

    init?(argument: String) {
        if argument == "off" {
            limit = nil
        } else if let limit = RateLimit(parsing: argument) {
            self.limit = limit
        } else {
            return nil
        }
    }

    var defaultValueDescription: String { limit?.description ?? "off" }
}
