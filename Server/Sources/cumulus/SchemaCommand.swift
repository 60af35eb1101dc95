import ArgumentParser
import CumulusServer

/// `cumulus schema deploy --container NAME`: copies the container's
/// `development` schema to `production`.
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Manage a container's schema.", subcommands: [Deploy.self])

    struct Deploy: PrintingCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the development schema to production, which accepts only deployed fields.")

        @Option(help: "The container whose schema to deploy.")
        var container: String

        @OptionGroup var data: DataOptions

        func run(output: CommandOutput) async throws {
            let added = try await data.withService { try await $0.deploySchema(container: container) }
            output.write("Deployed the development schema of \(container) to production: \(added) new field types.")
        }
    }
}
