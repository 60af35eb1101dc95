import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus token add|list|revoke`: the web auth tokens of users, several
/// per user (one per device), each with an optional expiry.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Manage users' web auth tokens.",
        subcommands: [Add.self, List.self, Revoke.self])

    struct Add: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a user another web auth token; prints it on the last line.")

        @Option(help: "The user's name.")
        var user: String

        @Option(help: "The container the user belongs to.")
        var container: String

        @Option(help: "How long the token works: 12h, 30d, 2w... (default: until revoked).")
        var expiresIn: DurationOption?

        @OptionGroup var data: DataOptions

        func validate() throws {
            if let expiresIn, expiresIn.duration == .zero { throw ValidationError("--expires-in must be more than 0.") }
        }

        func run(output: CommandOutput) async throws {
            let lifetime = expiresIn?.duration
            let made = try await data.withService { service in
                try await service.addWebAuthToken(forUser: user, container: container, lifetime: lifetime)
            }
            let expiry = made.details.expires.map { "expires \(PrintedDate.text(milliseconds: $0))" } ?? "never expires"
            output.write("Added token \(made.details.id) for \(user) in \(container); it \(expiry). The token:")
            output.write(made.webAuthToken)
        }
    }

    struct List: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "List a user's web auth tokens: ID, created, expires (never the token).")

        @Option(help: "The user's name.")
        var user: String

        @Option(help: "The container the user belongs to.")
        var container: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let tokens = try await data.withService { try await $0.webAuthTokens(ofUser: user, container: container) }
            guard !tokens.isEmpty else {
                output.write("\(user) has no web auth tokens.")
                return
            }
            let now = ServerTime.milliseconds(Date())
            let rows = tokens.map { token -> [String] in
                let expires = token.expires.map {
                    PrintedDate.text(milliseconds: $0) + (token.isExpired(at: now) ? " (expired)" : "")
                }
                return [token.id, PrintedDate.text(milliseconds: token.created), expires ?? "never"]
            }
            for line in PrintedTable.lines(header: ["ID", "CREATED", "EXPIRES"], rows: rows) { output.write(line) }
        }
    }

    struct Revoke: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke web auth tokens; they fail on every server at once.",
            discussion: """
                Name the token by its ID (token list), by the token itself read from standard input \
                (--token-stdin, so that it stays out of the shell's history), or revoke all of a user's (--user).
                """)

        @Option(help: "The container the tokens belong to.")
        var container: String

        @Option(help: "The ID of the token to revoke, as token list shows it.")
        var id: String?

        @Option(help: "Revoke every token of this user.")
        var user: String?

        @Flag(help: "Read the token to revoke from standard input.")
        var tokenStdin = false

        @OptionGroup var data: DataOptions

        func validate() throws {
            let chosen = [id != nil, user != nil, tokenStdin].filter { $0 }.count
            guard chosen == 1 else { throw ValidationError("Give exactly one of --id, --user and --token-stdin.") }
        }

        func run(output: CommandOutput) async throws {
            try await run(output: output) { readLine(strippingNewline: true) }
        }

        /// Runs the command, reading a token from `input` for `--token-stdin`.
        func run(output: CommandOutput, input: () -> String?) async throws {
            if let user {
                let revoked = try await data.withService {
                    try await $0.revokeWebAuthTokens(ofUser: user, container: container)
                }
                output.write("Revoked \(revoked.count) web auth token\(revoked.count == 1 ? "" : "s") of \(user).")
                return
            }
            if let id {
                let revoked = try await data.withService {
                    try await $0.revokeWebAuthToken(id: id, container: container)
                }
                output.write("Revoked token \(revoked.id) of \(revoked.userRecordName).")
                return
            }
            let token = (input() ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw ValidationError("No token on standard input.") }
            let revoked = try await data.withService { try await $0.revokeWebAuthToken(token, container: container) }
            output.write("Revoked token \(revoked.id) of \(revoked.userRecordName).")
        }
    }
}
