import Crypto
import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("Console schema and containers")
struct ConsoleSchemaTests {
    static func note(_ name: String, _ fields: [String: FieldValue]) -> Record {
        Record(recordType: "Note", recordName: name, fields: fields)
    }

    /// A record written as `user`'s own `records/modify` in their private
    /// database of `environment` (the zone made first); the per-record error, if any.
    static func write(
        _ record: Record, zone: String, user: String, environment: CloudEnvironment, on server: ConsoleTestServer
    ) async throws -> CloudError? {
        let recordName = try await server.server.user(user).recordName
        let caller = Caller(container: server.container, environment: environment, scope: .private, user: recordName)
        let zoneID = ZoneID(zoneName: zone)
        _ = try await server.service.perform(.modifyZones([.create(zoneID)]), as: caller)
        var record = record
        record.zoneID = zoneID
        guard
            case .records(let results) = try await server.service.perform(
                .modifyRecords(operations: [RecordOperation(.create, record)], zoneID: zoneID, atomic: true),
                as: caller)
        else { throw CloudError(.internalError, reason: "records/modify answered something else") }
        return results.first?.error
    }

    /// The schema as the core reads it, by "type.field".
    static func schema(_ server: ConsoleTestServer) async throws -> [String: SchemaField] {
        let fields = try await server.service.rules.schemaFields(container: server.container)
        return Dictionary(uniqueKeysWithValues: fields.map { ("\($0.recordType).\($0.fieldName)", $0) })
    }

