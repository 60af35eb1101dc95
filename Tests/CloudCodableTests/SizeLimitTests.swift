import Foundation
import Testing

@testable import CloudCodable

@Suite("The record size limit")
struct SizeLimitTests {
    struct Note: CloudCodable {
        var cloudIdentifier: String { "note-1" }
        var cloudMetadata: RecordMetadata?
        var body: String
        var attachment: Data = Data()
    }

    @Test("a record over 1 MB is refused with its name, size and the limit")
    func overLimit() throws {
        let note = Note(body: String(repeating: "x", count: 1_100_000))
        do {
            _ = try RecordEncoder().encode(note)
            Issue.record("encoding should fail")
        } catch let error as RecordTooLargeError {
            #expect(error.recordName == "note-1")
            #expect(error.recordType == "Note")
            #expect(error.limit == 1_048_576)
            #expect(error.size > 1_100_000)
            #expect(error.description.contains("note-1"))
            #expect(error.description.contains("1048576"))
        }
    }

    @Test("bytes count as the wire carries them: base64")
    func bytesCountAsBase64() throws {
        // 800,000 raw bytes are 1,066,668 characters of base64: over the limit.
        let note = Note(body: "", attachment: Data(count: 800_000))
        #expect(throws: RecordTooLargeError.self) { try RecordEncoder().encode(note) }
        let smaller = Note(body: "", attachment: Data(count: 700_000))
        #expect(try RecordEncoder().encode(smaller).fields.count == 2)
    }

    @Test("the limit is a property of the encoder, checked exactly")
    func configurableLimit() throws {
        let note = Note(body: String(repeating: "y", count: 100))
        let record = try RecordEncoder().encode(note)
        let size = WireFormat.encodedSize(ofFields: record.fields)
        #expect(try RecordEncoder(sizeLimit: size).encode(note).recordName == "note-1")
        do {
            _ = try RecordEncoder(sizeLimit: size - 1).encode(note)
            Issue.record("encoding should fail one byte over the limit")
        } catch let error as RecordTooLargeError {
            #expect(error.size == size)
            #expect(error.limit == size - 1)
        }
    }
}
