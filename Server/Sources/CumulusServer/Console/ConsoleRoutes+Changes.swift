import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension ConsoleRoutes {
    func addChanges(to console: RouterGroup<CumulusRequestContext>) {
        console.get("edit") { request, _ in try await page(request) { try await confirmEdit($0, $1) } }
        console.post("edit") { request, _ in try await change(request) { try await edit($0, $1) } }
        console.get("delete") { request, _ in try await page(request) { try await confirmDelete($0, $1) } }
        console.post("delete") { request, _ in try await change(request) { try await delete($0, $1) } }
    }

    /// The form that asks for a field's new value; nothing changes until it is posted.
    private func confirmEdit(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let (record, zoneID) = try await lookUp(database, query)
        guard let field = query["field"], let value = record[field], ConsoleValues.isEditable(value) else {
            throw ConsoleFailure(.badRequest, "The console edits string, int64 and double fields only.")
        }
        let (writer, _) = database.writer(of: record, zone: zoneID)
        var values = Self.confirmationValues(session, database, zoneID, record, writer: writer)
        values["field"] = field
        values["type"] = value.type.rawValue
        values["current"] = ConsoleValues.text(value)
        // A text keeps its line breaks in a text area; a one-line input would drop them.
        if case .string = value { values["isText"] = true }
        values["hidden"] = Self.hidden(query, changeTag: record.changeTag, field: field)
        return html(.ok, pages.render("confirmEdit", title: "Edit a field", session: session, values))
    }

    private func confirmDelete(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let (record, zoneID) = try await lookUp(database, query)
        let (writer, _) = database.writer(of: record, zone: zoneID)
        var values = Self.confirmationValues(session, database, zoneID, record, writer: writer)
        values["type"] = record.recordType
        values["hidden"] = Self.hidden(query, changeTag: record.changeTag, field: nil)
        return html(.ok, pages.render("confirmDelete", title: "Delete a record", session: session, values))
    }

    /// Sets one field as the record's owner's own `update`, based on the
    /// change tag the confirmation page showed: a record changed since is
    /// refused, not overwritten.
    private func edit(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(form)
        let (record, zoneID) = try await lookUp(database, form)
        let back = Self.recordLink(database, zoneID, record.recordName)
        guard let field = form["field"], let current = record[field], ConsoleValues.isEditable(current),
            let text = form["value"]
        else {
            throw ConsoleFailure(.badRequest, "The console edits string, int64 and double fields only.", back: back)
        }
        guard let value = ConsoleValues.value(ConsoleValues.lineBreaks(of: text, as: current), like: current) else {
            throw ConsoleFailure(.badRequest, "That is not a \(current.type.rawValue) value.", back: back)
        }
        let (writer, writerZone) = database.writer(of: record, zone: zoneID)
        let update = Record(
            recordType: record.recordType, recordName: record.recordName, zoneID: writerZone,
            fields: [field: value], metadata: RecordMetadata(changeTag: form["changeTag"] ?? "", zoneID: writerZone))
        let saved = try await modify(RecordOperation(.update, update), zoneID: writerZone, as: writer, back: back)
        logger.notice(
            "console edited a field",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(database.container)",
                "environment": "\(database.environment.rawValue)", "owner": "\(writer.user ?? "")",
                "zone": "\(zoneID.zoneName)", "record": "\(record.recordName)", "field": "\(field)",
                "changeTag": "\(saved?.changeTag ?? "")",
            ])
        let values: [String: Any] = [
            "text": "Saved: \(field) of \(record.recordName) has its new value, change tag \(saved?.changeTag ?? "?").",
            "back": back,
        ]
        return html(.ok, pages.render("message", title: "Saved", session: session, values))
    }

    private func delete(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(form)
        let (record, zoneID) = try await lookUp(database, form)
        let back = Self.recordLink(database, zoneID, record.recordName)
        let (writer, writerZone) = database.writer(of: record, zone: zoneID)
        let target = Record(
            recordType: record.recordType, recordName: record.recordName, zoneID: writerZone,
            metadata: RecordMetadata(changeTag: form["changeTag"] ?? "", zoneID: writerZone))
        _ = try await modify(RecordOperation(.delete, target), zoneID: writerZone, as: writer, back: back)
        logger.notice(
            "console deleted a record",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(database.container)",
                "environment": "\(database.environment.rawValue)", "owner": "\(writer.user ?? "")",
                "zone": "\(zoneID.zoneName)", "record": "\(record.recordName)",
            ])
        let zoneLink = ConsoleLinks.link("/console/records", database.parameters(zone: zoneID))
        let values: [String: Any] = ["text": "Deleted \(record.recordName).", "back": zoneLink]
        return html(.ok, pages.render("message", title: "Deleted", session: session, values))
    }

    /// One operation as the writer's `records/modify`; the record it saved.
    private func modify(_ operation: RecordOperation, zoneID: ZoneID, as writer: Caller, back: String) async throws
        -> Record?
    {
        let request = CloudRequest.modifyRecords(operations: [operation], zoneID: zoneID, atomic: true)
        guard case .records(let results) = try await service.perform(request, as: writer), let result = results.first
        else { throw ConsoleFailure(.internalServerError, "records/modify answered something else.", back: back) }
        if let error = result.error {
            let words =
                error.code == .conflict
                ? "The record changed since the confirmation page: nothing was changed. Look at it again."
                : "\(error.code.rawValue): \(error.reason)"
            throw ConsoleFailure(.conflict, words, back: back)
        }
        return result.record
    }

    private static func confirmationValues(
        _ session: ConsoleSession, _ database: ConsoleDatabase, _ zoneID: ZoneID, _ record: Record, writer: Caller
    ) -> [String: Any] {
        [
            "csrf": session.csrfToken, "record": record.recordName, "zone": zoneID.zoneName,
            "owner": writer.user ?? "", "back": recordLink(database, zoneID, record.recordName),
        ]
    }

    /// The hidden fields that name the record again when the form is posted.
    private static func hidden(_ query: [String: String], changeTag: String?, field: String?) -> [[String: String]] {
        var names = ["container", "environment", "scope", "user", "zone", "owner", "record"]
        if field != nil { names.append("field") }
        var hidden = names.map { ["name": $0, "value": query[$0] ?? ""] }
        hidden.append(["name": "changeTag", "value": changeTag ?? ""])
        return hidden
    }

    static func recordLink(_ database: ConsoleDatabase, _ zoneID: ZoneID, _ name: String) -> String {
        ConsoleLinks.link("/console/record", database.parameters(zone: zoneID) + [("record", name)])
    }
}
