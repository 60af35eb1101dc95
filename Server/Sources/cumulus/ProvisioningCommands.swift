import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus container add NAME`: creates a container and prints its API
/// token on the last line.
struct ContainerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "container", abstract: "Manage containers.", subcommands: [Add.self])

    struct Add: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a container; prints its API token on the last line.")

        @Argument(help: "The container's name, e.g. iCloud.com.example.notes.")
        var name: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let token = try await data.withService { try await $0.addContainer(named: name) }
            output.write("Created container \(name). Its API token:")
            output.write(token)
        }
    }
}

/// `cumulus user add NAME --container NAME [--email ADDRESS [--not-discoverable]]`:
/// creates a user and prints the web auth token on the last line.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Manage users.", subcommands: [Add.self])

    struct Add: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a user; prints the web auth token on the last line.")

        @Argument(help: "The user's name.")
        var name: String

        @Option(help: "The container the user belongs to.")
        var container: String

        @Option(help: "An email address by which the container's other users find the user and invite them to shares.")
        var email: String?

        @Flag(help: "Keep the user out of lookups by email address and record name (invitations still reach them).")
        var notDiscoverable = false

        @OptionGroup var data: DataOptions

        func validate() throws {
            if notDiscoverable && email == nil {
                throw ValidationError("--not-discoverable needs --email.")
            }
        }

        func run(output: CommandOutput) async throws {
            let user = try await data.withService { service in
                guard let email else { return try await service.addUser(named: name, container: container) }
                do {
                    return try await service.addUser(
                        named: name, container: container, emailAddress: email, discoverable: !notDiscoverable)
                } catch let error as CloudError where error.code == .badRequest {
                    throw ValidationError("--email: \(error.reason).")
                }
            }
            let address = email.map { " with the email address \($0)" } ?? ""
            output.write(
                "Created user \(name) (\(user.userRecordName)) in \(container)\(address). Its web auth token:")
            output.write(user.webAuthToken)
        }
    }
}

/// `cumulus key add --container NAME --public-key FILE.pem`: registers a
/// server-to-server key and prints its key ID on the last line.
struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Manage server-to-server keys.", subcommands: [Add.self])

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
}
