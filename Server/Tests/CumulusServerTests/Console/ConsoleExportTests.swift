import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

@Suite("Console: export and import of a zone as JSON lines")
struct ConsoleExportTests {
    /// Records of every kind the export carries: texts, numbers, a list, a location, references.
    static func records() -> [Record] {
        let things = ZoneID(zoneName: "Things")
        var records = [
            Record(
                recordType: "Thing", recordName: "r1",
                fields: [
                    "title": .string("<script>alert(1)</script>\"onmouseover=x 日本語🙂"), "count": .int64(-42),
                    "ratio": .double(0.125), "tags": .stringList(["a", "b", "javascript:x"]),
                    "sizes": .int64List([1, 2, 3]),
                    "place": .location(Location(latitude: 48.85, longitude: 2.35)),
                    "other": .reference(Reference(recordName: "r2", zoneID: things)),
                    "when": .timestamp(Date(timeIntervalSince1970: 1_700_000_000.5)),
                ]),
            Record(recordType: "Thing", recordName: "r2", fields: ["title": .string("second")]),
        ]
        // More than a page, so that the export reads the zone page by page.
        for index in 0..<60 {
            records.append(
                Record(recordType: "Filler", recordName: "f\(index)", fields: ["n": .int64(Int64(index))]))
        }
        return records
    }

    static func importParameters(_ server: ConsoleTestServer, user: String, zone: String, environment: String)
        async throws -> [(String, String)]
    {
        let recordName = try await server.server.user(user).recordName
        return [("container", server.container), ("environment", environment), ("user", recordName), ("zone", zone)]
    }

    @Test(
        "a zone exported as the wire JSON records/lookup answers, imported into another user's zone, reads back equal",
        arguments: TestStore.single)
    func exportThenImport(_ store: TestStore) async throws {
        let log = LogLines()
        try await ConsoleTestServer.with(store: store, log: log) { server in
            try await server.seed(user: "alice", zone: "Things", records: Self.records())
            let session = try await server.signIn()
            let zone = try await server.zoneParameters(user: "alice", zone: "Things")
            let recordsPage = try await server.get(ConsoleTestServer.link("/console/records", zone), session: session)
            let exportLink = ConsoleTestServer.link("/console/export", zone)
            #expect(recordsPage.body.contains(exportLink.replacingOccurrences(of: "&", with: "&amp;")))
            #expect(recordsPage.body.contains("Import JSON lines"))

            let export = try await server.get(exportLink, session: session)
            #expect(export.status == 200)
            #expect(export.headers["Content-Disposition"].first == "attachment; filename=\"Things.jsonl\"")
            #expect(export.headers["Content-Type"].first?.hasPrefix("application/x-ndjson") == true)
            let lines = export.body.split(separator: "\n")
            #expect(lines.count == 62)
            // Each line is the record's wire form, byte for byte what records/lookup gives its owner.
            let r1 = try #require(try await server.lookUp("r1", zone: "Things", user: "alice"))
            let line = try #require(lines.first { $0.contains("\"recordName\":\"r1\"") })
            #expect(Array(line.utf8) == (try WireFormat.encode(r1)))

            let target = try await Self.importParameters(
                server, user: "bob", zone: "Copied", environment: "development")
            let form = try await server.get(ConsoleTestServer.link("/console/import", target), session: session)
            #expect(form.status == 200)
            let csrf = try #require(form.hiddenValue("csrf"))
            // A text area posts CRLF line breaks.
            let text = export.body.replacingOccurrences(of: "\n", with: "\r\n")
            let imported = try await server.send(
                .POST, "/console/import", session: session, form: target + [("lines", text), ("csrf", csrf)])
            #expect(imported.status == 200, "\(imported.body)")
            #expect(imported.body.contains("Imported 62 records"))
            for original in Self.records() {
                let copy = try #require(try await server.lookUp(original.recordName, zone: "Copied", user: "bob"))
                #expect(copy.recordType == original.recordType)
                for (name, value) in original.fields where name != "other" {
                    #expect(copy[name] == value, "\(original.recordName).\(name)")
                }
                #expect(copy.fields.count == original.fields.count)
            }
            let copied = try #require(try await server.lookUp("r1", zone: "Copied", user: "bob"))
            guard case .reference(let reference)? = copied["other"] else {
                Issue.record("the reference did not come back")
                return
            }
            #expect(reference.recordName == "r2" && reference.zoneID?.zoneName != "Things")
            // Server metadata is the import's own: created by Bob's request, not copied from Alice's record.
            let bob = try await server.server.user("bob").recordName
            #expect(copied.metadata?.created?.userRecordName == bob)

            // The same lines again: the names are taken, so nothing is overwritten and nothing claimed.
            let again = try await server.send(
                .POST, "/console/import", session: session, form: target + [("lines", text), ("csrf", csrf)])
            #expect(again.status == 409)
            #expect(again.body.contains("Line 1 was refused: EXISTS") && again.body.contains("Imported 0 records"))
            #expect(try await server.lookUp("r1", zone: "Copied", user: "bob")?.changeTag == copied.changeTag)
            let logged = log.all.filter { $0.contains("console imported records") }
            #expect(logged.count == 2 && logged[0].contains("records=62") && logged[0].contains("consoleToken="))
        }
    }

