import ArgumentParser
import Cumulus
import CumulusServer
import Foundation
import Logging

/// `cumulus demo`: two devices sync through a server, then three users
/// share an album, step by step.
///
/// Without `--server`, it starts a server of its own on a free loopback
/// port over a temporary data directory, and runs the whole story; with
/// `--server`, it runs one device against that server, so that two
/// machines can be tried by hand.
struct DemoCommand: PrintingCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Show two devices syncing through a Cumulus server.",
        discussion: """
            Without options, starts a server on a free loopback port with a temporary data \
            directory and runs two devices through edits, a merge, a delete, a record over \
            1 MB, a restart and a second user, then three users through a shared album: an \
            invitation, an accepted share, a refused edit, a removal and a leave. Exits 0 only \
            if every step did what it printed.
            """)

    @Option(help: "A server to run one device against, e.g. http://192.168.1.20:8080.")
    var server: String?

    @Option(help: "The container's API token (with --server).")
    var token: String?

    @Option(name: .customLong("user-token"), help: "The user's web auth token (with --server).")
    var userToken: String?

    @Option(help: "The container's name (with --server).")
    var container: String = "iCloud.com.example.notes"

    @Option(help: "How long the device listens for changes from other machines (with --server), in seconds.")
    var listen: Int = 60

    @Option(help: "The device's journal directory (with --server); kept between runs.")
    var journal: String?

    func validate() throws {
        if server != nil, token == nil || userToken == nil {
            throw ValidationError("--server needs --token and --user-token.")
        }
    }

    func run(output: CommandOutput) async throws {
        if let server, let token, let userToken {
            guard let url = URL(string: server), url.scheme != nil else {
                throw ValidationError("\(server) is not a URL such as http://host:8080.")
            }
            let directory =
                journal.map { URL(fileURLWithPath: $0, isDirectory: true) }
                ?? FileManager.default.temporaryDirectory.appendingPathComponent(
                    "cumulus-demo-device-\(ProcessInfo.processInfo.hostName)", isDirectory: true)
            try await RemoteDevice(
                baseURL: url, container: container, apiToken: token, webAuthToken: userToken, directory: directory,
                output: output
            ).run(listeningFor: .seconds(listen))
        } else {
            let story = DemoStory(output: output)
            let passed = try await story.run()
            if !passed { throw ExitCode.failure }
        }
    }
}

/// The note the demo's devices sync.
struct DemoNote: CloudCodable, Identifiable, Equatable {
    var id: String
    var title: String
    var body: String = ""
    var cloudMetadata: RecordMetadata?

    static func == (lhs: DemoNote, rhs: DemoNote) -> Bool {
        lhs.id == rhs.id && lhs.title == rhs.title && lhs.body == rhs.body
    }
}

/// One device against a server elsewhere: it shows what the account holds,
/// adds a note, and prints the changes other machines make.
struct RemoteDevice {
    let baseURL: URL
    let container: String
    let apiToken: String
    let webAuthToken: String
    let directory: URL
    let output: CommandOutput

    func run(listeningFor duration: Duration) async throws {
        let database = RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(baseURL: baseURL, container: container),
            credentials: .user(apiToken: apiToken, webAuthToken: webAuthToken))
        let engine = try await SyncEngine<DemoNote>(database: database, directory: directory)
        let changes = engine.changes
        try await engine.sync()
        output.write("This device's journal: \(directory.path)")
        // What the engine counts is the notes of its own zone: say so, and what else the account holds.
        let count = await engine.models.count
        output.write(
            "The account holds \(count) note\(count == 1 ? "" : "s") (\(DemoNote.cloudRecordType) records in the zone "
                + "\(engine.zoneID.zoneName))\(count == 0 ? "." : ":")")
        for note in await engine.models { output.write("  \(note.title)") }
        let others = try await Self.otherRecords(in: database, besides: DemoNote.cloudRecordType, in: engine.zoneID)
        if let line = Self.otherRecordsLine(others) { output.write(line) }
        let host = ProcessInfo.processInfo.hostName
        let note = DemoNote(id: UUID().uuidString, title: "From \(host) at \(Date().formatted(.iso8601))")
        try await engine.upload(note)
        try await engine.sync()
        output.write("Added \"\(note.title)\". Listening for changes from other machines for \(duration)…")
        let listening = Task {
            for await change in changes {
                switch change {
                case .updated(let notes):
                    // This device's own note comes back once, acknowledged: not news.
                    for other in notes where other.id != note.id { output.write("  updated: \(other.title)") }
                case .deleted(let names):
                    for name in names { output.write("  deleted: \(name)") }
                }
            }
        }
        try? await Task.sleep(for: duration)
        listening.cancel()
        await engine.close()
    }
}
