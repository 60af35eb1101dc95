import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// Version 1 of a task: its priority is required.
struct TaskV1: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Task" }
    var id: String
    var title: String
    var priority: Int
    var cloudMetadata: RecordMetadata?
}

/// Version 2 made the priority optional: a task it saves without one is
/// one that version 1 cannot decode.
struct TaskV2: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Task" }
    var id: String
    var title: String
    var priority: Int? = nil
    var cloudMetadata: RecordMetadata?
}

/// Version 1 of a labelled item: one label, never written by this version.
struct LabelledV1: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Labelled" }
    var id: String
    var title: String
    var label: String? = nil
    var cloudMetadata: RecordMetadata?
}

/// Version 2 writes a list of labels in the same field: a value of another type for version 1.
struct LabelledV2: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Labelled" }
    var id: String
    var title: String
    var label: [String]? = nil
    var cloudMetadata: RecordMetadata?
}

/// Issue #32: a record this version of the model cannot decode is kept,
/// reported once per server version, never deleted or overwritten, and
/// decoded when the app is updated.
@Suite("Undecodable records", .timeLimit(.minutes(1)))
struct UndecodableRecordTests {
    @Test("a record missing a required field: kept, reported once per version, untouched, decoded after the update")
    func missingRequiredField() async throws {
        let devices = VersionedDevices(recordType: "Task")
        let directory = temporaryDirectory("old")
        let newer = try await devices.engine(TaskV2.self)
        try await newer.upload([TaskV2(id: "t1", title: "Someday"), TaskV2(id: "t2", title: "Now", priority: 1)])
        try await newer.sync()
        let firstTag = try #require(await devices.stored("t1")?.changeTag)
        do {
            let old = try await devices.engine(TaskV1.self, directory: directory)
            let events = Collected(old.events)
            for _ in 0..<3 { try await old.sync() }
            #expect(await old.models.map(\.id) == ["t2"])
            #expect(await old.undecodableRecords == ["t1"])
            #expect(await reports(events, "t1", count: 1))

            // The old version edits what it can; a whole refetch sees the record again.
            var now = try #require(await old.model(withIdentifier: "t2"))
            now.title = "Now, really"
            try await old.upload(now)
            try await old.sync()
            await devices.server.expireChangeTokens(in: devices.zone, ownedBy: "alice")
            try await old.sync()
            try await old.sync()
            #expect(await reports(events, "t1", count: 1))
            #expect(await devices.stored("t1")?.changeTag == firstTag)
            try await devices.expectServerFields("t1", ["id": .string("t1"), "title": .string("Someday")])
            try await devices.expectServerFields(
                "t2", ["id": .string("t2"), "title": .string("Now, really"), "priority": .int64(1)])

            // A new server version is reported again, once.
            try await newer.sync()
            var later = try #require(await newer.model(withIdentifier: "t1"))
            later.title = "Someday, maybe"
            try await newer.upload(later)
            try await newer.sync()
            try await old.sync()
            try await old.sync()
            #expect(await reports(events, "t1", count: 2))
            #expect(await old.undecodableRecords == ["t1"])
            #expect(await old.pendingChangeCount == 0)
            await old.close()
        }
        try await devices.expectServerFields("t1", ["id": .string("t1"), "title": .string("Someday, maybe")])
        try await expectDecodedAfterUpdate(devices, directory, name: "t1") { (task: TaskV2) in
            task.title == "Someday, maybe" && task.priority == nil
        }
    }

    @Test("a record holding a value of another type: kept, reported once, decoded after the update")
    func valueOfAnotherType() async throws {
        let devices = VersionedDevices(recordType: "Labelled")
        let directory = temporaryDirectory("old")
        let newer = try await devices.engine(LabelledV2.self)
        try await newer.upload([
            LabelledV2(id: "l1", title: "Tagged", label: ["home", "urgent"]), LabelledV2(id: "l2", title: "Plain"),
        ])
        try await newer.sync()
        do {
            let old = try await devices.engine(LabelledV1.self, directory: directory)
            let events = Collected(old.events)
            try await old.sync()
            try await old.sync()
            #expect(await old.models.map(\.id) == ["l2"])
            #expect(await old.undecodableRecords == ["l1"])
            #expect(await reports(events, "l1", count: 1))
            var plain = try #require(await old.model(withIdentifier: "l2"))
            plain.title = "Plain, edited"
            try await old.upload(plain)
            try await old.sync()
            #expect(await reports(events, "l1", count: 1))
            await old.close()
        }
        try await devices.expectServerFields(
            "l1", ["id": .string("l1"), "title": .string("Tagged"), "label": .stringList(["home", "urgent"])])
        try await expectDecodedAfterUpdate(devices, directory, name: "l1") { (item: LabelledV2) in
            item.label == ["home", "urgent"]
        }
    }

    /// Waits until the events report the record undecodable `count` times,
    /// then a little longer to catch an extra report; whether it was exactly `count`.
    func reports(_ events: Collected<SyncEvent>, _ name: String, count: Int) async -> Bool {
        _ = await events.waitUntil { $0.filter { isUndecodable($0, name) }.count >= count }
        try? await Task.sleep(for: .milliseconds(50))
        return events.values.filter { isUndecodable($0, name) }.count == count
    }

    /// Opens an engine of the newer model on the old engine's directory:
    /// the kept record decodes at once, from the journal, and is published
    /// through `changes`; nothing is fetched (every request of the device fails).
    func expectDecodedAfterUpdate<Model: CloudCodable>(
        _ devices: VersionedDevices, _ directory: URL, name: String,
        sourceLocation: SourceLocation = #_sourceLocation, _ isExpected: @escaping @Sendable (Model) -> Bool
    ) async throws {
        devices.server.resetRequestCounts()
        let handle = devices.server.database(signedInAs: "alice")
        let updated = try await devices.engine(Model.self, directory: directory, database: handle) {
            $0.retryPolicy = RetryPolicy(jitter: 0, maximumAttempts: 1)
        }
        let changes = Collected(updated.changes)
        #expect(await updated.undecodableRecords.isEmpty, sourceLocation: sourceLocation)
        let decoded = await updated.model(withIdentifier: name)
        #expect(decoded.map(isExpected) == true, sourceLocation: sourceLocation)
        #expect(devices.server.requestCount() == 0, sourceLocation: sourceLocation)

        let published: @Sendable ([ModelChange<Model>]) -> Bool = { values in
            values.contains { change in
                if case .updated(let models) = change {
                    models.contains { $0.cloudIdentifier == name && isExpected($0) }
                } else {
                    false
                }
            }
        }
        if await !changes.waitUntil(published) {
            // Published with the first sync at the latest, which can fetch nothing here.
            handle.inject(.networkFailure(), count: 100)
            try? await updated.sync()
        }
        #expect(await changes.waitUntil(published), sourceLocation: sourceLocation)
        #expect(devices.server.requestCount(of: .fetchZoneChanges) == 0, sourceLocation: sourceLocation)
        await updated.close()
    }
}
