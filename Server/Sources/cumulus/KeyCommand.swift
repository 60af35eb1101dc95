import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus key add|list|remove`: the server-to-server keys of a container.
struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Manage server-to-server keys.",
        subcommands: [Add.self, List.self, Remove.self])

    struct Add: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a P-256 public key; prints its key ID on the last line.")

        @Option(help: "The container the key signs for.")
        var container: String

        @Option(name: .customLong("public-key"), help: "A PEM file holding the P-256 public key.")
        var publicKey: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let pem: String
            do {
                pem = try String(contentsOfFile: publicKey, encoding: .utf8)
            } catch {
                throw ValidationError("Cannot read \(publicKey): \(error.localizedDescription)")
            }
            let keyID = try await data.withService {
                try await $0.addServerKey(container: container, publicKeyPEM: pem)
            }
            output.write("Registered a key for \(container). Its key ID:")
            output.write(keyID)
        }
    }

    struct List: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a container's keys: key ID and the SHA-256 of the public key (DER).",
            discussion: "Compare a fingerprint with: openssl pkey -pubin -in KEY.pem -outform DER | sha256sum")

        @Option(help: "The container.")
        var container: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let keys = try await data.withService { try await $0.serverKeys(container: container) }
            guard !keys.isEmpty else {
                output.write("\(container) has no keys.")
                return
            }
            let lines = PrintedTable.lines(
                header: ["KEY ID", "SHA-256 OF THE PUBLIC KEY"], rows: keys.map { [$0.id, $0.fingerprint] })
            for line in lines { output.write(line) }
        }
    }

    struct Remove: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a key; requests it signs fail on every server at once.")

        @Argument(help: "The key ID.")
        var keyID: String

        @Option(help: "The container the key signs for.")
        var container: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            try await data.withService { try await $0.removeServerKey(id: keyID, container: container) }
            output.write("Removed the key \(keyID) of \(container).")
        }
    }
}
