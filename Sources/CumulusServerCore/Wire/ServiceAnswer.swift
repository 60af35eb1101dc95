import CloudCodable
import CloudProtocol
import Foundation

/// An answer of ``RecordService`` before it is written: a ``CloudResponse``,
/// or pages of changes whose records are still as storage keeps them.
///
/// Storage keeps a record as the exact dictionary an answer holds, so a page
/// of changes without `desiredKeys` is written from those bytes as they are
/// (``encodedBody()``); only ``response()`` decodes them.
public struct ServiceAnswer: Sendable {
    enum Form: Sendable {
        case response(CloudResponse)
        /// `changes/zone`: one entry a zone asked.
        case zoneChanges([Result<ChangesPage, CloudError>])
        /// `records/changes`: one zone.
        case recordChanges(ChangesPage)
    }

    var form: Form

    /// An answer that is a response already.
    public init(_ response: CloudResponse) {
        form = .response(response)
    }

    init(form: Form) {
        self.form = form
    }

    /// The answer as a value.
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`) when a stored record is
    ///   not a record in the wire format.
    public func response() throws -> CloudResponse {
        switch form {
        case .response(let response): response
        case .zoneChanges(let zones):
            .zoneChanges(
                try zones.map { result in
                    switch result {
                    case .success(let page): .success(try page.zoneChanges())
                    case .failure(let error): .failure(error)
                    }
                })
        case .recordChanges(let page): .recordChanges(try page.zoneChanges())
        }
    }

    /// The answer with a fresh `uuid` on every per-item error that has none;
    /// see ``CloudResponse/identifyingErrors()``.
    public func identifyingErrors() -> ServiceAnswer {
        switch form {
        case .response(let response): ServiceAnswer(response.identifyingErrors())
        case .zoneChanges(let zones):
            ServiceAnswer(form: .zoneChanges(zones.map { $0.mapError(CloudResponse.identifying) }))
        case .recordChanges: self
        }
    }

    /// The answer's JSON body; stored records are written as they are when
    /// no `desiredKeys` asked for less.
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`) for a value JSON cannot
    ///   hold or a stored record that is not one JSON object.
    public func encodedBody() throws -> [UInt8] {
        switch form {
        case .response(let response):
            return try response.encodedBody()
        case .zoneChanges(let zones):
            let count = zones.reduce(0) { $0 + ((try? $1.get().entries.count) ?? 0) }
            var writer = JSONWriter(capacity: 256 + count * 512)
            writer.appendRaw(#"{"zones":["#)
            for index in zones.indices {
                if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                switch zones[index] {
                case .success(let page):
                    try page.write(to: &writer)
                case .failure(let error):
                    try CloudResponse.writeZoneFailure(error, to: &writer)
                }
            }
            writer.appendRaw("]}")
            return writer.bytes
        case .recordChanges(let page):
            var writer = JSONWriter(capacity: 256 + page.entries.count * 512)
            try page.write(to: &writer)
            return writer.bytes
        }
    }
}

/// One zone's page of changes as storage answered it.
struct ChangesPage: Sendable {
    var zoneID: ZoneID
    var entries: [StoredChange]
    /// The fields asked for; `nil` for all.
    var desiredKeys: [String]?
    var syncToken: SyncToken
    var moreComing: Bool

    /// The page as a value, each stored record decoded.
    func zoneChanges() throws -> ZoneChanges {
        ZoneChanges(
            zoneID: zoneID, records: try entries.map(result), syncToken: syncToken, moreComing: moreComing)
    }

