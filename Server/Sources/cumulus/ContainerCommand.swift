import ArgumentParser
import Cumulus
import CumulusServer
import Foundation

/// `cumulus container add NAME` and `cumulus container rotate-token NAME
/// --overlap DURATION`: each prints an API token on the last line.
struct ContainerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "container", abstract: "Manage containers.", subcommands: [Add.self, RotateToken.self])

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

    struct RotateToken: PrintingCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-token",
            abstract: "Give a container a new API token; prints it on the last line.",
            discussion: """
                The previous token keeps working for the overlap (0 ends it at once), so that apps can move to \
                the new one; then it fails on every server. Rotating again ends the earlier overlap at once.
                """)

        @Argument(help: "The container's name.")
        var name: String

        @Option(help: "How long the previous token keeps working: 90s, 30m, 12h, 7d, 2w, or 0.")
        var overlap: DurationOption

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let overlap = self.overlap.duration
            let token = try await data.withService { service in
                try await service.rotateAPIToken(container: name, overlap: overlap)
            }
            if overlap > .zero {
                let ends = Date().addingTimeInterval(TimeInterval(overlap.components.seconds))
                output.write(
                    "Rotated the API token of \(name). The previous one works until \(PrintedDate.text(ends)) "
                        + "(\(self.overlap.description)). The new API token:")
            } else {
                output.write("Rotated the API token of \(name). The previous one no longer works. The new API token:")
            }
            output.write(token)
        }
    }
}
