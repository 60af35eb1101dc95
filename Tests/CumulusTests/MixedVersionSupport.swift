import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

// Versions of one app's note model (issue #32): distinct Swift types that
// sync the same record type, as devices on different app versions do.

/// Version 1: a title and an optional body.
struct NoteV1: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Note" }
    var id: String
    var title: String
    var body: String? = nil
    var cloudMetadata: RecordMetadata?
}

/// Version 2 adds a rating.
struct NoteV2: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Note" }
    var id: String
    var title: String
    var body: String? = nil
    var rating: Int? = nil
    var cloudMetadata: RecordMetadata?
}

/// Version 3 removed the body (versions 1 and 2 still write it) and adds a colour.
struct NoteV3: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Note" }
    var id: String
    var title: String
    var rating: Int? = nil
    var color: String? = nil
    var cloudMetadata: RecordMetadata?
}

/// Devices of one user on different app versions, against one in-memory
/// server: each engine has its own directory and its own handle.
struct VersionedDevices {
    let server: InMemoryCloudServer
    let clock: ManualClock?
    /// The zone every version's engine syncs: named after the shared record type.
    let zone: ZoneID

    init(server: InMemoryCloudServer = InMemoryCloudServer(), clock: ManualClock? = nil, recordType: String = "Note") {
        self.server = server
        self.clock = clock
        zone = ZoneID(zoneName: recordType)
    }

    /// A device running `Model`, syncing only when told to.
    func engine<Model: CloudCodable>(
        _ type: Model.Type, user: String = "alice", directory: URL = temporaryDirectory("device"),
        database: (any CloudDatabase)? = nil, configure: (inout SyncConfiguration) -> Void = { _ in }
    ) async throws -> SyncEngine<Model> {
        var configuration = SyncConfiguration(automaticSync: false, retryPolicy: RetryPolicy(jitter: 0))
        if let clock { configuration.clock = clock }
        configure(&configuration)
        return try await SyncEngine<Model>(
            database: database ?? server.database(signedInAs: user), directory: directory,
            configuration: configuration)
    }

    /// The record as the server holds it, read without a handle.
    func stored(_ name: String, of user: String = "alice") async -> Record? {
        await server.storedRecords(in: zone, of: user).first { $0.recordName == name }
    }

    /// The record as a `records/lookup` from a fresh device answers it.
    func lookedUp(_ name: String, as user: String = "alice") async throws -> Record {
        let results = try await server.database(signedInAs: user).lookupRecords([name], zoneID: zone, desiredKeys: nil)
        return try #require(results.first?.record, "no record \(name) on the server: \(results)")
    }

    /// Checks that the server holds exactly these fields for the record
    /// (besides the engine's write lineage), both in storage and through a lookup.
    func expectServerFields(
        _ name: String, _ fields: [String: FieldValue], of user: String = "alice",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let stored = await stored(name, of: user)
        #expect(stored?.modelFields == fields, sourceLocation: sourceLocation)
        let looked = try await lookedUp(name, as: user)
        #expect(looked.modelFields == fields, sourceLocation: sourceLocation)
    }
}

extension Record {
    /// The fields, without the write lineage every engine adds to what it sends.
    var modelFields: [String: FieldValue] {
        var fields = fields.dictionary
        fields[WriteLineage.field] = nil
        return fields
    }
}

/// The record operations an engine sent, in order, as a test saw them
/// before they reached the server.
final class SentOperations: Sendable {
    /// Each `records/modify` request's operations.
    private let log = LockedLog<[RecordOperation]>()

    /// Every operation sent so far.
    var all: [RecordOperation] { log.values.flatMap { $0 } }

    /// How many `records/modify` requests were sent so far.
    var requestCount: Int { log.values.count }

    /// The operations on one record.
    func on(_ name: String) -> [RecordOperation] { all.filter { $0.record.recordName == name } }

    /// Forgets what was seen so far.
    func reset() { log.reset() }

    /// A database that records the operations before `base` carries them
    /// out; it says it clears fields when `base` does, unless told otherwise.
    func recording(_ base: InMemoryCloudDatabase, supportsFieldClearing: Bool? = nil) -> InterposedDatabase {
        let log = log
        var database = InterposedDatabase(base) { operations, _ in log.append([operations]) }
        if let supportsFieldClearing { database.supportsFieldClearing = supportsFieldClearing }
        return database
    }
}

/// A list that several tasks append to.
final class LockedLog<Element: Sendable>: @unchecked Sendable {
    // Safety: `items` is guarded by `lock`.
    private let lock = NSLock()
    private var items: [Element] = []

    func append(_ elements: [Element]) {
        lock.lock()
        items += elements
        lock.unlock()
    }

    func reset() {
        lock.lock()
        items = []
        lock.unlock()
    }

    var values: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

/// Whether an event reports this record as undecodable.
func isUndecodable(_ event: SyncEvent, _ name: String) -> Bool {
    if case .undecodableRecord(let recordName, _) = event { return recordName == name }
    return false
}

/// Whether an event reports this record as failed.
func isFailure(_ event: SyncEvent, _ name: String) -> Bool {
    if case .recordFailed(let recordName, _) = event { return recordName == name }
    return false
}
