import ArgumentParser
import CumulusServer
import Foundation

/// `cumulus`: runs the record server and provisions its containers, users
/// and keys. A new subcommand is one type added to `subcommands`.
@main
struct CumulusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cumulus",
        abstract: "The Cumulus record server.",
        version: CumulusVersion.current,
        subcommands: [
            ServeCommand.self, ContainerCommand.self, UserCommand.self, TokenCommand.self, KeyCommand.self,
            IssuerCommand.self, SchemaCommand.self, BackupCommand.self, RestoreCommand.self, DemoCommand.self,
            ConsoleCommand.self,
        ])
}

/// Where a command writes what it prints, so that tests can read it.
struct CommandOutput: Sendable {
    let write: @Sendable (String) -> Void

    /// Standard output, a line at a time even into a pipe or a file: a
    /// long-running command (`demo --server`) is read while it runs.
    static let standard = CommandOutput { line in
        print(line)
        fflush(nil)
    }
}

/// A command that prints through a ``CommandOutput``: `run()` prints to
/// standard output, tests call `run(output:)`.
protocol PrintingCommand: AsyncParsableCommand {
    func run(output: CommandOutput) async throws
}

extension PrintingCommand {
    func run() async throws {
        try await run(output: .standard)
    }
}
