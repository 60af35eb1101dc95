import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("Console changes")
struct ConsoleChangeTests {
    static func note(_ name: String, title: String, count: Int64 = 1) -> Record {
        Record(recordType: "Note", recordName: name, fields: ["title": .string(title), "count": .int64(count)])
    }

    @Test("a POST without a session, without a CSRF token or with a wrong one is refused and changes nothing")
    func csrfRefusals() async throws {
        try await ConsoleTestServer.with { server in
            let saved = try await server.seed(user: "alice", zone: "Notes", records: [Self.note("n1", title: "kept")])
            let before = try #require(saved.first?.changeTag)
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)
            let record = try await server.zoneParameters(user: "alice", zone: "Notes") + [("record", "n1")]
            let edit = record + [("field", "title"), ("value", "changed"), ("changeTag", before)]
            let refusals: [(String?, [(String, String)], Int)] = [
                (nil, edit + [("csrf", csrf)], 401),
                (session, edit, 403),
                (session, edit + [("csrf", "")], 403),
                (session, edit + [("csrf", String(csrf.dropLast()) + (csrf.hasSuffix("0") ? "1" : "0"))], 403),
                (session, edit + [("csrf", csrf.uppercased())], 403),
            ]
            for (cookie, form, status) in refusals {
                for path in ["/console/edit", "/console/delete"] {
                    let answer = try await server.send(.POST, path, session: cookie, form: form)
                    #expect(answer.status == status, "\(path) \(form.last ?? ("", ""))")
                }
            }
            let after = try #require(try await server.lookUp("n1", zone: "Notes", user: "alice"))
            #expect(after.changeTag == before && after["title"] == .string("kept"))
            // The same form with the right token goes through: the refusals were the token's doing.
            let accepted = try await server.send(
                .POST, "/console/edit", session: session, form: edit + [("csrf", csrf)])
            #expect(accepted.status == 200)
            #expect(try await server.lookUp("n1", zone: "Notes", user: "alice")?["title"] == .string("changed"))
        }
    }

    @Test("a text's line breaks survive an edit: a text area, and the browser's CRLFs back to the record's LFs")
    func multiLineTextKeepsItsLineBreaks() async throws {
        try await ConsoleTestServer.with { server in
            let saved = try await server.seed(
                user: "alice", zone: "Notes", records: [Self.note("n1", title: "line one\nline two")])
            let before = try #require(saved.first?.changeTag)
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)
            let record = try await server.zoneParameters(user: "alice", zone: "Notes") + [("record", "n1")]
            let page = try await server.get(
                ConsoleTestServer.link("/console/edit", record + [("field", "title")]), session: session)
            #expect(page.status == 200)
            #expect(
                page.body.contains("<textarea id=\"value\" name=\"value\" rows=\"6\">\nline one\nline two</textarea>"))
            let count = try await server.get(
                ConsoleTestServer.link("/console/edit", record + [("field", "count")]), session: session)
            #expect(count.body.contains("<input id=\"value\" name=\"value\" value=\"1\">"))

            let form =
                record + [("field", "title"), ("value", "line one\r\nline 2"), ("changeTag", before), ("csrf", csrf)]
            #expect(try await server.send(.POST, "/console/edit", session: session, form: form).status == 200)
            let after = try #require(try await server.lookUp("n1", zone: "Notes", user: "alice"))
            #expect(after["title"] == .string("line one\nline 2"))
        }
    }

    @Test("GETs never change anything, whatever they carry")
    func getsChangeNothing() async throws {
        try await ConsoleTestServer.with { server in
            let saved = try await server.seed(user: "alice", zone: "Notes", records: [Self.note("n1", title: "kept")])
            let before = try #require(saved.first?.changeTag)
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)
            let record = try await server.zoneParameters(user: "alice", zone: "Notes") + [("record", "n1")]
            let change = record + [("field", "title"), ("value", "changed"), ("changeTag", before), ("csrf", csrf)]
            for path in ["/console/edit", "/console/delete", "/console/record", "/console/sign-out"] {
                let answer = try await server.get(ConsoleTestServer.link(path, change), session: session)
                #expect(answer.status != 500, "\(path)")
            }
            let after = try #require(try await server.lookUp("n1", zone: "Notes", user: "alice"))
            #expect(after.changeTag == before && after["title"] == .string("kept"))
            #expect(try await server.get("/console", session: session).status == 200, "GET sign-out did not sign out")
        }
    }

    @Test("an edit is the owner's records/modify: a new change tag, typed, a stale form refused, each change logged")
    func editAndDelete() async throws {
        let log = LogLines()
        try await ConsoleTestServer.with(log: log) { server in
            let saved = try await server.seed(
                user: "alice", zone: "Notes",
                records: [Self.note("n1", title: "a", count: 3), Self.note("n2", title: "b")])
            let session = try await server.signIn()
            let record = try await server.zoneParameters(user: "alice", zone: "Notes") + [("record", "n1")]
            let confirm = try await server.get(
                ConsoleTestServer.link("/console/edit", record + [("field", "count")]), session: session)
            #expect(confirm.status == 200)
            let csrf = try #require(confirm.hiddenValue("csrf"))
            let tag = try #require(confirm.hiddenValue("changeTag"))
            #expect(tag == saved[0].changeTag)
            let form = record + [("field", "count"), ("changeTag", tag), ("csrf", csrf)]
            let notNumber = try await server.send(
                .POST, "/console/edit", session: session, form: form + [("value", "x")])
            #expect(notNumber.status == 400)
            let edited = try await server.send(.POST, "/console/edit", session: session, form: form + [("value", "42")])
            #expect(edited.status == 200)
            let after = try #require(try await server.lookUp("n1", zone: "Notes", user: "alice"))
            #expect(after["count"] == .int64(42) && after["title"] == .string("a"))
            #expect(after.changeTag != tag)
            let stale = try await server.send(.POST, "/console/edit", session: session, form: form + [("value", "7")])
            #expect(stale.status == 409)
            #expect(try await server.lookUp("n1", zone: "Notes", user: "alice")?["count"] == .int64(42))

            let second = try await server.zoneParameters(user: "alice", zone: "Notes") + [("record", "n2")]
            let ask = try await server.get(ConsoleTestServer.link("/console/delete", second), session: session)
            let deleteForm =
                second + [
                    ("changeTag", try #require(ask.hiddenValue("changeTag"))),
                    ("csrf", try #require(ask.hiddenValue("csrf"))),
                ]
            #expect(try await server.send(.POST, "/console/delete", session: session, form: deleteForm).status == 200)
            #expect(try await server.lookUp("n2", zone: "Notes", user: "alice") == nil)

            // Each change is logged with the console token's ID (never the token), the record and its owner.
            let id = try #require(try await server.service.consoleTokens().first?.id)
            let alice = try await server.server.user("alice").recordName
            let changes = log.all.filter { $0.contains("console edited") || $0.contains("console deleted") }
            #expect(changes.count == 2)
            #expect(changes.allSatisfy { $0.contains("consoleToken=\(id)") && $0.contains("owner=\(alice)") })
            #expect(changes.first?.contains("field=count") == true && changes.last?.contains("record=n2") == true)
            #expect(!log.all.contains { $0.contains(server.token) })
        }
    }
}
