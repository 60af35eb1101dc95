import Foundation
import Testing

@testable import CloudCodable

@Suite("The CloudCodable protocol")
struct CloudCodableTests {
    struct Note: CloudCodable, Identifiable, Equatable {
        var id: String
        var title: String
        var body: String
        var pinned: Bool = false
        var cloudMetadata: RecordMetadata?
    }

    struct Custom: CloudCodable {
        static var cloudRecordType: String { "custom_type" }
        var cloudIdentifier: String { "c" }
        var cloudMetadata: RecordMetadata?
        var value: Int
        static func resolveConflict(client: Custom, server: Custom, ancestor: Custom?) -> Custom? {
            client.value > server.value ? client : nil
        }
    }

    @Test("defaults: record type is the type's name, identifier comes from the id")
    func defaults() {
        #expect(Landmark.cloudRecordType == "Landmark")
        #expect(Note.cloudRecordType == "Note")
        #expect(Custom.cloudRecordType == "custom_type")
        #expect(Landmark.sample().cloudIdentifier == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        #expect(Note(id: "n-1", title: "", body: "").cloudIdentifier == "n-1")
    }

    @Test("metadata is Codable, so apps that store models with JSONEncoder keep it")
    func metadataCodable() throws {
        var landmark = Landmark.sample()
        landmark.cloudMetadata = RecordMetadata(
            changeTag: "tag", zoneID: ZoneID(zoneName: "z", ownerRecordName: "o"),
            created: RecordStamp(timestamp: 1, userRecordName: "u", deviceID: "d"), modified: nil)
        let json = try JSONEncoder().encode(landmark)
        #expect(try JSONDecoder().decode(Landmark.self, from: json) == landmark)
    }

    @Test("metadata prints its values, and copies change independently")
    func metadataValueSemantics() {
        let metadata = RecordMetadata(changeTag: "tag-1", zoneID: ZoneID(zoneName: "z"))
        let text = String(describing: metadata)
        #expect(text.contains("changeTag: \"tag-1\""))
        #expect(text.contains("zoneName: \"z\""))
        var copy = metadata
        copy.changeTag = "tag-2"
        copy.modified = RecordStamp(timestamp: 5)
        #expect(metadata.changeTag == "tag-1" && metadata.modified == nil)
        #expect(copy.changeTag == "tag-2" && copy != metadata)
        var back = copy
        back.changeTag = "tag-1"
        back.modified = nil
        #expect(back == metadata && back.hashValue == metadata.hashValue)
    }

    @Test("the default merge takes one-sided changes from each side")
    func mergeOneSided() {
        let ancestor = Note(id: "n", title: "Title", body: "Body")
        var client = ancestor
        client.title = "Client title"
        var server = ancestor
        server.body = "Server body"
        server.cloudMetadata = RecordMetadata(changeTag: "server-tag")
        let merged = Note.resolveConflict(client: client, server: server, ancestor: ancestor)
        #expect(merged?.title == "Client title")
        #expect(merged?.body == "Server body")
        #expect(merged?.cloudMetadata?.changeTag == "server-tag")
    }

    @Test("a field changed on both sides takes the client's value")
    func mergeBothSides() {
        let ancestor = Note(id: "n", title: "Title", body: "Body")
        var client = ancestor
        client.title = "Client"
        client.pinned = true
        var server = ancestor
        server.title = "Server"
        let merged = Note.resolveConflict(client: client, server: server, ancestor: ancestor)
        #expect(merged?.title == "Client")
        #expect(merged?.pinned == true)
    }

    @Test("without an ancestor the client's value wins field by field")
    func mergeNoAncestor() {
        let client = Note(id: "n", title: "Client", body: "Same")
        var server = Note(id: "n", title: "Server", body: "Same")
        server.cloudMetadata = RecordMetadata(changeTag: "s")
        let merged = Note.resolveConflict(client: client, server: server, ancestor: nil)
        #expect(merged?.title == "Client")
        #expect(merged?.cloudMetadata?.changeTag == "s")
    }