    @Test(
        "the schema page shows development and production side by side, what a deploy adds, and a type mismatch",
        arguments: TestStore.single)
    func sideBySide(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            try await server.seed(
                user: "alice", zone: "Notes", records: [Self.note("n1", ["title": .string("a"), "count": .int64(1)])])
            #expect(try await server.service.deploySchema(container: server.container) == 2)
            try await server.seed(
                user: "alice", zone: "Notes",
                records: [Self.note("n2", ["title": .string("b"), "body": .string("c")])],
                creatingZone: false)
            try await server.seed(
                user: "alice", zone: "Photos",
                records: [Record(recordType: "Photo", recordName: "p1", fields: ["size": .double(1.5)])])
            // Production typed the field otherwise, as an older deploy might have.
            try await server.service.storage.write { transaction in
                try await transaction.addFieldTypes(
                    [StoredFieldType(recordType: "Photo", fieldName: "size", type: .int64)],
                    container: server.container, environment: .production)
            }

            let session = try await server.signIn()
            let schemaLink = ConsoleTestServer.link("/console/schema", [("container", server.container)])
            let page = try await server.get(schemaLink, session: session)
            #expect(page.status == 200)
            let body = page.body
            #expect(body.contains("<td><code>title</code></td><td>STRING</td><td>STRING</td>"))
            #expect(body.contains("<td><code>count</code></td><td>INT64</td><td>INT64</td>"))
            #expect(body.contains("<td><code>body</code></td><td>STRING</td><td>—</td>\n<td><strong>deploying adds it"))
            #expect(
                body.contains("<td><code>size</code></td><td>DOUBLE</td><td>INT64</td>\n<td><span class=\"error\">"))
            #expect(body.contains("Deploying would add 1 field types to production."))
            #expect(body.contains("1 fields have another type in production"))
            // By record type, then by field, in byte order.
            let order = ["Note", "body", "count", "title", "Photo", "size"].compactMap {
                body.range(of: "<code>\($0)</code>")?.lowerBound
            }
            #expect(order.count == 6 && order == order.sorted())
            // Every field type of the protocol can be chosen for a new field.
            for type in FieldType.allCases { #expect(body.contains("<option value=\"\(type.rawValue)\">")) }

            // The deploy's confirmation lists what it adds and warns of the refusal.
            let confirm = try await server.get(
                ConsoleTestServer.link("/console/deploy", [("container", server.container)]), session: session)
            #expect(confirm.status == 200)
            #expect(confirm.body.contains("<td><code>Note</code></td><td><code>body</code></td><td>STRING</td>"))
            #expect(!confirm.body.contains("<code>title</code>") && confirm.body.contains("will be refused"))
            let csrf = try #require(confirm.hiddenValue("csrf"))
            let refused = try await server.send(
                .POST, "/console/deploy", session: session, form: [("container", server.container), ("csrf", csrf)])
            #expect(
                refused.status == 400 && refused.body.contains("field &#39;size&#39; of record type &#39;Photo&#39;"))
            #expect(try await Self.schema(server)["Note.body"]?.production == nil, "a refused deploy adds nothing")
        }
    }

    @Test(
        "a deploy from the console makes production accept the field; logged with the console token",
        arguments: TestStore.single)
    func deployMakesProductionAccept(store: TestStore) async throws {
        let log = LogLines()
        try await ConsoleTestServer.with(store: store, log: log) { server in
            try await server.seed(user: "alice", zone: "Notes", records: [Self.note("n1", ["title": .string("a")])])
            let production = Self.note("p1", ["title": .string("live")])
            let before = try await Self.write(
                production, zone: "Notes", user: "alice", environment: .production, on: server)
            #expect(before?.code == .badRequest && before?.reason.contains("not in the production schema") == true)

            let session = try await server.signIn()
            let confirm = try await server.get(
                ConsoleTestServer.link("/console/deploy", [("container", server.container)]), session: session)
            #expect(confirm.body.contains("<td><code>Note</code></td><td><code>title</code></td><td>STRING</td>"))
            let form = [("container", server.container), ("csrf", try #require(confirm.hiddenValue("csrf")))]
            let deployed = try await server.send(.POST, "/console/deploy", session: session, form: form)
            #expect(deployed.status == 200 && deployed.body.contains("production gained 1 field type."))
            let after = try await Self.write(
                production, zone: "Notes", user: "alice", environment: .production, on: server)
            #expect(after == nil, "\(String(describing: after))")
            let again = try await server.send(.POST, "/console/deploy", session: session, form: form)
            #expect(again.status == 200 && again.body.contains("production gained 0 field types."))

            let id = try #require(try await server.service.consoleTokens().first?.id)
            let lines = log.all.filter { $0.contains("console deployed the schema") }
            #expect(lines.count == 2 && lines.allSatisfy { $0.contains("consoleToken=\(id)") })
            #expect(lines.first?.contains("added=1") == true)
        }
    }

    @Test("adding a field types it in development at once; a duplicate, a bad name or type is refused")
    func addField() async throws {
        let log = LogLines()
        try await ConsoleTestServer.with(log: log) { server in
            // A write first, so the service's development schema is in memory when the field is added.
            try await server.seed(user: "alice", zone: "Notes", records: [Self.note("n1", ["title": .string("a")])])
            let session = try await server.signIn()
            let field = [
                ("container", server.container), ("recordType", "Note"), ("field", "rating"), ("type", "INT64"),
            ]
            let confirm = try await server.get(ConsoleTestServer.link("/console/add-field", field), session: session)
            #expect(confirm.status == 200 && confirm.body.contains("<code>rating</code>"))
            #expect(try await Self.schema(server)["Note.rating"] == nil, "the confirmation changes nothing")
            let csrf = try #require(confirm.hiddenValue("csrf"))
            let added = try await server.send(
                .POST, "/console/add-field", session: session, form: field + [("csrf", csrf)])
            #expect(added.status == 200)
            let row = try await Self.schema(server)["Note.rating"]
            #expect(row?.development == .int64 && row?.production == nil)
            // The service's schema in memory knows it at once: it types a value sent without a type.
            let lookup = try await server.service.fieldTypes(container: server.container, environment: .development)
            #expect(lookup("Note", "rating") == .int64)
            // Writes learn the new type: a string is refused, a number accepted.
            let text = try await Self.write(
                Self.note("n2", ["rating": .string("five")]), zone: "Notes", user: "alice", environment: .development,
                on: server)
            #expect(text?.reason.contains("is a INT64, not a STRING") == true, "\(String(describing: text))")
            let number = try await Self.write(
                Self.note("n3", ["rating": .int64(5)]), zone: "Notes", user: "alice", environment: .development,
                on: server)
            #expect(number == nil)

            let refusals: [([(String, String)], String)] = [
                (field, "INT64 in development already"),
                (field.map { $0.0 == "type" ? ("type", "STRING") : $0 }, "INT64 in development already"),
                (field.map { $0.0 == "field" ? ("field", "title") : $0 }, "STRING in development already"),
                (field.map { $0.0 == "field" ? ("field", "bad\u{0}name") : $0 }, "U+0000"),
                (field.map { $0.0 == "field" ? ("field", "") : $0 }, "may not be empty"),
                (field.map { $0.0 == "recordType" ? ("recordType", "") : $0 }, "may not be empty"),
                (field.map { $0.0 == "type" ? ("type", "NUMBER") : $0 }, "not a field type"),
            ]
            for (form, words) in refusals {
                let answer = try await server.send(
                    .POST, "/console/add-field", session: session, form: form + [("csrf", csrf)])
                #expect(answer.status == 400 && answer.body.contains(words), "\(form): \(answer.body)")
            }
            #expect(try await Self.schema(server)["Note.title"]?.development == .string)
            let unknown = try await server.send(
                .POST, "/console/add-field", session: session,
                form: field.map { $0.0 == "container" ? ("container", "no.such.container") : $0 } + [("csrf", csrf)])
            #expect(unknown.status == 404)

            let id = try #require(try await server.service.consoleTokens().first?.id)
            let lines = log.all.filter { $0.contains("console added a field type") }
            #expect(lines.count == 1 && lines.first?.contains("consoleToken=\(id)") == true)
            #expect(lines.first?.contains("field=rating") == true)
        }
    }

    @Test("deploy and add-field without a session, without a CSRF token or with a wrong one change nothing")
    func csrfRefusals() async throws {
        try await ConsoleTestServer.with { server in
            try await server.seed(user: "alice", zone: "Notes", records: [Self.note("n1", ["title": .string("a")])])
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)
            let forms: [(String, [(String, String)])] = [
                ("/console/deploy", [("container", server.container)]),
                (
                    "/console/add-field",
                    [("container", server.container), ("recordType", "Note"), ("field", "extra"), ("type", "STRING")]
                ),
            ]
            for (path, form) in forms {
                let refusals: [(String?, [(String, String)], Int)] = [
                    (nil, form + [("csrf", csrf)], 401),
                    (session, form, 403),
                    (session, form + [("csrf", "")], 403),
                    (session, form + [("csrf", String(csrf.dropLast()) + (csrf.hasSuffix("0") ? "1" : "0"))], 403),
                ]
                for (cookie, fields, status) in refusals {
                    let answer = try await server.send(.POST, path, session: cookie, form: fields)
                    #expect(answer.status == status, "\(path)")
                }
                // A GET with the token only asks.
                let get = try await server.get(ConsoleTestServer.link(path, form + [("csrf", csrf)]), session: session)
                #expect(get.status == 200)
            }
            let schema = try await Self.schema(server)
            #expect(schema["Note.title"]?.production == nil && schema["Note.extra"] == nil)
        }
    }

    @Test("hostile record types and field names are escaped on the schema pages")
    func escaping() async throws {
        try await ConsoleTestServer.with { server in
            var fields: [String: FieldValue] = [:]
            for (index, name) in ConsoleEscapingTests.hostile.enumerated() { fields[name] = .int64(Int64(index)) }
            fields[ConsoleEscapingTests.longUnicode] = .string("long")
            let recordType = "<script>alert(1)</script>\"onmouseover=x"
            try await server.seed(
                user: "alice", zone: "Notes",
                records: [Record(recordType: recordType, recordName: "n1", fields: fields)])
            let session = try await server.signIn()
            let container = [("container", server.container)]
            let pages = [
                ConsoleTestServer.link("/console/schema", container),
                ConsoleTestServer.link("/console/deploy", container),
                ConsoleTestServer.link(
                    "/console/add-field",
                    container + [("recordType", recordType), ("field", "\"onmouseover=alert(1)"), ("type", "STRING")]),
            ]
            for page in pages {
                let answer = try await server.get(page, session: session)
                #expect(answer.status == 200, "\(page)")
                ConsoleEscapingTests.expectEscaped(answer.body, page: page)
            }
            let schema = try await server.get(pages[0], session: session).body
            #expect(
                ConsoleEscapingTests.containsBytes(schema, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;onmouseover=x"))
            #expect(ConsoleEscapingTests.containsBytes(schema, ConsoleEscapingTests.longUnicode))
            // The add-field confirmation carries the hostile names back escaped, and posting them adds them as they are.
            let confirm = try await server.get(pages[2], session: session)
            let form =
                container + [
                    ("recordType", recordType), ("field", "\"onmouseover=alert(1)"), ("type", "STRING"),
                    ("csrf", try #require(confirm.hiddenValue("csrf"))),
                ]
            #expect(try await server.send(.POST, "/console/add-field", session: session, form: form).status == 200)
            let added = try await Self.schema(server)["\(recordType).\"onmouseover=alert(1)"]
            #expect(added?.development == .string)
        }
    }

    @Test("the home page lists the containers; a container's page shows its users link, issuers, keys and schema")
    func containerPage() async throws {
        try await ConsoleTestServer.with { server in
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            try await server.service.addIdentityIssuer(
                StoredIdentityIssuer(
                    issuer: "https://issuer.example/<b>", audiences: ["app.one", "app\"two"],
                    keySetURL: "https://issuer.example/jwks.json", keySet: nil),
                container: server.container)
            let session = try await server.signIn()
            let home = try await server.get("/console", session: session)
            let link = ConsoleTestServer.link("/console/container", [("container", server.container)])
            #expect(home.body.contains("<a href=\"\(link)\">\(server.container)</a>"))
            #expect(try await server.service.containerNames() == [server.container])

            let page = try await server.get(link, session: session)
            #expect(page.status == 200)
            #expect(page.body.contains(ConsoleTestServer.link("/console/users", [("container", server.container)])))
            #expect(page.body.contains(ConsoleTestServer.link("/console/schema", [("container", server.container)])))
            #expect(page.body.contains("<code>\(keyID)</code>"))
            #expect(page.body.contains("<code>https://issuer.example/&lt;b&gt;</code>"))
            #expect(page.body.contains("<code>app&quot;two</code>") && page.body.contains("jwks.json"))
            let unknown = try await server.get(
                ConsoleTestServer.link("/console/container", [("container", "<script>x</script>")]), session: session)
            #expect(unknown.status == 404)
            ConsoleEscapingTests.expectEscaped(unknown.body, page: "unknown container")
            let noSchema = try await server.get(
                ConsoleTestServer.link("/console/schema", [("container", "no.such.container")]), session: session)
            #expect(noSchema.status == 404)
        }
    }
}
