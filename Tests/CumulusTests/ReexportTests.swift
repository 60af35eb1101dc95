import Cumulus
import Testing

@Suite("The Cumulus module")
struct ReexportTests {
    struct Note: CloudCodable, Identifiable, Equatable {
        var id: String
        var text: String
        var cloudMetadata: RecordMetadata?
    }

    @Test("re-exports CloudCodable: one import is enough to round-trip a model")
    func roundTrip() throws {
        let note = Note(id: "n1", text: "hello")
        let bytes = try WireFormat.encode(try RecordEncoder().encode(note))
        let back = try RecordDecoder().decode(Note.self, from: try WireFormat.decodeRecord(from: bytes))
        #expect(back == note)
    }
}
