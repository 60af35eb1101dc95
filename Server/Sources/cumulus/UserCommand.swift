import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus user add|list|remove`: the users of a container.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Manage users.", subcommands: [Add.self, List.self, Remove.self])

    /// `cumulus user add NAME --container NAME [--email ADDRESS [--not-discoverable]] [--token-lifetime DURATION]`:
    /// creates a user and prints the web auth token on the last line.
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

        @Option(help: "How long the web auth token works: 12h, 30d, 2w... (default: until revoked).")
        var tokenLifetime: DurationOption?

        @OptionGroup var data: DataOptions

        func validate() throws {
            if notDiscoverable && email == nil {
                throw ValidationError("--not-discoverable needs --email.")
            }
            if let tokenLifetime, tokenLifetime.duration == .zero {
                throw ValidationError("--token-lifetime must be more than 0.")
            }
        }

        func run(output: CommandOutput) async throws {
            let lifetime = tokenLifetime?.duration
            let user = try await data.withService { service in
                guard let email else {
                    return try await service.addUser(named: name, container: container, tokenLifetime: lifetime)
                }
                do {
                    return try await service.addUser(
                        named: name, container: container, emailAddress: email, discoverable: !notDiscoverable,
                        tokenLifetime: lifetime)
                } catch let error as CloudError where error.code == .badRequest {
                    throw ValidationError("--email: \(error.reason).")
                }
            }
            let address = email.map { " with the email address \($0)" } ?? ""
            let expiry = tokenLifetime.map { " (it expires in \($0.description))" } ?? ""
            output.write(
                "Created user \(name) (\(user.userRecordName)) in \(container)\(address). Its web auth token\(expiry):")
            output.write(user.webAuthToken)
        }
    }

    /// `cumulus user list --container NAME`.
    struct List: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a container's users: name, record name, email, discoverable, working tokens.")

        @Option(help: "The container.")
        var container: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let users = try await data.withService { try await $0.users(container: container) }
            guard !users.isEmpty else {
                output.write("\(container) has no users.")
                return
            }
            let rows = users.map { user in
                [
                    user.name, user.recordName, user.emailAddress ?? "-", user.isDiscoverable ? "yes" : "no",
                    String(user.activeTokens),
                ]
            }
            let header = ["NAME", "RECORD NAME", "EMAIL", "DISCOVERABLE", "TOKENS"]
            for line in PrintedTable.lines(header: header, rows: rows) { output.write(line) }
        }
    }

    /// `cumulus user remove NAME --container NAME --keep-data|--delete-data`.
    struct Remove: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a user: their tokens fail on every server at once; their data is kept or deleted.",
            discussion: """
                --keep-data leaves the user's records, zones and shares as they are (participants keep their \
                access). --delete-data deletes their private zones, the shares they own (participants lose \
                them), their public records, their place in others' shares, their subscriptions and \
                notification channels. Run it again if it fails half way: it finishes what is left.
                """)

        @Argument(help: "The user's name.")
        var name: String

        @Option(help: "The container the user belongs to.")
        var container: String

        @Flag(help: "Keep the user's data.")
        var keepData = false

        @Flag(help: "Delete the user's data.")
        var deleteData = false

        @OptionGroup var data: DataOptions

        func validate() throws {
            guard keepData != deleteData else {
                throw ValidationError("Say what happens to the user's data: --keep-data or --delete-data.")
            }
        }

        func run(output: CommandOutput) async throws {
            let removed = try await data.withService { service in
                try await service.removeUser(named: name, container: container, deletingData: deleteData)
            }
            let tokens = "revoked \(removed.revokedTokens) web auth token\(removed.revokedTokens == 1 ? "" : "s")"
            guard let deletion = removed.deletion else {
                output.write(
                    "Removed user \(name) (\(removed.recordName)) from \(container): \(tokens); kept the data.")
                return
            }
            output.write(
                "Removed user \(name) (\(removed.recordName)) from \(container): \(tokens); deleted \(deletion.zones) "
                    + "zones, \(deletion.publicRecords) public records and \(deletion.subscriptions) subscriptions, "
                    + "and left \(deletion.sharesLeft) shares.")
        }
    }
}
