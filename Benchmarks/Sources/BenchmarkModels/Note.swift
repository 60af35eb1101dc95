import CloudCodable
import Foundation

/// A text note: a short title and a long body, the shape where string
/// copying and escaping dominate.
public struct Note: BenchmarkModel, Identifiable, Hashable {
    /// The size of a sample note's body in UTF-8 bytes: 4 KB.
    public static let sampleBodyByteCount = 4096

    /// The size of the body of ``largeSample()``: 900 KB, just under the 1 MB
    /// record limit once escaped.
    public static let largeBodyByteCount = 900 * 1024

    /// The note's identity.
    public var id: UUID
    /// Its title.
    public var title: String
    /// Its text.
    public var body: String
    /// Server metadata; `nil`, as for a model that was never synced.
    public var cloudMetadata: RecordMetadata?

    /// Creates a note.
    public init(id: UUID, title: String, body: String, cloudMetadata: RecordMetadata? = nil) {
        self.id = id
        self.title = title
        self.body = body
        self.cloudMetadata = cloudMetadata
    }

    /// `"Note"`.
    public static var displayName: String { "Note" }

    /// A note with a body of ``sampleBodyByteCount`` bytes.
    public static func sample(_ index: Int) -> Note {
        sample(index, bodyByteCount: sampleBodyByteCount)
    }

    /// A note with a body of `bodyByteCount` UTF-8 bytes.
    public static func sample(_ index: Int, bodyByteCount: Int) -> Note {
        var generator = SampleGenerator(seed: index)
        let id = generator.uuid()
        let title = (0..<4).map { _ in generator.word(from: Vocabulary.prose) }.joined(separator: " ")
        return Note(id: id, title: title, body: generator.text(byteCount: bodyByteCount))
    }

    /// A note with a body of ``largeBodyByteCount`` bytes, for the size check.
    public static func largeSample() -> Note {
        sample(0, bodyByteCount: largeBodyByteCount)
    }

    /// The title's length in bytes.
    public var checksum: Int { title.utf8.count }
}
