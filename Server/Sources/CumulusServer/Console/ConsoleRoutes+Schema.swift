import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import Hummingbird

extension ConsoleRoutes {
    func addSchema(to console: RouterGroup<CumulusRequestContext>) {
        console.get("container") { request, _ in try await page(request) { try await containerPage($0, $1) } }
        console.get("schema") { request, _ in try await page(request) { try await schemaPage($0, $1) } }
        console.get("deploy") { request, _ in try await page(request) { try await confirmDeploy($0, $1) } }
        console.post("deploy") { request, _ in try await change(request) { try await deploy($0, $1) } }
        console.get("add-field") { request, _ in try await page(request) { try await confirmAddField($0, $1) } }
        console.post("add-field") { request, _ in try await change(request) { try await addField($0, $1) } }
    }

    /// The home page's values: every container, linked to its page.
    func homeValues() async throws -> [String: Any] {
        let containers = try await service.containerNames().map { name -> [String: String] in
            ["name": name, "link": ConsoleLinks.link("/console/container", [("container", name)])]
        }
        return ["containers": containers]
    }

    /// A container's users, identity issuers, server-to-server keys and schema.
    private func containerPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let container = try Self.container(query)
        // Lists the keys first: an unknown container is NOT_FOUND there.
        let keys = try await service.serverKeys(container: container).map {
            ["id": $0.id, "fingerprint": $0.fingerprint]
        }
        let issuers = try await service.identityIssuers(container: container).map { issuer -> [String: Any] in
            ["issuer": issuer.issuer, "audiences": issuer.audiences, "keySetURL": issuer.keySetURL ?? ""]
        }
        let values: [String: Any] = [
            "container": container, "keys": keys, "issuers": issuers,
            "usersLink": ConsoleLinks.link("/console/users", [("container", container)]),
            "schemaLink": Self.schemaLink(container),
        ]
        return html(.ok, pages.render("container", title: "Container", session: session, values))
    }

    /// Each record type's fields, development and production side by side.
    private func schemaPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let container = try Self.container(query)
        let fields = try await service.rules.schemaFields(container: container)
        var types: [[String: Any]] = []
        var start = fields.startIndex
        while start < fields.endIndex {
            // The fields come grouped by record type: one table each.
            let recordType = fields[start].recordType
            let end = fields[start...].firstIndex { !$0.recordType.isExactly(recordType) } ?? fields.endIndex
            types.append(["name": recordType, "fields": fields[start..<end].map(Self.fieldRow)])
            start = end
        }
        var values = Self.deployValues(fields)
        values["container"] = container
        values["types"] = types
        values["fieldTypes"] = FieldType.allCases.map(\.rawValue)
        values["containerLink"] = ConsoleLinks.link("/console/container", [("container", container)])
        values["deployLink"] = ConsoleLinks.link("/console/deploy", [("container", container)])
        return html(.ok, pages.render("schema", title: "Schema", session: session, values))
    }

    private func confirmDeploy(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let container = try Self.container(query)
        let fields = try await service.rules.schemaFields(container: container)
        var values = Self.deployValues(fields)
        values["added"] = fields.filter(\.isDeployable).map(Self.fieldRow)
        values["container"] = container
        values["csrf"] = session.csrfToken
        values["back"] = Self.schemaLink(container)
        return html(.ok, pages.render("confirmDeploy", title: "Deploy the schema", session: session, values))
    }

    /// The deploy `cumulus schema deploy` makes.
    private func deploy(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let container = try Self.container(form)
        let back = Self.schemaLink(container)
        let added = try await Self.refusing(back: back) { try await service.deploySchema(container: container) }
        logger.notice(
            "console deployed the schema",
            metadata: ["consoleToken": "\(session.tokenID)", "container": "\(container)", "added": "\(added)"])
        let values: [String: Any] = [
            "text": "Deployed: production gained \(added) field type\(added == 1 ? "" : "s").", "back": back,
        ]
        return html(.ok, pages.render("message", title: "Deployed", session: session, values))
    }

    private func confirmAddField(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let (container, type) = try Self.fieldType(query)
        let values: [String: Any] = [
            "container": container, "recordType": type.recordType, "field": type.fieldName,
            "type": type.type.rawValue, "csrf": session.csrfToken, "back": Self.schemaLink(container),
        ]
        return html(.ok, pages.render("confirmAddField", title: "Add a field", session: session, values))
    }

    private func addField(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let (container, type) = try Self.fieldType(form)
        let back = Self.schemaLink(container)
        try await Self.refusing(back: back) {
            try await service.rules.addDevelopmentFieldType(type, container: container)
        }
        logger.notice(
            "console added a field type",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(container)", "recordType": "\(type.recordType)",
                "field": "\(type.fieldName)", "type": "\(type.type.rawValue)",
            ])
        let values: [String: Any] = [
            "text": "Added: \(type.fieldName) of \(type.recordType) is a \(type.type.rawValue) in development.",
            "back": back,
        ]
        return html(.ok, pages.render("message", title: "Field added", session: session, values))
    }

    // MARK: Values

    private static func container(_ query: [String: String]) throws -> String {
        guard let container = query["container"], !container.isEmpty else {
            throw ConsoleFailure(.badRequest, "Name a container.", back: "/console")
        }
        return container
    }

    /// The container and field type a form names; an unknown type is refused here, names by the core.
    private static func fieldType(_ query: [String: String]) throws -> (String, StoredFieldType) {
        let container = try container(query)
        guard let type = query["type"].flatMap(FieldType.init(rawValue:)) else {
            throw ConsoleFailure(.badRequest, "That is not a field type.", back: schemaLink(container))
        }
        let stored = StoredFieldType(
            recordType: query["recordType"] ?? "", fieldName: query["field"] ?? "", type: type)
        return (container, stored)
    }

    static func schemaLink(_ container: String) -> String {
        ConsoleLinks.link("/console/schema", [("container", container)])
    }

    private static func fieldRow(_ field: SchemaField) -> [String: Any] {
        [
            "recordType": field.recordType, "name": field.fieldName, "development": field.development?.rawValue ?? "—",
            "production": field.production?.rawValue ?? "—", "deployable": field.isDeployable,
            "mismatch": field.isMismatched,
        ]
    }

    /// What a deploy would do: how many fields it adds, and how many refuse it.
    private static func deployValues(_ fields: [SchemaField]) -> [String: Any] {
        let count = fields.count(where: \.isDeployable)
        let mismatches = fields.count(where: \.isMismatched)
        var values: [String: Any] = [:]
        if count > 0 { values["deployCount"] = count }
        if mismatches > 0 { values["mismatches"] = mismatches }
        return values
    }

    /// `body`, with a refusal of the core's as a page that leads back.
    @discardableResult
    private static func refusing<T>(back: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CloudError {
            throw ConsoleFailure(.init(code: error.httpStatus), "\(error.code.rawValue): \(error.reason)", back: back)
        }
    }
}
