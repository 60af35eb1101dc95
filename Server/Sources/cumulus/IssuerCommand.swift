import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus issuer add|list|remove`: the identity providers whose tokens
/// (JWT) sign users in to a container. Issuers are kept in storage, so
/// every server on it uses them.
struct IssuerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "issuer", abstract: "Manage the identity providers whose tokens sign users in.",
        subcommands: [Add.self, List.self, Remove.self])

    /// `cumulus issuer add --container C --issuer ISS --audience AUD … (--jwks-url URL | --jwks-file FILE)`.
    struct Add: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept an issuer's identity tokens for a container, or replace its settings.",
            discussion: """
                A token is accepted when its iss is the issuer, its aud one of the audiences, and it is \
                signed with a key of the issuer's key set: stored from --jwks-file now (run the command \
                again to replace the keys), or fetched from --jwks-url by each server.
                """)

        @Option(help: "The container whose users the tokens sign in.")
        var container: String

        @Option(help: "The tokens' issuer (iss), e.g. https://appleid.apple.com.")
        var issuer: String

        @Option(help: "An audience (aud) the tokens may carry, e.g. an app's bundle ID; repeat for more.")
        var audience: [String] = []

        @Option(
            name: .customLong("jwks-url"), help: "The URL of the issuer's key set (JWKS): https, or http on loopback.")
        var jwksURL: String?

        @Option(name: .customLong("jwks-file"), help: "A file holding the issuer's key set (JWKS), stored now.")
        var jwksFile: String?

        @OptionGroup var data: DataOptions

        func validate() throws {
            guard !audience.isEmpty else { throw ValidationError("Give at least one --audience.") }
            guard (jwksURL == nil) != (jwksFile == nil) else {
                throw ValidationError("Give exactly one of --jwks-url and --jwks-file.")
            }
        }

        func run(output: CommandOutput) async throws {
            var keySet: String?
            if let jwksFile {
                do {
                    keySet = try String(contentsOfFile: jwksFile, encoding: .utf8)
                } catch {
                    throw ValidationError("Cannot read \(jwksFile): \(error.localizedDescription)")
                }
            }
            let row = StoredIdentityIssuer(issuer: issuer, audiences: audience, keySetURL: jwksURL, keySet: keySet)
            let keys = try await data.withService { service in
                do {
                    return try await service.addIdentityIssuer(row, container: container)
                } catch let error as CloudError where error.code == .badRequest {
                    throw ValidationError("\(error.reason).")
                }
            }
            let source = keys.map { "\($0) key\($0 == 1 ? "" : "s") stored" } ?? "keys from \(jwksURL ?? "")"
            output.write("Issuer \(issuer) signs users in to \(container) (\(source)).")
        }
    }

    /// `cumulus issuer list --container C`.
    struct List: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a container's issuers: one a line, with audiences and where the keys are.")

        @Option(help: "The container.")
        var container: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let issuers = try await data.withService { try await $0.identityIssuers(container: container) }
            guard !issuers.isEmpty else {
                output.write("\(container) has no issuers.")
                return
            }
            for issuer in issuers {
                let keys = issuer.keySetURL.map { "keys from \($0)" } ?? "stored keys"
                output.write("\(issuer.issuer)\taudiences: \(issuer.audiences.joined(separator: ", "))\t\(keys)")
            }
        }
    }

    /// `cumulus issuer remove --container C --issuer ISS`.
    struct Remove: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop accepting an issuer's tokens for a container; its users stay.")

        @Option(help: "The container.")
        var container: String

        @Option(help: "The issuer (iss) to remove.")
        var issuer: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let removed = try await data.withService {
                try await $0.removeIdentityIssuer(issuer, container: container)
            }
            guard removed else { throw ValidationError("\(container) has no issuer \(issuer).") }
            output.write("Issuer \(issuer) no longer signs users in to \(container).")
        }
    }
}