    @Test(
        "an import stops at the batch that fails, and says which line and what was written before it",
        arguments: TestStore.single)
    func failedBatch(_ store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            try await server.seed(
                user: "bob", zone: "Copied", records: [Record(recordType: "Thing", recordName: "taken", fields: [:])])
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)
            var lines: [String] = []
            for index in 0..<150 {
                let record = Record(recordType: "Thing", recordName: "n\(index)", fields: ["n": .int64(Int64(index))])
                lines.append(String(decoding: try WireFormat.encode(record), as: UTF8.self))
            }
            // Line 121 is in the second batch of 100: the first batch is written, nothing of the second.
            lines[120] = String(
                decoding: try WireFormat.encode(Record(recordType: "Thing", recordName: "taken", fields: [:])),
                as: UTF8.self)
            let target = try await Self.importParameters(
                server, user: "bob", zone: "Copied", environment: "development")
            let answer = try await server.send(
                .POST, "/console/import", session: session,
                form: target + [("lines", lines.joined(separator: "\n")), ("csrf", csrf)])
            #expect(answer.status == 409)
            #expect(
                answer.body.contains("Line 121 was refused: EXISTS") && answer.body.contains("Imported 100 records"))
            #expect(try await server.lookUp("n99", zone: "Copied", user: "bob") != nil)
            #expect(try await server.lookUp("n100", zone: "Copied", user: "bob") == nil)
            #expect(try await server.lookUp("n149", zone: "Copied", user: "bob") == nil)

            // A batch refused as a whole (a name the protocol refuses) is named by its first line.
            lines[120] = #"{"recordName":"bad\u0000name","recordType":"Thing","fields":{}}"#
            let refused = try await server.send(
                .POST, "/console/import", session: session,
                form: target + [("lines", lines.suffix(from: 100).joined(separator: "\n")), ("csrf", csrf)])
            #expect(refused.status == 409)
            #expect(refused.body.contains("The batch from line 1 was refused: BAD_REQUEST"), "\(refused.body)")
            #expect(refused.body.contains("Imported 0 records"))
            #expect(try await server.lookUp("n100", zone: "Copied", user: "bob") == nil)
        }
    }

    @Test("an import into the default zone, which is never atomic, writes each record by itself")
    func defaultZone() async throws {
        try await ConsoleTestServer.with { server in
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)
            let lines = try ["d1", "d2", "d3"].map { name in
                String(
                    decoding: try WireFormat.encode(
                        Record(recordType: "Thing", recordName: name, fields: ["t": .string(name)])),
                    as: UTF8.self)
            }
            let target = try await Self.importParameters(
                server, user: "bob", zone: "_defaultZone", environment: "development")
            let first = try await server.send(
                .POST, "/console/import", session: session,
                form: target + [("lines", lines[0]), ("csrf", csrf)])
            #expect(first.status == 200)
            let answer = try await server.send(
                .POST, "/console/import", session: session,
                form: target + [("lines", lines.reversed().joined(separator: "\n")), ("csrf", csrf)])
            // d3 and d2 are written, then d1 is taken: the answer says exactly that.
            #expect(answer.status == 409)
            #expect(answer.body.contains("Line 3 was refused: EXISTS") && answer.body.contains("Imported 2 records"))
            for name in ["d1", "d2", "d3"] {
                #expect(try await server.lookUp(name, zone: "_defaultZone", user: "bob")?["t"] == .string(name))
            }
        }
    }

    @Test("imports into production, malformed lines and forms without the CSRF token are refused, writing nothing")
    func refusals() async throws {
        try await ConsoleTestServer.with { server in
            let good = String(
                decoding: try WireFormat.encode(
                    Record(recordType: "Thing", recordName: "g1", fields: ["t": .string("x")])),
                as: UTF8.self)
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)

            let production = try await Self.importParameters(
                server, user: "bob", zone: "Copied", environment: "production")
            let page = try await server.get(ConsoleTestServer.link("/console/import", production), session: session)
            #expect(page.status == 403 && page.body.contains("development environment only"))
            let posted = try await server.send(
                .POST, "/console/import", session: session, form: production + [("lines", good), ("csrf", csrf)])
            #expect(posted.status == 403 && posted.body.contains("Nothing was imported"))
            let bob = try await server.server.user("bob").recordName
            let bobProduction = Caller(
                container: server.container, environment: .production, scope: .private, user: bob)
            guard case .zones(let zones) = try await server.service.perform(.listZones, as: bobProduction) else {
                throw CloudError(.internalError, reason: "zones/list answered something else")
            }
            #expect(!zones.contains { $0.zoneID.zoneName == "Copied" })

            let target = try await Self.importParameters(
                server, user: "bob", zone: "Copied", environment: "development")
            let malformed = [
                good, "", "{\"recordName\":\"g2\",\"recordType\":", good.replacingOccurrences(of: "g1", with: "g3"),
            ]
            let bad = try await server.send(
                .POST, "/console/import", session: session,
                form: target + [("lines", malformed.joined(separator: "\n")), ("csrf", csrf)])
            #expect(
                bad.status == 400 && bad.body.contains("Line 3 is not a record")
                    && bad.body.contains("Nothing was imported"))
            #expect(try await server.lookUp("g1", zone: "Copied", user: "bob") == nil)

            let asset =
                #"{"recordName":"a1","recordType":"T","fields":{"file":{"type":"ASSETID","value":{"fileChecksum":"x","size":1}}}}"#
            let withAsset = try await server.send(
                .POST, "/console/import", session: session,
                form: target + [("lines", good + "\n" + asset), ("csrf", csrf)])
            #expect(withAsset.status == 400 && withAsset.body.contains("Line 2: field file holds an asset"))

            let noToken = try await server.send(
                .POST, "/console/import", session: session, form: target + [("lines", good)])
            #expect(noToken.status == 403)
            let noSession = try await server.send(
                .POST, "/console/import", form: target + [("lines", good), ("csrf", csrf)])
            #expect(noSession.status == 401)
            #expect(try await server.lookUp("g1", zone: "Copied", user: "bob") == nil)
            // The export needs the session too.
            let zone = try await server.zoneParameters(user: "bob", zone: "Copied")
            #expect(try await server.get(ConsoleTestServer.link("/console/export", zone)).status == 303)
        }
    }

    @Test("hostile zone names are escaped on the delete and import pages, and kept out of the file name")
    func hostileZoneNames() async throws {
        try await ConsoleTestServer.with { server in
            let zone = "<b>zone</b>\"'&\u{301}<script>x</script>"
            try await server.seed(
                user: "alice", zone: zone, records: [Record(recordType: "T", recordName: "n", fields: [:])])
            let session = try await server.signIn()
            let parameters = try await server.zoneParameters(user: "alice", zone: zone)
            let target = try await Self.importParameters(server, user: "alice", zone: zone, environment: "development")
            for link in [
                ConsoleTestServer.link("/console/delete-zone", parameters),
                ConsoleTestServer.link("/console/import", target),
                ConsoleTestServer.link("/console/records", parameters),
            ] {
                let page = try await server.get(link, session: session)
                #expect(page.status == 200, "\(link)")
                ConsoleEscapingTests.expectEscaped(page.body, page: link)
            }
            let export = try await server.get(ConsoleTestServer.link("/console/export", parameters), session: session)
            let disposition = try #require(export.headers["Content-Disposition"].first)
            #expect(disposition == "attachment; filename=\"_b_zone__b______script_x__script_.jsonl\"")
        }
    }
}