    @Test("a field cleared on one side is cleared in the merge")
    func mergeClearedOptional() {
        struct Tagged: CloudCodable, Equatable {
            var cloudIdentifier: String { "t" }
            var cloudMetadata: RecordMetadata?
            var label: String?
            var count: Int
        }
        let ancestor = Tagged(label: "old", count: 1)
        let server = Tagged(label: nil, count: 1)
        let client = Tagged(label: "old", count: 2)
        let merged = Tagged.resolveConflict(client: client, server: server, ancestor: ancestor)
        #expect(merged == Tagged(label: nil, count: 2))
    }

    /// A note whose body merges as text; its title does not.
    struct Journal: CloudCodable, Equatable {
        static var cloudTextMergedFields: Set<String> { ["body", "summary"] }
        var cloudIdentifier: String { "j" }
        var cloudMetadata: RecordMetadata?
        var title: String
        var body: String
        var summary: String?
    }

    @Test("a field in cloudTextMergedFields that both sides changed takes both edits; others take the client's")
    func mergeText() {
        let ancestor = Journal(title: "Day", body: "Woke up.\nWalked.\n", summary: "ok")
        let client = Journal(title: "Monday", body: "Woke up early.\nWalked.\n", summary: "ok")
        var server = Journal(title: "Tuesday", body: "Woke up.\nWalked to the sea.\n", summary: "ok")
        server.cloudMetadata = RecordMetadata(changeTag: "s")
        let merged = Journal.resolveConflict(client: client, server: server, ancestor: ancestor)
        #expect(merged?.body == "Woke up early.\nWalked to the sea.\n")
        #expect(merged?.title == "Monday")
        #expect(merged?.cloudMetadata?.changeTag == "s")
        #expect(Journal.cloudTextMergedFields == ["body", "summary"] && Note.cloudTextMergedFields.isEmpty)
    }

    @Test("a text field cleared on one side, or merged without an ancestor, follows the default rule")
    func mergeTextFallsBack() {
        let ancestor = Journal(title: "Day", body: "a", summary: "short")
        let cleared = Journal(title: "Day", body: "a", summary: nil)
        let edited = Journal(title: "Day", body: "a", summary: "longer")
        #expect(Journal.resolveConflict(client: edited, server: cleared, ancestor: ancestor)?.summary == "longer")
        #expect(Journal.resolveConflict(client: cleared, server: edited, ancestor: ancestor)?.summary == nil)
        var withMetadata = Journal(title: "Day", body: "client text", summary: nil)
        withMetadata.cloudMetadata = RecordMetadata(changeTag: "old")
        let server = Journal(title: "Day", body: "server text", summary: "s")
        let merged = Journal.resolveConflict(client: withMetadata, server: server, ancestor: nil)
        #expect(merged?.body == "client text")
        #expect(merged?.summary == nil)
    }

    @Test("without an ancestor, a value never synced keeps the fields only the server has")
    func mergeCreatedTwice() {
        let client = Journal(title: "Mine", body: "client text", summary: nil)
        let server = Journal(title: "Theirs", body: "server text", summary: "theirs")
        let merged = Journal.resolveConflict(client: client, server: server, ancestor: nil)
        #expect(merged?.summary == "theirs")
        #expect(merged?.title == "Mine")
        #expect(merged?.body == "client text")
    }

    @Test("a model can replace the resolver")
    func customResolver() {
        let low = Custom(value: 1)
        let high = Custom(value: 2)
        #expect(Custom.resolveConflict(client: high, server: low, ancestor: nil)?.value == 2)
        #expect(Custom.resolveConflict(client: low, server: high, ancestor: nil) == nil)
    }

    @Test("UUID formatting matches Foundation and parsing accepts either case")
    func uuidFormatting() {
        for _ in 0..<100 {
            let uuid = UUID()
            #expect(UUIDFormatting.string(uuid) == uuid.uuidString)
            #expect(UUIDFormatting.parse(uuid.uuidString) == uuid)
            #expect(UUIDFormatting.parse(uuid.uuidString.lowercased()) == uuid)
        }
        #expect(UUIDFormatting.parse("E621E1F8-C36C-495A-93FC-0C247A3E6E5") == nil)
        #expect(UUIDFormatting.parse("E621E1F8xC36C-495A-93FC-0C247A3E6E5F") == nil)
        #expect(UUIDFormatting.parse("G621E1F8-C36C-495A-93FC-0C247A3E6E5F") == nil)
    }
}
