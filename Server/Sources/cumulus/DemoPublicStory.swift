import Cumulus
import Foundation

/// A post of the demo's public board: every user of the container reads it,
/// and only its author changes it.
struct DemoPost: CloudCodable, Identifiable, Equatable {
    var id: String
    var text: String
    var cloudMetadata: RecordMetadata?

    static func == (lhs: DemoPost, rhs: DemoPost) -> Bool { lhs.id == rhs.id && lhs.text == rhs.text }
}

extension DemoWorld {
    /// An engine of the public board signed in with `webAuthToken`, or
    /// reading with the API token alone when it is `nil`.
    func board(_ name: String, webAuthToken: String?) async throws -> SyncEngine<DemoPost> {
        let database = RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(baseURL: baseURL, container: container, scope: .public),
            credentials: .user(apiToken: apiToken, webAuthToken: webAuthToken))
        var configuration = SyncConfiguration()
        configuration.automaticSync = false
        configuration.retryPolicy = RetryPolicy(initialDelay: .milliseconds(100))
        return try await SyncEngine<DemoPost>(
            database: database, directory: directory.appendingPathComponent(name, isDirectory: true),
            configuration: configuration)
    }

    /// Alice posts to the public database; bob and a reader without a user
    /// read it; bob's edit of it is refused.
    func tellPublic(_ people: DemoPeople) async throws -> Bool {
        var passed = true
        let alice = try await board("alice-board", webAuthToken: people.alice)
        let bob = try await board("bob-board", webAuthToken: people.bob)
        let reader = try await board("reader-board", webAuthToken: nil)

        passed =
            try await step("Alice posts to the public board; bob reads it, and so does a reader without a user.") {
                try await alice.upload(DemoPost(id: "welcome", text: "Hello, everyone"))
                try await alice.sync()
                try await bob.sync()
                try await reader.sync()
                let bobSees = await bob.model(withIdentifier: "welcome")?.text
                let readerSees = await reader.models.map(\.text)
                output.write("  bob reads \"\(bobSees ?? "-")\"; the reader reads \(readerSees)")
                return bobSees == "Hello, everyone" && readerSees == ["Hello, everyone"]
            } && passed

        passed =
            try await step("Bob edits alice's post: the server refuses it; alice's post stays hers.") {
                guard var post = await bob.model(withIdentifier: "welcome") else { return false }
                post.text = "Bob was here"
                try await bob.upload(post)
                try await bob.sync()
                let refused = await bob.refusedChanges["welcome"]
                output.write("  refused: \(refused?.reason ?? "-")")
                try await bob.discardChanges(identifiers: ["welcome"])
                try await reader.sync()
                let kept = await reader.model(withIdentifier: "welcome")?.text == "Hello, everyone"
                let bobBack = await bob.model(withIdentifier: "welcome")?.text == "Hello, everyone"
                return refused?.code == .accessDenied && kept && bobBack
            } && passed

        for engine in [alice, bob, reader] { await engine.close() }
        return passed
    }
}
