import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("Console escaping")
struct ConsoleEscapingTests {
    /// Values that would run or break out of an attribute if they went out as they are.
    static let hostile = [
        "<script>alert(1)</script>", "\"onmouseover=alert(1) x=\"", "'onfocus=alert(2) '", "javascript:alert(3)",
        // A quote then a combining mark: one Character, but the browser sees the quote.
        "\"\u{301} onmouseover=alert(4)", "<\u{301}img src=x onerror=alert(5)>", "&lt;b&gt;",
    ]
    static let longUnicode = String(repeating: "é日本語🙂\u{202E}", count: 400)

    @Test("hostile record fields, record names and zone names come back escaped on every page")
    func everythingEscaped() async throws {
        try await ConsoleTestServer.with { server in
            let zone = "<b>zone</b>\"'&\u{301}"
            let name = "<script>n</script>\"onmouseover=x\u{301}" + "日本"
            var fields: [String: FieldValue] = [:]
            for (index, text) in Self.hostile.enumerated() { fields["f\(index)"] = .string(text) }
            fields["long"] = .string(Self.longUnicode)
            fields["list"] = .stringList(Self.hostile)
            let record = Record(recordType: "Note<script>", recordName: name, fields: fields)
            try await server.seed(user: "alice", zone: zone, records: [record])
            let session = try await server.signIn()
            let alice = try await server.server.user("alice").recordName
            let database = [
                ("container", server.container), ("environment", "development"), ("scope", "private"), ("user", alice),
            ]
            let zoneParameters = database + [("zone", zone), ("owner", "")]
            let pages = [
                ConsoleTestServer.link("/console/zones", database),
                ConsoleTestServer.link("/console/records", zoneParameters),
                ConsoleTestServer.link("/console/record", zoneParameters + [("record", name)]),
                ConsoleTestServer.link("/console/edit", zoneParameters + [("record", name), ("field", "f1")]),
                ConsoleTestServer.link("/console/delete", zoneParameters + [("record", name)]),
            ]
            for page in pages {
                let answer = try await server.get(page, session: session)
                #expect(answer.status == 200, "\(page)")
                Self.expectEscaped(answer.body, page: page)
            }
            let recordPage = try await server.get(pages[2], session: session).body
            #expect(Self.containsBytes(recordPage, "&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(Self.containsBytes(recordPage, "&quot;\u{301} onmouseover=alert(4)"))
            #expect(Self.containsBytes(recordPage, "&amp;lt;b&amp;gt;"))
            #expect(Self.containsBytes(recordPage, Self.longUnicode), "Unicode goes out whole, not mangled")
            // Links carry names percent-encoded: nothing in an href can end the attribute or the query.
            let zonesPage = try await server.get(pages[0], session: session).body
            #expect(Self.containsBytes(zonesPage, "zone=" + ConsoleTestServer.encoded(zone)))
            let recordsPage = try await server.get(pages[1], session: session).body
            #expect(Self.containsBytes(recordsPage, "record=" + ConsoleTestServer.encoded(name)))
            // A failure quoting the hostile name is escaped too.
            let missing = ConsoleTestServer.link("/console/users", [("container", "<script>x</script>")])
            Self.expectEscaped(try await server.get(missing, session: session).body, page: missing)
        }
    }

    /// No hostile value went out raw: no script element, no tag opened by
    /// a value, no attribute opened by one. Searched byte for byte, so that
    /// a combining mark does not hide a quote from the search.
    static func expectEscaped(_ body: String, page: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let attacks = [
            "<script", "<b>zone", "<\u{301}", "\"onmouseover", "'onfocus", "\"\u{301} onmouseover", "\" onmouseover",
            "href=\"javascript:",
        ]
        for attack in attacks {
            #expect(!containsBytes(body, attack), "\(page): \(attack)", sourceLocation: sourceLocation)
        }
    }

    static func containsBytes(_ text: String, _ needle: String) -> Bool {
        let haystack = Array(text.utf8)
        let needle = Array(needle.utf8)
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }
}
