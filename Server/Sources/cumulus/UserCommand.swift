import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus user add|list|remove|block|unblock|blocked`: the users of a container.
struct UserCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user", abstract: "Manage users.",
        subcommands: [Add.self, List.self, Remove.self, Block.self, Unblock.self, Blocked.self])

    /// `cumulus user add NAME --container NAME [--display-name TEXT] [--email ADDRESS [--not-discoverable]]
    /// [--token-lifetime DURATION]`: creates a user and prints the web auth token on the last line.
    struct Add: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a user; prints the web auth token on the last line.")

        @Argument(help: "The user's name.")
        var name: String

        @Option(help: "The container the user belongs to.")
        var container: String

        @Option(
            name: [.customLong("display-name"), .customLong("name")],
            help:
                "The name other users see, e.g. \"Alice Example\": in lookups and in the shares the user owns or joins."
        )
        var displayName: String?

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
            let shownName = displayName.map { UserNameComponents(givenName: $0) }
            do {
                _ = try UserNames.checked(shownName)
            } catch {
                throw ValidationError("--display-name: \(error.reason).")
            }
            let user = try await data.withService { service in
                guard let email else {
                    return try await service.addUser(
                        named: name, container: container, tokenLifetime: lifetime, displayName: shownName)
                }
                do {
                    return try await service.addUser(
                        named: name, container: container, emailAddress: email, discoverable: !notDiscoverable,
                        tokenLifetime: lifetime, displayName: shownName)
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
            abstract:
                "List a container's users: name, record name, display name, email, discoverable, the issuer and "
                + "subject each identity user signs in with (marked blocked when blocked), working tokens.")

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
                    user.name, user.recordName, user.nameComponents?.displayName ?? "-", user.emailAddress ?? "-",
                    user.isDiscoverable ? "yes" : "no",
                    user.identities.isEmpty ? "-" : user.identities.map(\.issuer).joined(separator: ", "),
                    user.identities.isEmpty
                        ? "-"
                        : user.identities.map(\.subject).joined(separator: ", ") + (user.isBlocked ? " (blocked)" : ""),
                    String(user.activeTokens),
                ]
            }
            // The count of working tokens stays last, where scripts read it.
            let header = [
                "NAME", "RECORD NAME", "DISPLAY NAME", "EMAIL", "DISCOVERABLE", "ISSUER", "SUBJECT", "TOKENS",
            ]
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
                notification channels. Run it again if it fails half way: it finishes what is left. A user \
                who signs in with an identity provider comes back as a new user with the provider's next \
                token: user block keeps their subject out instead.
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

    /// `cumulus user block --container C --issuer ISS --subject SUB`.
    struct Block: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Keep an issuer's subject out of a container, on every server at once; its data stays.",
            discussion: """
                The subject's identity tokens are refused (403 ACCESS_DENIED) from the next request on, \
                tokens the servers had accepted included; a first sign-in of it creates no user; the web \
                auth tokens of the user it signs in as stop working too. The user's records, zones and \
                shares stay as they are. user unblock lets the same user in again. The subject need not \
                have signed in yet.
                """)

        @Option(help: "The container.")
        var container: String

        @Option(help: "The identity tokens' issuer (iss).")
        var issuer: String

        @Option(help: "The issuer's subject (sub) to keep out.")
        var subject: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let outcome = try await data.withService {
                try await $0.blockIdentity(issuer: issuer, subject: subject, container: container)
            }
            let user = outcome.userRecordName.map { " (user \($0))" } ?? " (it has not signed in yet)"
            let already = outcome.wasBlocked ? " already" : ""
            output.write("Subject \(subject) of \(issuer) is\(already) blocked in \(container)\(user).")
        }
    }

    /// `cumulus user unblock --container C --issuer ISS --subject SUB`.
    struct Unblock: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Let a blocked issuer's subject in again, as the user it was.")

        @Option(help: "The container.")
        var container: String

        @Option(help: "The identity tokens' issuer (iss).")
        var issuer: String

        @Option(help: "The issuer's subject (sub) to let in.")
        var subject: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let unblocked = try await data.withService {
                try await $0.unblockIdentity(issuer: issuer, subject: subject, container: container)
            }
            guard unblocked else {
                throw ValidationError("Subject \(subject) of \(issuer) is not blocked in \(container).")
            }
            output.write("Subject \(subject) of \(issuer) may sign in to \(container) again.")
        }
    }

    /// `cumulus user blocked --container C`.
    struct Blocked: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a container's blocked issuers' subjects: issuer, subject, when blocked.")

        @Option(help: "The container.")
        var container: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let blocked = try await data.withService { try await $0.blockedIdentities(container: container) }
            guard !blocked.isEmpty else {
                output.write("\(container) has no blocked identities.")
                return
            }
            let rows = blocked.map { [$0.issuer, $0.subject, PrintedDate.text(milliseconds: $0.blocked)] }
            for line in PrintedTable.lines(header: ["ISSUER", "SUBJECT", "BLOCKED"], rows: rows) { output.write(line) }
        }
    }
}
