import Cumulus
import CumulusServer
import Foundation
import Testing

/// `GET /share/<shortGUID>`: the share's title and owner for anyone holding
/// the URL, HTML-escaped, and nothing else; 404 for an unknown shortGUID.
@Suite("HTTP share page")
struct HTTPSharePageTests {
    static let title = #"<script>alert("x")</script> & 'Trip'"#
    /// Things the share holds that the page must not show.
    static let secrets = [
        "_bob-secret", "bob-secret@example.com", "Bobsecretname", "p-secret", "SecretZone",
        "secret-root", "secret-share-record", "secret-field-value",
    ]

    @Test(
        "a share's page names its title and owner, escaped, and shows no participant or record",
        arguments: TestStore.single)
    func found(_ store: TestStore) async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        try await HTTPTestServer.with(store: store, configuration: configuration) { server in
            let service = try #require(server.service as? CloudService)
            try await Self.saveShare("Gx7-share", title: Self.title, owner: server.userRecordName, in: service)
            // No API token, no web auth token.
            let answer = try await server.send("GET", "/share/Gx7-share")
            #expect(answer.status == 200)
            #expect(answer.contentType == "text/html; charset=utf-8")
            let page = String(decoding: answer.body, as: UTF8.self)
            #expect(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;Trip&#39;"), "\(page)")
            #expect(!page.contains("<script>") && !page.contains(#"alert("x")"#))
            #expect(page.contains(server.userRecordName))
            for secret in Self.secrets { #expect(!page.contains(secret), "\(secret) in \(page)") }
            // The shortGUID is the share's handle: the log leaves it out.
            #expect(!lines.all.joined().contains("Gx7-share"), "\(lines.all)")
            #expect(lines.all.contains { $0.contains("GET /share/… 200") }, "\(lines.all)")
        }
    }

    @Test("an unknown shortGUID answers 404 saying nothing; other spellings and paths find nothing")
    func unknown() async throws {
        try await HTTPTestServer.with { server in
            let service = try #require(server.service as? CloudService)
            try await Self.saveShare("caf\u{E9}", title: "Known", owner: server.userRecordName, in: service)
            for path in ["/share/no-such-share", "/share/<b>x", "/share/cafe\u{301}", "/share/a\u{0}b"] {
                let answer = try await server.send("GET", path)
                #expect(answer.status == 404, "\(path)")
                let page = String(decoding: answer.body, as: UTF8.self)
                #expect(answer.contentType == "text/html; charset=utf-8", "\(path)")
                #expect(!page.contains("Known") && !page.contains(server.userRecordName), "\(path): \(page)")
                #expect(!page.contains("no-such-share") && !page.contains("<b>"), "\(path): \(page)")
            }
            // Sent as caf%C3%A9: the server decodes the segment.
            let known = try await server.send("GET", "/share/caf\u{E9}")
            #expect(known.status == 200)
            // The database paths still need their tokens.
            let anonymous = try await server.send("POST", server.path("records/query"), body: Array("{}".utf8))
            #expect(anonymous.status != 200)
        }
    }

    @Test("a share without a title is named for what it is")
    func untitled() async throws {
        try await HTTPTestServer.with { server in
            let service = try #require(server.service as? CloudService)
            try await Self.saveShare("untitled", title: nil, owner: server.userRecordName, in: service)
            let answer = try await server.send("GET", "/share/untitled")
            #expect(answer.status == 200)
            let page = String(decoding: answer.body, as: UTF8.self)
            #expect(page.contains("A shared item") && page.contains(server.userRecordName))
        }
    }

    /// Writes a share record and its share row straight through storage, as
    /// the record service does when a share is saved.
    static func saveShare(_ shortGUID: String, title: String?, owner: String, in service: CloudService) async throws {
        let key = DatabaseKey(
            container: "iCloud.com.example.notes", environment: .development, scope: .private,
            owner: owner)
        let zoneID = ZoneID(zoneName: "SecretZone")
        let participants = [
            ShareParticipant(
                participantID: "p-owner", userRecordName: owner, role: .owner, acceptanceStatus: .accepted,
                permission: .readWrite),
            ShareParticipant(
                participantID: "p-secret", userRecordName: "_bob-secret", lookupInfo: .email("bob-secret@example.com"),
                nameComponents: UserNameComponents(givenName: "Bobsecretname"), acceptanceStatus: .accepted,
                permission: .readOnly),
        ]
        var shareRecord = Record(recordType: ShareDetails.recordType, recordName: "secret-share-record", zoneID: zoneID)
        if let title { shareRecord.fields[ShareDetails.titleField] = .string(title) }
        shareRecord.fields["note"] = .string("secret-field-value")
        shareRecord.shareDetails = ShareDetails(
            shortGUID: shortGUID, publicPermission: .none, participants: participants)
        var root = Record(recordType: "Trip", recordName: "secret-root", zoneID: zoneID)
        root.fields["place"] = .string("secret-field-value")
        let rows = [
            StoredRecord(
                name: root.recordName, recordType: root.recordType, serial: 1, creator: owner, record: root,
                deleteSelfTargets: [], shareKey: shortGUID),
            StoredRecord(
                name: shareRecord.recordName, recordType: shareRecord.recordType, serial: 2, creator: owner,
                record: shareRecord, deleteSelfTargets: []),
        ]
        let (shareName, rootName) = (shareRecord.recordName, root.recordName)
        try await service.storage.write { transaction in
            let database = try await transaction.createDatabase(key, incarnation: 1)
            var zone = try await transaction.zones(inDatabase: database.id, named: [zoneID.zoneName]).first
            if zone == nil {
                zone = try await transaction.createZone(named: zoneID.zoneName, inDatabase: database.id, incarnation: 1)
            }
            guard let zone else { return }
            try await transaction.saveRecords(rows, inZone: zone.id)
            try await transaction.saveShare(
                StoredShare(
                    shortGUID: shortGUID, container: key.container, environment: key.environment, owner: owner,
                    zone: zone.id, zoneName: zone.name, recordName: shareName,
                    rootRecordName: rootName, publicPermission: .none, participants: participants))
        }
    }
}
