import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension ConsoleRoutes {
    /// The largest import form read: the JSON lines percent-encoded in a form.
    static let maximumImportSize = 8 << 20
    /// How many records one `records/modify` of an import creates.
    static let importBatchSize = 100

    func addExport(to console: RouterGroup<CumulusRequestContext>) {
        console.get("export") { request, _ in try await page(request) { try await export($0, $1) } }
        console.get("import") { request, _ in try await page(request) { try await importForm($0, $1) } }
        console.post("import") { request, _ in
            try await change(request, maximumSize: Self.maximumImportSize) { try await importLines($0, $1) }
        }
    }

    // MARK: Export

    /// The records page's export link, and its import link where an import may write.
    static func exportValues(_ database: ConsoleDatabase, _ zoneID: ZoneID) -> [String: Any] {
        let parameters = database.parameters(zone: zoneID)
        var values: [String: Any] = ["exportLink": ConsoleLinks.link("/console/export", parameters)]
        if database.scope == .private && database.environment == .development {
            values["importLink"] = ConsoleLinks.link("/console/import", parameters)
        }
        return values
    }

    /// The zone's records as the user sees them, one record's wire JSON
    /// (the bytes `records/lookup` answers) a line, read a page at a time
    /// as the records page reads them, so memory holds one page.
    private func export(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let zoneID = try database.zoneID(query)
        // The first page is read before answering, so a zone the user cannot reach is an error page.
        let first = try await service.rules.browseRecords(
            in: zoneID, after: nil, limit: Self.pageSize, as: database.caller)
        logger.notice(
            "console exported a zone",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(database.container)",
                "environment": "\(database.environment.rawValue)", "scope": "\(database.scope.rawValue)",
                "user": "\(database.user)", "zone": "\(zoneID.zoneName)",
            ])
        let rules = service.rules
        let logger = logger
        let filename = Self.filename(zoneID.zoneName)
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/x-ndjson; charset=utf-8",
                .contentDisposition: "attachment; filename=\"\(filename).jsonl\"",
            ],
            body: ResponseBody { writer in
                var page = first
                while true {
                    var bytes: [UInt8] = []
                    for record in page.records {
                        bytes += try WireFormat.encode(record)
                        bytes.append(UInt8(ascii: "\n"))
                    }
                    try await writer.write(ByteBuffer(bytes: bytes))
                    guard let after = page.nextAfter else { break }
                    do {
                        page = try await rules.browseRecords(
                            in: zoneID, after: after, limit: Self.pageSize, as: database.caller)
                    } catch {
                        // The headers are sent: the download ends short, and the log says why.
                        logger.error("console export failed", metadata: ["error": "\(String(reflecting: error))"])
                        throw error
                    }
                }
                try await writer.finish(nil)
            })
    }

    /// A file name of ASCII letters, digits, `-`, `_` and `.` only: a zone
    /// name is the user's, and goes in a header.
    static func filename(_ zoneName: String) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".unicodeScalars)
        let name = String(
            String.UnicodeScalarView(zoneName.unicodeScalars.prefix(64).map { allowed.contains($0) ? $0 : "_" }))
        return name.isEmpty || name.hasPrefix(".") ? "zone" + name : name
    }

    // MARK: Import

    /// Where an import writes: a zone of a user's private database in the
    /// development environment; production is refused before anything is read.
    private func importTarget(_ query: [String: String]) async throws -> (caller: Caller, zoneID: ZoneID) {
        guard let container = query["container"], !container.isEmpty, let user = query["user"], !user.isEmpty,
            let zone = query["zone"], !zone.isEmpty
        else { throw ConsoleFailure(.badRequest, "The link does not name a container, a user and a zone.") }
        let environment =
            query["environment"].flatMap { $0.isEmpty ? nil : $0 } ?? CloudEnvironment.development.rawValue
        guard environment == CloudEnvironment.development.rawValue else {
            throw ConsoleFailure(
                .forbidden,
                "Imports go to the development environment only: production data is its users' own. Nothing was imported."
            )
        }
        guard try await service.users(container: container).contains(where: { $0.recordName.isExactly(user) }) else {
            throw ConsoleFailure(.notFound, "No user with this record name in the container.")
        }
        return (
            Caller(container: container, environment: .development, scope: .private, user: user), ZoneID(zoneName: zone)
        )
    }

    private func importForm(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let (caller, zoneID) = try await importTarget(query)
        let database = ConsoleDatabase(
            container: caller.container, environment: .development, scope: .private, user: caller.user ?? "")
        let values: [String: Any] = [
            "container": database.container, "user": database.user, "zone": zoneID.zoneName,
            "csrf": session.csrfToken, "batchSize": Self.importBatchSize,
            "back": ConsoleLinks.link("/console/records", database.parameters(zone: zoneID)),
            "hidden": Self.hiddenFields(database.parameters + [("zone", zoneID.zoneName)]),
        ]
        return html(.ok, pages.render("importForm", title: "Import records", session: session, values))
    }

    /// Reads every line, then creates the records in batches as the
    /// owner's own `records/modify`: a record whose name is taken is
    /// refused with `EXISTS` rather than overwritten, and the import stops
    /// at the first failed batch, saying what was written before it.
    private func importLines(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let (caller, zoneID) = try await importTarget(form)
        let database = ConsoleDatabase(
            container: caller.container, environment: .development, scope: .private, user: caller.user ?? "")
        let back = ConsoleLinks.link("/console/records", database.parameters(zone: zoneID))
        let lines = try Self.importedRecords(form["lines"] ?? "", into: zoneID, back: back)
        guard !lines.isEmpty else { throw ConsoleFailure(.badRequest, "No records to import.", back: back) }
        if !zoneID.zoneName.isExactly(ZoneID.defaultZone.zoneName) {
            guard
                case .zoneResults(let results) = try await service.perform(.modifyZones([.create(zoneID)]), as: caller)
            else { throw ConsoleFailure(.internalServerError, "zones/modify answered something else.", back: back) }
            if case .failure(let error)? = results.first {
                throw ConsoleFailure(
                    .conflict, "The zone was not created: \(error.code.rawValue): \(error.reason)", back: back)
            }
        }
        // The default zone is never atomic: a batch of one there keeps "what was written" exact.
        let isAtomic = !zoneID.zoneName.isExactly(ZoneID.defaultZone.zoneName)
        let size = isAtomic ? Self.importBatchSize : 1
        var written = 0
        var outcome: ImportFailure?
        for start in stride(from: 0, to: lines.count, by: size) {
            let batch = lines[start..<min(start + size, lines.count)]
            let request = CloudRequest.modifyRecords(
                operations: batch.map { RecordOperation(.create, $0.record) }, zoneID: zoneID, atomic: isAtomic)
            let results: [RecordResult]
            do {
                guard case .records(let answered) = try await service.perform(request, as: caller) else {
                    throw ConsoleFailure(.internalServerError, "records/modify answered something else.", back: back)
                }
                results = answered
            } catch let error as CloudError {
                // The request as a whole was refused: the answer still says what earlier batches wrote.
                outcome = ImportFailure(line: batch[batch.startIndex].line, error: error, isBatch: true)
                break
            }
            let failed = zip(batch, results).compactMap { line, result in result.error.map { (line.line, $0) } }
            if let first = failed.first {
                // The error that failed the batch, not another operation's ATOMIC_ERROR.
                let cause = failed.first { $0.1.code != .atomicError } ?? first
                outcome = ImportFailure(line: cause.0, error: cause.1, isBatch: false)
                break
            }
            written += batch.count
        }
        logger.notice(
            "console imported records",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(database.container)",
                "environment": "development",
                "owner": "\(database.user)", "zone": "\(zoneID.zoneName)", "records": "\(written)",
                "failedLine": "\(outcome.map { String($0.line) } ?? "")",
            ])
        guard let outcome else {
            let values: [String: Any] = ["text": "Imported \(written) records into \(zoneID.zoneName).", "back": back]
            return html(.ok, pages.render("message", title: "Imported", session: session, values))
        }
        let what = outcome.isBatch ? "The batch from line \(outcome.line)" : "Line \(outcome.line)"
        let text =
            "\(what) was refused: \(outcome.error.code.rawValue): \(outcome.error.reason). "
            + "Imported \(written) records, all from lines before it; nothing from its batch on was written."
        throw ConsoleFailure(.conflict, text, back: back)
    }

    /// The records of the JSON lines, numbered from 1, ready to create in
    /// `zoneID`: server metadata dropped, references to their own zone
    /// pointed at `zoneID`. A line that does not read, a share, or an asset
    /// is refused with its number, before anything is written.
    static func importedRecords(_ text: String, into zoneID: ZoneID, back: String) throws -> [ImportedRecord] {
        var records: [ImportedRecord] = []
        // Split by byte: a CRLF is one Character, which a split on "\n" would not see.
        for (index, line) in text.utf8.split(separator: 10, omittingEmptySubsequences: false).enumerated() {
            let bytes = Array(line).trimmedOfWhitespace()
            guard !bytes.isEmpty else { continue }
            let number = index + 1
            var record: Record
            do {
                record = try WireFormat.decodeRecord(from: bytes)
            } catch {
                throw ConsoleFailure(
                    .badRequest, "Line \(number) is not a record's wire JSON: \(error). Nothing was imported.",
                    back: back)
            }
            guard record.shareDetails == nil else {
                throw ConsoleFailure(
                    .badRequest, "Line \(number) is a share: shares are not imported. Nothing was imported.", back: back
                )
            }
            let source = record.zoneID
            for (name, value) in record.fields {
                switch value {
                case .asset, .assetList:
                    throw ConsoleFailure(
                        .badRequest,
                        "Line \(number): field \(name) holds an asset: assets are not imported. Nothing was imported.",
                        back: back)
                case .reference(let reference):
                    record[name] = .reference(reference.moved(from: source, to: zoneID))
                case .referenceList(let list):
                    record[name] = .referenceList(list.map { $0.moved(from: source, to: zoneID) })
                default: break
                }
            }
            record.metadata = nil
            record.share = nil
            record.zoneID = zoneID
            records.append(ImportedRecord(line: number, record: record))
        }
        return records
    }
}

/// A record of an import, with the line it came from.
struct ImportedRecord: Sendable {
    var line: Int
    var record: Record
}

/// The line whose record an import's batch failed on, or where the
/// batch that was refused as a whole starts.
private struct ImportFailure {
    var line: Int
    var error: CloudError
    var isBatch: Bool
}

extension Reference {
    /// The reference, pointing at `target` when it pointed at `source`:
    /// a record's reference to its own zone stays one after an import.
    fileprivate func moved(from source: ZoneID, to target: ZoneID) -> Reference {
        guard let zone = zoneID, zone.zoneName.isExactly(source.zoneName) else { return self }
        var moved = self
        moved.zoneID = ZoneID(zoneName: target.zoneName)
        return moved
    }
}

extension [UInt8] {
    /// The bytes without leading and trailing spaces, tabs and CRs: a text
    /// area posts CRLF line breaks.
    fileprivate func trimmedOfWhitespace() -> [UInt8] {
        let space: (UInt8) -> Bool = { $0 == 32 || $0 == 9 || $0 == 13 }
        guard let first = firstIndex(where: { !space($0) }), let last = lastIndex(where: { !space($0) }) else {
            return []
        }
        return Array(self[first...last])
    }
}
