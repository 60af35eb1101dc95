import Cumulus
import CumulusServer
import Foundation
import Logging

/// The demo's story: a server on loopback, two devices of one user and a
/// device of another, then an album with a picture shared between three
/// users, then a public board, each step printed and then checked.
struct DemoStory {
    let output: CommandOutput

    /// Runs every step; returns whether each did what it printed.
    func run() async throws -> Bool {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-demo-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        var logger = Logger(label: "cumulus.demo")
        logger.logLevel = .warning
        let service = try await CloudService.open(
            path: directory.appendingPathComponent("cumulus.sqlite").path, logger: logger)
        let server = CumulusHTTPServer(service: service, configuration: ServerConfiguration(port: 0, logger: logger))
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let serving = Task { try await server.run { port in portContinuation.yield(port) } }
        var portIterator = ports.makeAsyncIterator()
        guard let port = await portIterator.next() else {
            throw CloudError(.internalError, reason: "the embedded server did not start")
        }
        let baseURL = URL(string: "http://127.0.0.1:\(port)")!
        output.write("Server listening on \(baseURL) (data in \(directory.path))")

        let container = "iCloud.com.example.notes"
        let apiToken = try await service.addContainer(named: container)
        let alice = try await service.addUser(named: "alice", container: container)
        let bob = try await service.addUser(named: "bob", container: container, emailAddress: "bob@example.com")
        let carol = try await service.addUser(named: "carol", container: container)
        output.write("Container \(container) with users alice, bob (bob@example.com) and carol")

        let world = DemoWorld(
            baseURL: baseURL, container: container, apiToken: apiToken, directory: directory, output: output)
        let passed: Bool
        do {
            let synced = try await world.tell(alice: alice.webAuthToken, bob: bob.webAuthToken)
            let people = DemoPeople(
                alice: alice.webAuthToken, bob: bob.webAuthToken, carol: carol.webAuthToken,
                carolRecordName: carol.userRecordName)
            let shared = try await world.tellSharing(people)
            let published = try await world.tellPublic(people)
            passed = synced && shared && published
        } catch {
            output.write("✗ \(error)")
            passed = false
        }
        serving.cancel()
        _ = try? await serving.value
        try await service.close()
        output.write(passed ? "Every step did what it said." : "A step failed.")
        return passed
    }
}

/// The devices of the story and the steps they take.
struct DemoWorld {
    let baseURL: URL
    let container: String
    let apiToken: String
    let directory: URL
    let output: CommandOutput

