import Cumulus
import Foundation
import Testing

/// The multi-device behaviour of ``SyncEngine`` over any backend: the same
/// scenarios run over the in-memory server and over the HTTP client against
/// the record server, so an engine cannot tell them apart.
///
/// ```swift
/// @Test(arguments: SyncEngineConformance.checks)
/// func engineConforms(_ check: SyncEngineConformance.Check) async throws {
///     try await check.run(on: InMemoryBackend())
/// }
/// ```
public struct SyncEngineConformance: Sendable {
    /// One scenario: a name for the test report, and its body.
    public struct Check: Sendable, CustomTestStringConvertible {
        /// What the scenario shows, as the test report shows it.
        public let name: String
        let body: @Sendable (SyncEngineConformance) async throws -> Void

        init(_ name: String, _ body: @escaping @Sendable (SyncEngineConformance) async throws -> Void) {
            self.name = name
            self.body = body
        }

        /// The name, for the test report.
        public var testDescription: String { name }

        /// Runs the scenario against `backend`.
        public func run(on backend: any ConformanceBackend) async throws {
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("cumulus-engine-conformance-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            try await body(SyncEngineConformance(backend: backend, directory: directory))
        }
    }

    let backend: any ConformanceBackend
    let directory: URL

    /// Every scenario.
    public static let checks: [Check] = [
        Check("an edit on one device reaches the other through its changes stream") { try await $0.editReachesOther() },
        Check("offline edits on both devices are merged by the resolver") { try await $0.offlineEditsMerge() },
        Check("a property set to nil is cleared on the other device") { try await $0.nilClearsField() },
        Check("a delete reaches the other device") { try await $0.deleteReachesOther() },
        Check("many uploads arrive whole, in several requests") { try await $0.manyUploadsArrive() },
        Check("a record over 1 MB is refused while the rest syncs") { try await $0.oversizedRecordRefused() },
        Check("a device restarted from its journal goes on where it was") { try await $0.restartFromJournal() },
        Check("another user sees none of the first user's data") { try await $0.otherUserSeesNothing() },
        Check("a change arrives on its own when engines sync automatically") { try await $0.automaticSyncArrives() },
        Check("an older version's edit keeps a field only a newer version declares") {
            try await $0.olderEditKeepsNewerField()
        },
        Check("an older version's merge keeps a field only a newer version declares") {
            try await $0.olderMergeKeepsNewerField()
        },
        Check("an older version clears a field it knows and keeps one it does not") {
            try await $0.olderClearKeepsNewerField()
        },
    ]

    // MARK: Devices

    /// A device of `user`: an engine with its own journal directory.
    func engine(
        _ user: String = "alice", name: String = UUID().uuidString, automatic: Bool = false
    ) async throws -> SyncEngine<ConformanceNote> {
        try await engine(ConformanceNote.self, user, name: name, automatic: automatic)
    }

    /// A device of `user` running the app version whose model is `Model`.
    func engine<Model: CloudCodable>(
        _ type: Model.Type, _ user: String = "alice", name: String = UUID().uuidString, automatic: Bool = false
    ) async throws -> SyncEngine<Model> {
        let database = try await backend.database(signedInAs: user)
        let configuration = SyncConfiguration(
            automaticSync: automatic, pollInterval: .seconds(600),
            retryPolicy: RetryPolicy(initialDelay: .milliseconds(10), jitter: 0))
        return try await SyncEngine<Model>(
            database: database, directory: directory.appendingPathComponent(name), configuration: configuration)
    }

    // MARK: Scenarios

    func editReachesOther() async throws {
        let phone = try await engine()
        let laptop = try await engine()
        let arrivals = StreamLog(laptop.changes)
        try await phone.upload(ConformanceNote(id: "n1", title: "Groceries"))
        try await phone.sync()
        try await laptop.sync()
        let arrived = await arrivals.wait { changes in
            changes.contains { if case .updated(let notes) = $0 { notes.contains { $0.id == "n1" } } else { false } }
        }
        #expect(arrived)
        let received = try #require(await laptop.model(withIdentifier: "n1"))
        #expect(received.title == "Groceries")
        #expect(received.cloudMetadata != nil)
        #expect(received.cloudMetadata == (await phone.model(withIdentifier: "n1"))?.cloudMetadata)
        await phone.close()
        await laptop.close()
    }

    func offlineEditsMerge() async throws {
        let phone = try await engine()
        let laptop = try await engine()
        try await phone.upload(ConformanceNote(id: "n", title: "Title", body: "Body"))
        try await phone.sync()
        try await laptop.sync()

        var onPhone = try #require(await phone.model(withIdentifier: "n"))
        onPhone.title = "Phone title"
        try await phone.upload(onPhone)
        var onLaptop = try #require(await laptop.model(withIdentifier: "n"))
        onLaptop.body = "Laptop body"
        try await laptop.upload(onLaptop)

        let events = StreamLog(laptop.events)
        try await phone.sync()
        try await laptop.sync()
        try await phone.sync()
        let merged = ConformanceNote(id: "n", title: "Phone title", body: "Laptop body")
        #expect(await phone.model(withIdentifier: "n")?.content == merged.content)
        #expect(await laptop.model(withIdentifier: "n")?.content == merged.content)
        #expect(await events.wait { $0.contains(.conflict(recordName: "n", resolution: .resolved)) })

        // A third device that starts from nothing sees the merged note.
        let tablet = try await engine()
        try await tablet.sync()
        #expect(await tablet.models.map(\.content) == [merged.content])
        await phone.close()
        await laptop.close()
        await tablet.close()
    }

