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

    // MARK: - Exactly at the limit

    /// A model that also has a field whose name needs escaping, which the
    /// encoder cannot keep as wire text (its fields become entries).
    struct OddNote: CloudCodable {
        enum CodingKeys: String, CodingKey {
            case body
            case odd = "odd \"name\"\n"
        }
        var cloudIdentifier: String { "odd-1" }
        var cloudMetadata: RecordMetadata?
        var body: String
        var odd: Int = 1
    }

    /// Text with every kind of character the size counts differently:
    /// two-byte and six-byte escapes, and two-, three- and four-byte UTF-8.
    static let awkward = "line\nquote\" back\\ tab\t ctl\u{1}\u{1F} café ✓ 😀 \u{7F}"

    /// `awkward` repeated and padded with `a` so that `fieldsSize` of it is `target`.
    static func body(target: Int, fieldsSize: (String) -> Int) -> String {
        let base = String(repeating: awkward, count: 2_000)
        let padding = target - fieldsSize(base)
        precondition(padding >= 0)
        return base + String(repeating: "a", count: padding)
    }

    static func expectTooLarge(
        _ body: () throws -> Void, type: String, name: String, size: Int, limit: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            try body()
            Issue.record("should be refused", sourceLocation: sourceLocation)
        } catch let error as RecordTooLargeError {
            #expect(error.recordType == type, sourceLocation: sourceLocation)
            #expect(error.recordName == name, sourceLocation: sourceLocation)
            #expect(error.size == size, sourceLocation: sourceLocation)
            #expect(error.limit == limit, sourceLocation: sourceLocation)
            #expect(error.description.contains(name), sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    /// The size of the fields as the wire actually carries them.
    static func wireSize(_ fields: RecordFields) throws -> Int {
        var writer = JSONWriter()
        try writer.writeRecord(Record(recordType: "T", recordName: "r", fields: fields))
        var empty = JSONWriter()
        try empty.writeRecord(Record(recordType: "T", recordName: "r", fields: [:]))
        // `{}` is two bytes.
        return writer.bytes.count - empty.bytes.count + 2
    }

    @Test("a record exactly at the limit passes and one byte more is refused, escapes and non-ASCII included")
    func exactBoundary() throws {
        let limit = RecordEncoder.defaultSizeLimit
        let encoder = RecordEncoder()
        let noteSize = { (body: String) in
            WireFormat.encodedSize(ofFields: ["body": .string(body), "attachment": .bytes(Data())])
        }
        let body = Self.body(target: limit, fieldsSize: noteSize)
        let atLimit = try encoder.encode(Note(body: body))
        #expect(WireFormat.encodedSize(ofFields: atLimit.fields) == limit)
        #expect(try Self.wireSize(atLimit.fields) == limit)

        // One byte more, however it comes: a plain byte, a two-byte escape
        // instead of a plain byte, a two-byte character instead of one.
        let over = [
            (body + "a", limit + 1), (String(body.dropLast()) + "\n", limit + 1),
            (String(body.dropLast()) + "é", limit + 1), (String(body.dropLast()) + "\u{2}", limit + 5),
            (String(body.dropLast(3)) + "😀", limit + 1),
        ]
        for (text, size) in over {
            Self.expectTooLarge(
                { _ = try encoder.encode(Note(body: text)) }, type: "Note", name: "note-1", size: size, limit: limit)
        }

        // The same for a record built by hand (its fields are entries).
        let entries: RecordFields = ["body": .string(body), "attachment": .bytes(Data())]
        try encoder.checkSize(of: Record(recordType: "Note", recordName: "note-1", fields: entries))
        for (text, size) in over {
            let fields: RecordFields = ["body": .string(text), "attachment": .bytes(Data())]
            Self.expectTooLarge(
                { try encoder.checkSize(of: Record(recordType: "Note", recordName: "note-1", fields: fields)) },
                type: "Note", name: "note-1", size: size, limit: limit)
        }
    }

    @Test("the limit is exact for fields the encoder keeps as entries, and for any limit")
    func exactBoundaryForEntriesAndOtherLimits() throws {
        let oddSize = { (body: String) in
            WireFormat.encodedSize(ofFields: ["body": .string(body), "odd \"name\"\n": .int64(1)])
        }
        for limit in [RecordEncoder.defaultSizeLimit, 300_000, 2_000_000] {
            let encoder = RecordEncoder(sizeLimit: limit)
            let body = Self.body(target: limit, fieldsSize: oddSize)
            let atLimit = try encoder.encode(OddNote(body: body))
            #expect(try Self.wireSize(atLimit.fields) == limit)
            Self.expectTooLarge(
                { _ = try encoder.encode(OddNote(body: body + "\"")) }, type: "OddNote", name: "odd-1",
                size: limit + 2, limit: limit)
        }
    }

    @Test("exact sizes of long text agree with the writer")
    func longTextSizes() throws {
        var random = WireRandom(seed: 5)
        let pieces = ["plain ", "\n", "\"", "\\", "\u{0}", "\u{1B}", "é", "✓", "😀", "\t", "\u{7F}", "abcdefghijklmnop"]
        for _ in 0..<20 {
            var text = ""
            let length = Int.random(in: 0..<5_000, using: &random)
            while text.utf8.count < length { text += pieces.randomElement(using: &random)! }
            let fields: RecordFields = ["text": .string(text)]
            #expect(WireFormat.encodedSize(ofFields: fields) == (try Self.wireSize(fields)))
            #expect(WireFormat.maximumEncodedSize(ofFields: fields) >= WireFormat.encodedSize(ofFields: fields))
        }
    }
}
