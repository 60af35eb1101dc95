import Cumulus
import CumulusServer
import Foundation
import Testing

/// A note on a device, whose title the console edits.
struct ConsoleNote: CloudCodable, Identifiable {
    var id: String
    var title: String
    var cloudMetadata: RecordMetadata?
}

@Suite("Console edits reach devices; acting as a user")
struct ConsoleDeviceTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("console-device-\(UUID().uuidString)")
    }

    @Test("an edit from the console reaches a device syncing over HTTP, with a new change tag")
    func editReachesDevice() async throws {
        try await ConsoleTestServer.with { server in
            let phone = try await SyncEngine<ConsoleNote>(
                database: try await server.server.database(signedInAs: "alice"), directory: Self.directory(),
                configuration: SyncConfiguration(zoneName: "Notes", automaticSync: false))
            try await phone.upload(ConsoleNote(id: "n1", title: "from the phone"))
            try await phone.sync()
            let before = try #require(await phone.model(withIdentifier: "n1")?.cloudMetadata?.changeTag)

            let session = try await server.signIn()
            let record = try await server.zoneParameters(user: "alice", zone: "Notes") + [("record", "n1")]
            let confirm = try await server.get(
                ConsoleTestServer.link("/console/edit", record + [("field", "title")]), session: session)
            #expect(confirm.hiddenValue("changeTag") == before)
            let form =
                record + [
                    ("field", "title"), ("value", "from the console"), ("changeTag", before),
                    ("csrf", try #require(confirm.hiddenValue("csrf"))),
                ]
            #expect(try await server.send(.POST, "/console/edit", session: session, form: form).status == 200)

            try await phone.sync()
            let arrived = try #require(await phone.model(withIdentifier: "n1"))
            #expect(arrived.title == "from the console")
            let after = try #require(arrived.cloudMetadata?.changeTag)
            #expect(after != before)
            await phone.close()
        }
    }

    @Test("acting as a participant shows in their shared database only the zone shared with them")
    func actAsParticipant() async throws {
        try await ConsoleTestServer.with { server in
            let alice = try await server.server.user("alice").recordName
            let bob = try await server.server.user("bob").recordName
            try await server.seed(
                user: "alice", zone: "Shared",
                records: [Record(recordType: "Note", recordName: "note-in-share", fields: ["title": .string("shared")])]
            )
            try await server.seed(
                user: "alice", zone: "Secret",
                records: [Record(recordType: "Note", recordName: "note-kept-out", fields: ["title": .string("secret")])]
            )
            try await server.shareZone("Shared", ofAlice: alice, withBob: bob)

            let session = try await server.signIn()
            let bobShared = [
                ("container", server.container), ("environment", "development"), ("scope", "shared"), ("user", bob),
            ]
            let zones = try await server.get(ConsoleTestServer.link("/console/zones", bobShared), session: session)
            #expect(zones.status == 200)
            #expect(zones.body.contains(">Shared<") && !zones.body.contains("Secret"))
            let records = try await server.get(
                ConsoleTestServer.link("/console/records", bobShared + [("zone", "Shared"), ("owner", alice)]),
                session: session)
            #expect(records.body.contains(">note-in-share<") && !records.body.contains("note-kept-out"))
            // Bob's requests cannot reach Alice's other zone, and neither can the console acting as Bob.
            let secret = try await server.get(
                ConsoleTestServer.link("/console/records", bobShared + [("zone", "Secret"), ("owner", alice)]),
                session: session)
            #expect(secret.status != 200 && !secret.body.contains("note-kept-out"))
            let bobPrivate = try await server.get(
                ConsoleTestServer.link(
                    "/console/zones",
                    [
                        ("container", server.container), ("environment", "development"), ("scope", "private"),
                        ("user", bob),
                    ]),
                session: session)
            #expect(!bobPrivate.body.contains("Shared") && !bobPrivate.body.contains("Secret"))
        }
    }

    @Test("acting as a participant of a hierarchy share lists only the shared records of the zone")
    func actAsHierarchyParticipant() async throws {
        try await ConsoleTestServer.with { server in
            let (alice, bob) = try await server.shareAlbum(rootType: "Album")

            let session = try await server.signIn()
            let bobShared = [
                ("container", server.container), ("environment", "development"), ("scope", "shared"), ("user", bob),
                ("zone", "Albums"), ("owner", alice),
            ]
            let records = try await server.get(ConsoleTestServer.link("/console/records", bobShared), session: session)
            #expect(records.status == 200)
            #expect(records.body.contains(">album<") && records.body.contains(">photo<"))
            #expect(!records.body.contains("unshared"))
            let aliceOwn = try await server.get(
                ConsoleTestServer.link(
                    "/console/records",
                    bobShared.map { $0.0 == "user" ? ("user", alice) : $0.0 == "scope" ? ("scope", "private") : $0 }),
                session: session)
            #expect(aliceOwn.body.contains("unshared"), "the owner sees every record")
        }
    }
}
