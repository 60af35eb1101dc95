import Foundation
import Testing

@testable import CloudCodable

@Suite("Derived identifiers")
struct CloudIdentifierTests {
    struct Tag: CloudCodable {
        var name: String
        var cloudMetadata: RecordMetadata?
        var cloudIdentifier: String { CloudIdentifier.derived(for: Tag.self, from: [name]) }
    }

    struct Label: CloudCodable {
        var cloudIdentifier: String { "label" }
        var cloudMetadata: RecordMetadata?
    }

    struct Day: CloudCodable, Identifiable {
        var id: UUID
        var cloudMetadata: RecordMetadata?
    }

    @Test("the identifiers are fixed: the same on every platform, process and version")
    func fixedValues() {
        // Worked out independently (Python's hashlib) from the scheme: SHA-256
        // of length-prefixed items, the first 16 bytes as a version 8 UUID.
        #expect(CloudIdentifier.derived(for: Tag.self, from: ["work"]) == "553AEF7E-14EF-8B01-A49C-E9FE7649F5ED")
        #expect(CloudIdentifier.derived(for: Tag.self, from: []) == "81B58F4A-0432-85B6-80C9-C086EC6934EC")
        #expect(
            CloudIdentifier.derived(for: Day.self, from: ["2026-11-28"]) == "DCDAABA0-7637-8038-9F4D-D70A70FC2A8F")
        #expect(Tag(name: "work").cloudIdentifier == "553AEF7E-14EF-8B01-A49C-E9FE7649F5ED")
    }

    @Test("components count with their lengths; record types and exact bytes keep identities apart")
    func unambiguous() {
        #expect(CloudIdentifier.derived(for: Tag.self, from: ["ab", "c"]) == "69409304-FA7E-80A9-ADB7-EA649F313BAB")
        #expect(CloudIdentifier.derived(for: Tag.self, from: ["a", "bc"]) == "F388E79A-1B4B-84F9-93D3-9E9A4656D747")
        let identities = [[], [""], ["", ""], ["a"], ["a", ""], ["", "a"], ["Work"], ["work"]]
        let names = identities.map { CloudIdentifier.derived(for: Tag.self, from: $0) }
        #expect(Set(names).count == identities.count)
        #expect(CloudIdentifier.derived(for: Label.self, from: ["work"]) != Tag(name: "work").cloudIdentifier)
        // "café" precomposed and decomposed: equal Swift strings, different identities.
        #expect("caf\u{E9}" == "cafe\u{301}")
        #expect(CloudIdentifier.derived(for: Tag.self, from: ["caf\u{E9}"]) == "FAFC52DD-B63C-8DE8-B504-8D35BAAC80D4")
        #expect(CloudIdentifier.derived(for: Tag.self, from: ["cafe\u{301}"]) == "142EA2EB-4007-8464-B2D1-BC6B1F67E5E9")
    }

    @Test("an identifier is a version 8 UUID in the form a UUID model's default identifier takes")
    func uuidForm() throws {
        for name in ["work", "home", "", "ä 😀"] {
            let text = CloudIdentifier.derived(for: Tag.self, from: [name])
            let uuid = CloudIdentifier.derivedUUID(for: Tag.self, from: [name])
            #expect(Day(id: uuid).cloudIdentifier == text)
            #expect(try #require(UUID(uuidString: text)) == uuid)
            #expect(text.utf8.count == 36 && text.utf8.allSatisfy { $0 < 0x80 })
            #expect(uuid.uuid.6 >> 4 == 8)
            #expect(uuid.uuid.8 >> 6 == 0b10)
        }
    }
}
