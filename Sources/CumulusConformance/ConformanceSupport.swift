import Cumulus
import CumulusTesting
import Foundation
import Testing

/// The custom zone most checks work in.
public let notesZone = ZoneID(zoneName: "Notes")

/// A `Note` record that has never been saved.
public func note(_ name: String, in zone: ZoneID = notesZone, _ fields: [String: FieldValue] = [:]) -> Record {
    Record(recordType: "Note", recordName: name, zoneID: zone, fields: fields)
}

/// Expects a per-item failure with `code`, and returns the error.
@discardableResult
public func expectFailure(
    _ result: RecordResult, _ code: CloudError.Code, sourceLocation: SourceLocation = #_sourceLocation
) -> CloudError? {
    guard let error = result.error else {
        Issue.record("expected \(code), got \(result)", sourceLocation: sourceLocation)
        return nil
    }
    #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    return error
}

/// Expects `body` to throw a ``CloudError`` with `code`, and returns it.
@discardableResult
public func expectCloudError<T>(
    _ code: CloudError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> T
) async -> CloudError? {
    do {
        let value = try await body()
        Issue.record("expected \(code) to be thrown, got \(value)", sourceLocation: sourceLocation)
        return nil
    } catch let error as CloudError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The record of a result that must be a record.
public func requireRecord(_ result: RecordResult, sourceLocation: SourceLocation = #_sourceLocation) throws -> Record {
    try #require(result.record, "expected a record, got \(result)", sourceLocation: sourceLocation)
}

extension CloudDatabase {
    /// Creates a zone, requiring success.
    public func makeZone(_ zoneID: ZoneID = notesZone, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let results = try await modifyZones([.create(zoneID)])
        guard case .zone = results.first else {
            Issue.record("creating zone \(zoneID.zoneName) failed: \(results)", sourceLocation: sourceLocation)
            throw CloudError(.internalError, reason: "zone creation failed")
        }
    }

    /// Runs operations that must all succeed, returning the answers' records
    /// (deletes answer none).
    @discardableResult
    public func apply(
        _ operations: [RecordOperation], in zoneID: ZoneID = notesZone, atomic: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [Record] {
        let results = try await modifyRecords(operations, zoneID: zoneID, atomic: atomic)
        try #require(results.count == operations.count, sourceLocation: sourceLocation)
        var records: [Record] = []
        for result in results {
            switch result {
            case .record(let record): records.append(record)
            case .deleted: break
            case .failure(let error):
                Issue.record("operation failed: \(error)", sourceLocation: sourceLocation)
                throw error
            }
        }
        return records
    }

    /// Creates records that must not exist yet, returning the server's copies.
    @discardableResult
    public func create(
        _ records: [Record], in zoneID: ZoneID = notesZone, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [Record] {
        try await apply(records.map { RecordOperation(.create, $0) }, in: zoneID, sourceLocation: sourceLocation)
    }

    /// The one result of a one-operation request.
    public func modify(_ operation: RecordOperation, in zoneID: ZoneID = notesZone, atomic: Bool = true) async throws
        -> RecordResult
    {
        let results = try await modifyRecords([operation], zoneID: zoneID, atomic: atomic)
        try #require(results.count == 1)
        return results[0]
    }

    /// The record as the server holds it, or `nil` when it answers `NOT_FOUND`.
    public func fetch(_ name: String, in zoneID: ZoneID = notesZone) async throws -> Record? {
        let results = try await lookupRecords([name], zoneID: zoneID, desiredKeys: nil)
        try #require(results.count == 1)
        if let error = results[0].error {
            #expect(error.code == .notFound, "\(error)")
            return nil
        }
        return results[0].record
    }

    /// One page of changes of one zone, requiring success.
    public func zoneChanges(
        _ zoneID: ZoneID = notesZone, since token: SyncToken?, limit: Int? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ZoneChanges {
        let results = try await fetchZoneChanges([
            ZoneChangesRequest(zoneID: zoneID, syncToken: token, resultsLimit: limit)
        ])
        try #require(results.count == 1, sourceLocation: sourceLocation)
        return try results[0].get()
    }

    /// Every page of changes of one zone since `token`: the pages and the last token.
    public func allZoneChanges(_ zoneID: ZoneID = notesZone, since token: SyncToken?, limit: Int? = nil) async throws
        -> (pages: [ZoneChanges], token: SyncToken)
    {
        var pages: [ZoneChanges] = []
        var token = token
        repeat {
            let page = try await zoneChanges(zoneID, since: token, limit: limit)
            pages.append(page)
            token = page.syncToken
            try #require(pages.count < 1000, "paging never ends")
        } while pages.last!.moreComing
        return (pages, token!)
    }
}

extension Array where Element == RecordResult {
    /// The names of the saved records, in order.
    public var savedNames: [String] { compactMap { $0.record?.recordName } }
    /// The names of the deleted records, in order.
    public var deletedNames: [String] {
        compactMap {
            if case .deleted(let name, _) = $0 { return name }
            return nil
        }
    }
}

/// Reads a notification stream in the background, so that a check can wait
/// for what it expects with a time limit instead of hanging.
public final class NotificationRecorder: Sendable {
    private actor Log {
        var received: [CloudNotification] = []
        func append(_ notification: CloudNotification) { received.append(notification) }
    }

    private let log = Log()
    private let task: Task<Void, Never>
    /// Kept so that the device (and its streams) lives as long as the recorder.
    public let database: any CloudDatabase

    /// Starts reading a new notification stream of `database`.
    public init(_ database: any CloudDatabase) {
        self.database = database
        let stream = database.notifications()
        let log = log
        task = Task {
            for await notification in stream { await log.append(notification) }
        }
    }

    deinit { task.cancel() }

    /// Everything received so far.
    public var received: [CloudNotification] {
        get async { await log.received }
    }

    /// Waits (at most `timeout` of real time) until `predicate` holds for
    /// what was received, and returns it; records an issue on timeout.
    @discardableResult
    public func wait(
        timeout: Duration = .seconds(10), sourceLocation: SourceLocation = #_sourceLocation,
        until predicate: ([CloudNotification]) -> Bool
    ) async -> [CloudNotification] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let received = await log.received
            if predicate(received) { return received }
            if ContinuousClock.now >= deadline {
                Issue.record(
                    "timed out waiting for notifications; received \(received)", sourceLocation: sourceLocation)
                return received
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Waits until `notification` has been received.
    @discardableResult
    public func wait(
        for notification: CloudNotification, timeout: Duration = .seconds(10),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> [CloudNotification] {
        await wait(timeout: timeout, sourceLocation: sourceLocation) { $0.contains(notification) }
    }

    /// Stops reading.
    public func stop() { task.cancel() }
}
