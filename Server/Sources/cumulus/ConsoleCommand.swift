import ArgumentParser
import CumulusServer
import Foundation

/// `cumulus console add|list|revoke`: the operator's console tokens, kept
/// hashed in the store beside users' tokens.
struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console", abstract: "Manage the tokens that sign in to the console (serve --console).",
        discussion: """
            The tokens are kept, hashed, in the store (the data directory's database, or PostgreSQL): every \
            server on it signs in with them, and reads them on every sign-in and page, so adding or revoking \
            takes effect at once.
            """,
        subcommands: [Add.self, List.self, Revoke.self])

    struct Add: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a console token; prints it on the last line.")

        @Option(help: "Who holds the token, shown in lists.")
        var label: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let made = try await data.withService { try await $0.addConsoleToken(label: label) }
            output.write("Added console token \(made.details.id) (\(label)). The token:")
            output.write(made.token)
        }
    }

    struct List: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the console tokens: ID, label, created (never the token).")

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let tokens = try await data.withService { try await $0.consoleTokens() }
            guard !tokens.isEmpty else {
                output.write("No console tokens.")
                return
            }
            let rows = tokens.map { [$0.id, $0.label, PrintedDate.text(milliseconds: $0.created)] }
            for line in PrintedTable.lines(header: ["ID", "LABEL", "CREATED"], rows: rows) { output.write(line) }
        }
    }

    struct Revoke: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a console token: its sessions end at their next page, on every server.")

        @Option(help: "The ID of the token, as console list shows it.")
        var id: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            guard let revoked = try await data.withService({ try await $0.revokeConsoleToken(id: id) }) else {
                throw CommandFailure("No console token has the ID \(id).")
            }
            output.write("Revoked console token \(revoked.id) (\(revoked.label)).")
        }
    }
}
