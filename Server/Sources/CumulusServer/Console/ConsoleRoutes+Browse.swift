import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension ConsoleRoutes {
    /// How many records a page of a zone shows.
    static let pageSize = 50

    func addBrowsing(to console: RouterGroup<CumulusRequestContext>) {
        console.get("users") { request, _ in try await page(request) { try await usersPage($0, $1) } }
        console.get("user") { request, _ in try await page(request) { try await userPage($0, $1) } }
        console.get("zones") { request, _ in try await page(request) { try await zonesPage($0, $1) } }
        console.get("records") { request, _ in try await page(request) { try await recordsPage($0, $1) } }
        console.get("record") { request, _ in try await page(request) { try await recordPage($0, $1) } }
        console.get("asset") { request, _ in try await page(request) { try await assetDownload($0, $1) } }
    }

    private func usersPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        guard let container = query["container"], !container.isEmpty else {
            throw ConsoleFailure(.badRequest, "Name a container.", back: "/console")
        }
        let users = try await service.users(container: container).map { account -> [String: Any] in
            [
                "name": account.name, "recordName": account.recordName, "email": account.emailAddress ?? "",
                "tokens": account.activeTokens, "blocked": account.isBlocked,
                "identities": account.identities.map { ["issuer": $0.issuer, "subject": $0.subject] },
                "link": ConsoleLinks.link("/console/user", [("container", container), ("name", account.name)]),
            ]
        }
        let values: [String: Any] = ["container": container, "users": users]
        return html(.ok, pages.render("users", title: "Users", session: session, values))
    }

    private func userPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        guard let container = query["container"], let name = query["name"] else {
            throw ConsoleFailure(.badRequest, "The link does not name a container and a user.")
        }
        let accounts = try await service.users(container: container)
        guard let account = accounts.first(where: { $0.name.isExactly(name) }) else {
            throw ConsoleFailure(.notFound, "No user of this name in the container.")
        }
        let tokens = try await service.webAuthTokens(ofUser: account.name, container: container).map { token in
            [
                "id": token.id, "created": Self.date(milliseconds: token.created),
                "expires": token.expires.map(Self.date(milliseconds:)) ?? "never",
                "revokeLink": Self.revokeLink(container: container, user: account.name, token: token.id),
            ]
        }
        var databases: [[String: Any]] = []
        for environment in [CloudEnvironment.development, .production] {
            for scope in [DatabaseScope.private, .shared, .public] {
                let database = ConsoleDatabase(
                    container: container, environment: environment, scope: scope, user: account.recordName)
                databases.append([
                    "environment": environment.rawValue, "scope": scope.rawValue,
                    "link": ConsoleLinks.link("/console/zones", database.parameters),
                ])
            }
        }
        var values: [String: Any] = [
            "container": container, "recordName": account.recordName, "databases": databases, "tokens": tokens,
            "removeLink": Self.removeLink(container: container, user: account.name),
        ]
        values.merge(try await notificationValues(container: container, user: account.recordName)) { $1 }
        return html(.ok, pages.render("user", title: account.name, session: session, values))
    }

    /// The zones the user's `zones/list` answers.
    private func zonesPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        guard case .zones(let zones) = try await service.perform(.listZones, as: database.caller) else {
            throw ConsoleFailure(.internalServerError, "zones/list answered something else.")
        }
        let rows = zones.map { zone -> [String: Any] in
            [
                "name": zone.zoneID.zoneName, "owner": zone.zoneID.namedOwner ?? database.user,
                "link": ConsoleLinks.link("/console/records", database.parameters(zone: zone.zoneID)),
                "deleteLink": Self.deleteZoneLink(database, zone.zoneID),
                "sharesLink": database.scope == .private ? Self.sharesLink(database, zone.zoneID) : false,
            ]
        }
        let values = Self.databaseValues(database).merging(["zones": rows]) { $1 }
        return html(.ok, pages.render("zones", title: "Zones", session: session, values))
    }

    /// A page of a zone's records by name, as the user may read them
    /// (``RecordService/browseRecords(in:after:limit:as:)``): a storage
    /// query with a limit, so a page reads no more of the zone than it shows.
    private func recordsPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let zoneID = try database.zoneID(query)
        let after = query["after"].flatMap { $0.isEmpty ? nil : $0 }
        let page = try await service.rules.browseRecords(
            in: zoneID, after: after, limit: Self.pageSize, as: database.caller)
        let zoneParameters = database.parameters(zone: zoneID)
        let rows = page.records.map { record -> [String: Any] in
            [
                "name": record.recordName, "type": record.recordType,
                "modified": record.metadata?.modified.map { Self.date(milliseconds: $0.timestamp) } ?? "",
                "link": ConsoleLinks.link("/console/record", zoneParameters + [("record", record.recordName)]),
            ]
        }
        var values = Self.databaseValues(database).merging(Self.zoneValues(zoneID, database)) { $1 }
        values["records"] = rows
        values["pageSize"] = Self.pageSize
        values["queryLink"] = ConsoleLinks.link("/console/query", zoneParameters)
        values.merge(Self.exportValues(database, zoneID)) { $1 }
        if database.scope == .private { values["sharesLink"] = Self.sharesLink(database, zoneID) }
        values["deletedLink"] = ConsoleLinks.link("/console/deleted", zoneParameters)
        if let next = page.nextAfter {
            values["next"] = ConsoleLinks.link("/console/records", zoneParameters + [("after", next)])
        }
        return html(.ok, pages.render("records", title: "Records", session: session, values))
    }

    /// The record as the user's `records/lookup` answers it.
    func lookUp(_ database: ConsoleDatabase, _ query: [String: String]) async throws -> (Record, ZoneID) {
        let zoneID = try database.zoneID(query)
        guard let name = query["record"], !name.isEmpty else {
            throw ConsoleFailure(.badRequest, "The link does not name a record.")
        }
        let request = CloudRequest.lookupRecords(recordNames: [name], zoneID: zoneID, desiredKeys: nil)
        guard case .records(let results) = try await service.perform(request, as: database.caller),
            let result = results.first
        else { throw ConsoleFailure(.internalServerError, "records/lookup answered something else.") }
        if let error = result.error { throw error }
        guard let record = result.record else { throw ConsoleFailure(.notFound, "The record was deleted.") }
        return (record, zoneID)
    }

    private func recordPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let (record, zoneID) = try await lookUp(database, query)
        let recordParameters = database.parameters(zone: zoneID) + [("record", record.recordName)]
        let fields = record.fields.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        var rows: [[String: Any]] = []
        var assets: [[String: Any]] = []
        for (name, value) in fields {
            var row: [String: Any] = ["name": name, "type": value.type.rawValue, "value": ConsoleValues.text(value)]
            if ConsoleValues.isEditable(value) {
                row["editLink"] = ConsoleLinks.link("/console/edit", recordParameters + [("field", name)])
            }
            rows.append(row)
            if case .asset(let asset) = value {
                var row: [String: Any] = [
                    "field": name, "size": asset.size.map { "\($0) bytes" } ?? "", "checksum": asset.fileChecksum ?? "",
                ]
                // Left out, not "", when there is none: an empty string still opens a Mustache section.
                if asset.downloadURL != nil {
                    row["download"] = ConsoleLinks.link("/console/asset", recordParameters + [("field", name)])
                }
                assets.append(row)
            }
        }
        var values = Self.databaseValues(database).merging(Self.zoneValues(zoneID, database)) { $1 }
        values["type"] = record.recordType
        values["changeTag"] = record.changeTag ?? ""
        values["created"] = Self.stamp(record.metadata?.created)
        values["modified"] = Self.stamp(record.metadata?.modified)
        if let parent = record.parent {
            values["parent"] = parent
            values["parentLink"] = ConsoleLinks.link(
                "/console/record", database.parameters(zone: zoneID) + [("record", parent)])
        }
        if let share = record.share { values["share"] = share }
        values["fields"] = rows
        values["assets"] = assets
        values["hasAssets"] = !assets.isEmpty
        values["deleteLink"] = ConsoleLinks.link("/console/delete", recordParameters)
        values.merge(try await standingValues(database, zoneID, record.recordName)) { $1 }
        return html(.ok, pages.render("record", title: record.recordName, session: session, values))
    }

    /// An asset's bytes, through the download URL the user's lookup gave:
    /// the console never makes a URL of its own for them.
    private func assetDownload(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let (record, _) = try await lookUp(database, query)
        guard let field = query["field"], case .asset(let asset)? = record[field], let url = asset.downloadURL,
            let token = Self.downloadToken(url)
        else { throw ConsoleFailure(.notFound, "The record has no asset in this field.") }
        let download = try await service.openAssetDownload(token: token, range: nil)
        let length = Int(download.range.upperBound - download.range.lowerBound)
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/octet-stream", .contentLength: String(length),
                .contentDisposition: "attachment",
            ],
            body: ResponseBody(contentLength: length) { writer in
                for try await chunk in download { try await writer.write(ByteBuffer(bytes: chunk)) }
                try await writer.finish(nil)
            })
    }

    /// The token of a download URL: the segment after `/assets/1/download/`.
    static func downloadToken(_ url: String) -> String? {
        guard let range = url.range(of: "/assets/1/download/") else { return nil }
        let token = url[range.upperBound...].prefix { $0 != "/" && $0 != "?" }
        return token.isEmpty ? nil : String(token)
    }

    static func databaseValues(_ database: ConsoleDatabase) -> [String: Any] {
        [
            "container": database.container, "environment": database.environment.rawValue,
            "scope": database.scope.rawValue, "user": database.user,
        ]
    }

    static func zoneValues(_ zoneID: ZoneID, _ database: ConsoleDatabase) -> [String: Any] {
        ["zone": zoneID.zoneName, "owner": zoneID.namedOwner ?? database.user]
    }

    static func date(milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000).ISO8601Format()
    }

    static func stamp(_ stamp: RecordStamp?) -> String {
        guard let stamp else { return "" }
        let who = stamp.userRecordName.map { " by \($0)" } ?? ""
        return date(milliseconds: stamp.timestamp) + who
    }
}