    func nilClearsField() async throws {
        let phone = try await engine()
        let laptop = try await engine()
        try await phone.upload(ConformanceNote(id: "n", title: "T", tag: "work"))
        try await phone.sync()
        try await laptop.sync()
        #expect(await laptop.model(withIdentifier: "n")?.tag == "work")
        var note = try #require(await phone.model(withIdentifier: "n"))
        note.tag = nil
        try await phone.upload(note)
        try await phone.sync()
        try await laptop.sync()
        #expect(await laptop.model(withIdentifier: "n")?.tag == nil)
        await phone.close()
        await laptop.close()
    }

    func deleteReachesOther() async throws {
        let phone = try await engine()
        let laptop = try await engine()
        try await phone.upload([ConformanceNote(id: "kept", title: "k"), ConformanceNote(id: "gone", title: "g")])
        try await phone.sync()
        try await laptop.sync()
        let arrivals = StreamLog(laptop.changes)
        try await phone.delete(identifiers: ["gone"])
        try await phone.sync()
        try await laptop.sync()
        #expect(
            await arrivals.wait { changes in
                changes.contains { if case .deleted(let names) = $0 { names == ["gone"] } else { false } }
            })
        #expect(await laptop.models.map(\.id) == ["kept"])
        await phone.close()
        await laptop.close()
    }

    func manyUploadsArrive() async throws {
        let phone = try await engine()
        let laptop = try await engine()
        let notes = (0..<450).map { ConformanceNote(id: String(format: "n%03d", $0), title: "\($0)") }
        try await phone.upload(notes)
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        try await laptop.sync()
        #expect(await laptop.models.map(\.content) == notes.map(\.content))
        await phone.close()
        await laptop.close()
    }

    func oversizedRecordRefused() async throws {
        let phone = try await engine()
        let laptop = try await engine()
        let big = ConformanceNote(id: "big", title: String(repeating: "x", count: 1_100_000))
        await #expect(throws: RecordTooLargeError.self) { try await phone.upload(big) }
        try await phone.upload(ConformanceNote(id: "small", title: "fine"))
        try await phone.sync()
        try await laptop.sync()
        #expect(await laptop.models.map(\.id) == ["small"])
        await phone.close()
        await laptop.close()
    }

    func restartFromJournal() async throws {
        let name = "restarted"
        do {
            let phone = try await engine(name: name)
            try await phone.upload(ConformanceNote(id: "synced", title: "one"))
            try await phone.sync()
            try await phone.upload(ConformanceNote(id: "pending", title: "two"))
            await phone.close()
        }
        let again = try await engine(name: name)
        #expect(await again.pendingChangeCount == 1)
        #expect(await again.models.map(\.id) == ["pending", "synced"])
        try await again.sync()
        #expect(await again.pendingChangeCount == 0)
        let laptop = try await engine()
        try await laptop.sync()
        #expect(await laptop.models.map(\.id) == ["pending", "synced"])
        await again.close()
        await laptop.close()
    }

    func otherUserSeesNothing() async throws {
        let alice = try await engine("alice")
        try await alice.upload(ConformanceNote(id: "diary", title: "alice's"))
        try await alice.sync()
        let bob = try await engine("bob")
        try await bob.sync()
        #expect(await bob.models.isEmpty)
        try await bob.upload(ConformanceNote(id: "diary", title: "bob's"))
        try await bob.sync()
        try await alice.sync()
        #expect(await alice.model(withIdentifier: "diary")?.title == "alice's")
        await alice.close()
        await bob.close()
    }

    func automaticSyncArrives() async throws {
        let phone = try await engine(automatic: true)
        let laptop = try await engine(automatic: true)
        try await phone.sync()
        try await laptop.sync()
        let arrivals = StreamLog(laptop.changes)
        try await phone.upload(ConformanceNote(id: "pushed", title: "no sync() called"))
        let arrived = await arrivals.wait(timeout: .seconds(20)) { changes in
            changes.contains {
                if case .updated(let notes) = $0 { notes.contains { $0.id == "pushed" } } else { false }
            }
        }
        #expect(arrived)
        await phone.close()
        await laptop.close()
    }
}

/// A newer version of ``ConformanceNote``'s app: the same record type, with
/// a rating that ``ConformanceNote`` does not declare.
struct RatedConformanceNote: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { ConformanceNote.cloudRecordType }
    var id: String
    var title: String
    var body: String = ""
    var tag: String? = nil
    var rating: Int? = nil
    var cloudMetadata: RecordMetadata?
}

/// The model the engine scenarios sync.
public struct ConformanceNote: CloudCodable, Identifiable, Hashable {
    /// The note's identifier.
    public var id: String
    /// The title.
    public var title: String
    /// The text.
    public var body: String = ""
    /// An optional tag.
    public var tag: String? = nil
    /// The server's metadata.
    public var cloudMetadata: RecordMetadata?

    /// Creates a note.
    public init(id: String, title: String, body: String = "", tag: String? = nil) {
        self.id = id
        self.title = title
        self.body = body
        self.tag = tag
    }

    /// The note's content, without the server's metadata.
    var content: [String?] { [id, title, body, tag] }
}

/// What a stream yields, read in the background, so that a scenario can wait
/// for what it expects with a time limit instead of hanging.
final class StreamLog<Element: Sendable>: Sendable {
    private actor Items {
        var values: [Element] = []
        func append(_ value: Element) { values.append(value) }
    }

    private let items = Items()
    private let task: Task<Void, Never>

    init<Stream: AsyncSequence & Sendable>(_ stream: Stream) where Stream.Element == Element {
        let items = items
        task = Task {
            do {
                for try await value in stream { await items.append(value) }
            } catch {}
        }
    }

    deinit { task.cancel() }

    /// Waits (at most `timeout` of real time) until `predicate` holds for
    /// what was received; returns whether it did.
    func wait(timeout: Duration = .seconds(10), until predicate: ([Element]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if predicate(await items.values) { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