    /// A device signed in with `webAuthToken`, whose journal is the directory `name`.
    func device(_ name: String, webAuthToken: String) async throws -> SyncEngine<DemoNote> {
        let database = RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(baseURL: baseURL, container: container),
            credentials: .user(apiToken: apiToken, webAuthToken: webAuthToken))
        let configuration = SyncConfiguration(
            automaticSync: false, retryPolicy: RetryPolicy(initialDelay: .milliseconds(100)))
        return try await SyncEngine<DemoNote>(
            database: database, directory: directory.appendingPathComponent(name, isDirectory: true),
            configuration: configuration)
    }

    /// Prints a step, then whether `check` holds.
    func step(_ text: String, _ check: () async throws -> Bool) async throws -> Bool {
        output.write("• \(text)")
        let passed = try await check()
        output.write(passed ? "  ✓" : "  ✗ it did not")
        return passed
    }

    func tell(alice: String, bob: String) async throws -> Bool {
        var phone = try await device("phone", webAuthToken: alice)
        let laptop = try await device("laptop", webAuthToken: alice)
        var passed = true

        passed =
            try await step("The phone saves a note; it reaches the laptop through the laptop's changes stream.") {
                let arrivals = laptop.changes
                try await phone.upload(DemoNote(id: "groceries", title: "Groceries", body: "eggs"))
                try await phone.sync()
                try await laptop.sync()
                return await first(of: arrivals) { change in
                    if case .updated(let notes) = change { notes.contains { $0.title == "Groceries" } } else { false }
                }
            } && passed

        passed =
            try await step(
                "Both edit the note offline, the phone its title and the laptop its body; the resolver merges them."
            ) {
                guard var onPhone = await phone.model(withIdentifier: "groceries"),
                    var onLaptop = await laptop.model(withIdentifier: "groceries")
                else { return false }
                onPhone.title = "Groceries for Sunday"
                onLaptop.body = "eggs, flour, milk"
                try await phone.upload(onPhone)
                try await laptop.upload(onLaptop)
                try await phone.sync()
                try await laptop.sync()
                try await phone.sync()
                let merged = DemoNote(id: "groceries", title: "Groceries for Sunday", body: "eggs, flour, milk")
                let phoneHas = await phone.model(withIdentifier: "groceries")
                let laptopHas = await laptop.model(withIdentifier: "groceries")
                output.write("  both now hold \"\(phoneHas?.title ?? "-")\": \"\(phoneHas?.body ?? "-")\"")
                return phoneHas == merged && laptopHas == merged
            } && passed

        passed =
            try await step("The laptop deletes a note; it disappears from the phone.") {
                try await laptop.upload(DemoNote(id: "old", title: "Old idea"))
                try await laptop.sync()
                try await phone.sync()
                guard await phone.model(withIdentifier: "old") != nil else { return false }
                try await laptop.delete(identifiers: ["old"])
                try await laptop.sync()
                try await phone.sync()
                return await phone.model(withIdentifier: "old") == nil
            } && passed

        passed =
            try await step("The phone saves a record over 1 MB: it is refused, and the rest still syncs.") {
                let big = DemoNote(id: "scan", title: String(repeating: "x", count: 1_200_000))
                do {
                    try await phone.upload([DemoNote(id: "small", title: "A small note"), big])
                    return false
                } catch let error as RecordTooLargeError {
                    output.write("  refused: \(error)")
                }
                try await phone.upload(DemoNote(id: "small", title: "A small note"))
                try await phone.sync()
                try await laptop.sync()
                let ids = await laptop.models.map(\.id)
                return ids.contains("small") && !ids.contains("scan")
            } && passed

        passed =
            try await step("The phone quits with an edit not yet sent, restarts from its journal, and sends it.") {
                try await phone.upload(DemoNote(id: "offline", title: "Written before the restart"))
                await phone.close()
                phone = try await device("phone", webAuthToken: alice)
                let pending = await phone.pendingChangeCount
                let kept = await phone.model(withIdentifier: "offline") != nil
                output.write("  after the restart: \(pending) change pending, the note \(kept ? "kept" : "lost")")
                try await phone.sync()
                try await laptop.sync()
                let arrived = await laptop.model(withIdentifier: "offline") != nil
                return pending == 1 && kept && arrived
            } && passed

        passed =
            try await step("Bob signs in on a tablet: he sees none of alice's notes, and she none of his.") {
                let tablet = try await device("tablet", webAuthToken: bob)
                try await tablet.sync()
                let sawNothing = await tablet.models.isEmpty
                try await tablet.upload(DemoNote(id: "groceries", title: "Bob's groceries"))
                try await tablet.sync()
                try await phone.sync()
                let aliceKept = await phone.model(withIdentifier: "groceries")?.title == "Groceries for Sunday"
                await tablet.close()
                return sawNothing && aliceKept
            } && passed

        await phone.close()
        await laptop.close()
        return passed
    }

    /// Waits (at most ten seconds) for an element of `stream` that satisfies `predicate`.
    func first<Element: Sendable>(
        of stream: some AsyncSequence<Element, Never> & Sendable, where predicate: @escaping @Sendable (Element) -> Bool
    ) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await element in stream where predicate(element) { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return false
            }
            let found = await group.next() ?? false
            group.cancelAll()
            return found
        }
    }
}