    /// `{zoneID, syncToken, records, moreComing}`, as
    /// ``CloudResponse/encodedBody()`` writes a ``ZoneChanges``.
    func write(to writer: inout JSONWriter) throws {
        try withCloudErrors(.internalError, "the answer cannot be written") {
            writer.appendRaw(#"{"zoneID":"#)
            writer.appendZoneID(zoneID)
            writer.appendRaw(#","syncToken":"#)
            writer.appendString(syncToken.rawValue)
            writer.appendRaw(#","records":["#)
            for index in entries.indices {
                if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
                if desiredKeys == nil, case .encoded(let bytes) = entries[index].contents {
                    guard bytes.withUnsafeBytes(WireFormat.isOneObject) else { throw Self.damaged }
                    writer.appendRaw(bytes)
                } else {
                    try writer.appendRecordResult(try result(entries[index]))
                }
            }
            writer.appendRaw(moreComing ? #"],"moreComing":true}"# : #"],"moreComing":false}"#)
        }
    }

    private func result(_ entry: StoredChange) throws -> RecordResult {
        switch entry.contents {
        case .deleted:
            return .deleted(recordName: entry.name, zoneID: zoneID)
        case .record(let record):
            return .record(record.keeping(desiredKeys))
        case .encoded(let bytes):
            let record: Record
            do {
                record = try WireFormat.decodeRecord(from: bytes)
            } catch {
                throw Self.damaged
            }
            return .record(record.keeping(desiredKeys))
        }
    }

    /// What a stored record that is not one answers: storage holds only
    /// what the service wrote, so this is a damaged store.
    private static let damaged = CloudError(
        .internalError, reason: "the storage holds an impossible row: records.body is not a record in the wire format")
}

extension ServiceAnswer {
    /// Whether any record of the answer passes `test`; stored records
    /// still in their wire form are tested by `testEncoded` instead.
    func containsRecord(where test: (Record) -> Bool, encoded testEncoded: ([UInt8]) -> Bool) -> Bool {
        func pageContains(_ page: ChangesPage) -> Bool {
            page.entries.contains { entry in
                switch entry.contents {
                case .deleted: false
                case .record(let record): test(record)
                case .encoded(let bytes): testEncoded(bytes)
                }
            }
        }
        switch form {
        case .response(let response):
            var found = false
            _ = response.mappingRecords { record in
                if !found, test(record) { found = true }
                return record
            }
            return found
        case .zoneChanges(let zones): return zones.contains { (try? $0.get()).map(pageContains) ?? false }
        case .recordChanges(let page): return pageContains(page)
        }
    }

    /// The answer with `transform` applied to every record it carries;
    /// stored records in their wire form for which `decoding` is true are
    /// decoded first, the others stay as they are.
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`) for a stored record that
    ///   is not a record in the wire format.
    func mappingRecords(decoding: ([UInt8]) -> Bool, _ transform: (Record) -> Record) throws -> ServiceAnswer {
        func map(_ page: ChangesPage) throws -> ChangesPage {
            var page = page
            for index in page.entries.indices {
                switch page.entries[index].contents {
                case .deleted: continue
                case .record(let record): page.entries[index].contents = .record(transform(record))
                case .encoded(let bytes):
                    guard decoding(bytes) else { continue }
                    let record: Record
                    do {
                        record = try WireFormat.decodeRecord(from: bytes)
                    } catch {
                        throw CloudError(
                            .internalError, reason: "the storage holds an impossible row: a record that cannot be read")
                    }
                    page.entries[index].contents = .record(transform(record))
                }
            }
            return page
        }
        switch form {
        case .response(let response): return ServiceAnswer(response.mappingRecords(transform))
        case .zoneChanges(let zones):
            return ServiceAnswer(
                form: .zoneChanges(
                    try zones.map { result in
                        switch result {
                        case .success(let page): .success(try map(page))
                        case .failure(let error): .failure(error)
                        }
                    }))
        case .recordChanges(let page): return ServiceAnswer(form: .recordChanges(try map(page)))
        }
    }
}

extension CloudResponse {
    /// The response with `transform` applied to every record it carries:
    /// results, the server's records of errors, pages of changes, and the
    /// shares and root records of share metadata.
    func mappingRecords(_ transform: (Record) -> Record) -> CloudResponse {
        func error(_ error: CloudError) -> CloudError {
            var error = error
            error.serverRecord = error.serverRecord.map(transform)
            return error
        }
        func result(_ result: RecordResult) -> RecordResult {
            switch result {
            case .record(let record): .record(transform(record))
            case .deleted: result
            case .failure(let failure): .failure(error(failure))
            }
        }
        func changes(_ changes: ZoneChanges) -> ZoneChanges {
            var changes = changes
            changes.records = changes.records.map(result)
            return changes
        }
        switch self {
        case .records(let results): return .records(results.map(result))
        case .query(var page):
            page.records = page.records.map(transform)
            return .query(page)
        case .zoneChanges(let zones): return .zoneChanges(zones.map { $0.map(changes).mapError(error) })
        case .recordChanges(let page): return .recordChanges(changes(page))
        case .shares(let results):
            return .shares(
                results.map { result in
                    switch result {
                    case .share(var metadata):
                        metadata.share = transform(metadata.share)
                        metadata.rootRecord = metadata.rootRecord.map(transform)
                        return .share(metadata)
                    case .failure(let guid, let failure): return .failure(shortGUID: guid, error(failure))
                    }
                })
        case .databaseChanges, .zones, .zoneResults, .subscriptions, .subscriptionResults, .user, .token, .users,
            .assetUploads:
            return self
        }
    }
}
