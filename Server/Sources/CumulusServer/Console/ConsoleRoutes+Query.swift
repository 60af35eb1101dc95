import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import HTTPTypes
import Hummingbird

extension ConsoleRoutes {
    /// How many field comparisons the query form offers.
    static let queryFilterCount = 3

    func addQuery(to console: RouterGroup<CumulusRequestContext>) {
        console.get("query") { request, _ in try await page(request) { try await queryPage($0, $1) } }
    }

    /// The query form for a zone and, once it names a record type, a page
    /// of what the user's own `records/query` answers, with the request's body.
    private func queryPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let zoneID = try database.zoneID(query)
        let zoneParameters = database.parameters(zone: zoneID)
        let form = ConsoleQueryForm(query)
        var values = Self.databaseValues(database).merging(Self.zoneValues(zoneID, database)) { $1 }
        values.merge(form.values) { $1 }
        values["hidden"] = zoneParameters.map { ["name": $0.0, "value": $0.1] }
        values["recordsLink"] = ConsoleLinks.link("/console/records", zoneParameters)
        var status = HTTPResponse.Status.ok
        if !form.recordType.isEmpty {
            do {
                let types = try await service.fieldTypes(
                    container: database.container, environment: database.environment)
                let request = CloudRequest.queryRecords(
                    try form.query(types: types), zoneID: zoneID, resultsLimit: Self.pageSize,
                    continuationMarker: form.marker, desiredKeys: nil)
                values["body"] = Self.prettyJSON(try request.encodedBody() ?? [])
                values["path"] =
                    "/database/1/\(ConsoleLinks.encoded(database.container))/\(database.environment.rawValue)"
                    + "/\(database.scope.rawValue)/\(CloudOperation.queryRecords.rawValue)"
                // The user's own request, through the same rules as theirs.
                guard case .query(let result) = try await service.perform(request, as: database.caller) else {
                    throw ConsoleFailure(.internalServerError, "records/query answered something else.")
                }
                values["records"] = result.records.map { record -> [String: Any] in
                    [
                        "name": record.recordName, "type": record.recordType,
                        "modified": record.metadata?.modified.map { Self.date(milliseconds: $0.timestamp) } ?? "",
                        "link": ConsoleLinks.link("/console/record", zoneParameters + [("record", record.recordName)]),
                    ]
                }
                values["ran"] = true
                values["pageSize"] = Self.pageSize
                if let marker = result.continuationMarker {
                    values["next"] = ConsoleLinks.link(
                        "/console/query", zoneParameters + form.parameters + [("marker", marker)])
                }
            } catch let failure as ConsoleFailure {
                values["error"] = failure.message
                status = failure.status
            } catch let error as CloudError {
                values["error"] = "\(error.code.rawValue): \(error.reason)"
                status = .init(code: error.httpStatus)
            }
        }
        return html(status, pages.render("query", title: "Query", session: session, values))
    }

    /// `json` laid out one member a line, two spaces an indent. Only the
    /// whitespace between tokens changes: strings and numbers stay exactly
    /// as the protocol's encoder wrote them.
    static func prettyJSON(_ json: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(json.count * 2)
        var depth = 0
        var inString = false
        var escaped = false
        var index = 0
        func newLine() {
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: depth * 2))
        }
        while index < json.count {
            let byte = json[index]
            index += 1
            if inString {
                out.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                out.append(byte)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                out.append(byte)
                // An empty object or array stays `{}` or `[]`.
                if index < json.count, json[index] == UInt8(ascii: "}") || json[index] == UInt8(ascii: "]") {
                    out.append(json[index])
                    index += 1
                } else {
                    depth += 1
                    newLine()
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
                newLine()
                out.append(byte)
            case UInt8(ascii: ","):
                out.append(byte)
                newLine()
            case UInt8(ascii: ":"):
                out.append(contentsOf: [byte, UInt8(ascii: " ")])
            default:
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
