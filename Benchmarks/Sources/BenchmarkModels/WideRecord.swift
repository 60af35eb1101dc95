import CloudCodable
import Foundation

/// A wide model: 40 stored properties of mixed types (strings, integers,
/// doubles, booleans, dates, optionals, present and absent, and arrays), the
/// shape where per-field overhead dominates. Make values with ``sample(_:)``.
public struct WideRecord: BenchmarkModel, Identifiable, Hashable {
    /// The record's identity (field 1 of 40).
    public var id: UUID
    /// A title.
    public var title: String
    /// A subtitle.
    public var subtitle: String
    /// An author's name.
    public var author: String
    /// A category.
    public var category: String
    /// A workflow status.
    public var status: String
    /// A locale identifier.
    public var locale: String
    /// A sentence of notes.
    public var notes: String
    /// A stock-keeping unit.
    public var sku: String
    /// A colour name.
    public var colour: String
    /// A count.
    public var count: Int
    /// A revision number.
    public var revision: Int
    /// A priority.
    public var priority: Int
    /// A quantity.
    public var quantity: Int
    /// An owner's numeric identity.
    public var ownerID: Int64
    /// Bit flags.
    public var flags: UInt32
    /// A rank, possibly negative.
    public var rank: Int
    /// A price.
    public var price: Double
    /// A weight.
    public var weight: Double
    /// A rating.
    public var rating: Double
    /// Degrees north.
    public var latitude: Double
    /// Degrees east.
    public var longitude: Double
    /// Progress from 0 to 1.
    public var completion: Float
    /// Whether it is archived.
    public var isArchived: Bool
    /// Whether it is shared.
    public var isShared: Bool
    /// Whether it is pinned.
    public var isPinned: Bool
    /// Whether it needs review.
    public var needsReview: Bool
    /// When it was created.
    public var created: Date
    /// When it was modified.
    public var modified: Date
    /// When it is due.
    public var due: Date
    /// A reminder (present in samples).
    public var reminder: Date?
    /// When it was archived (absent in samples).
    public var archivedAt: Date?
    /// A nickname (present in samples).
    public var nickname: String?
    /// The parent's name (absent in samples).
    public var parentName: String?
    /// A discount (present in samples).
    public var discount: Double?
    /// A limit (absent in samples).
    public var limit: Int?
    /// Four labels.
    public var labels: [String]
    /// Five scores.
    public var scores: [Int]
    /// Four readings.
    public var readings: [Double]
    /// Three dates.
    public var history: [Date]
    /// Server metadata; `nil`, as for a model that was never synced.
    public var cloudMetadata: RecordMetadata?

    /// `"Wide"`.
    public static var displayName: String { "Wide" }

    /// A wide record with every non-optional property set and, of the six
    /// optionals, three present and three absent (37 fields in the record).
    public static func sample(_ index: Int) -> WideRecord {
        var generator = SampleGenerator(seed: index)
        func words(_ count: Int) -> String {
            (0..<count).map { _ in generator.word(from: Vocabulary.prose) }.joined(separator: " ")
        }
        func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &generator) }
        return WideRecord(
            id: generator.uuid(),
            title: words(3),
            subtitle: words(5),
            author: generator.word(from: ["Ada Lovelace", "Grace Hopper", "Alan Kay", "Barbara Liskov"]),
            category: generator.word(from: Vocabulary.tags),
            status: generator.word(from: ["draft", "active", "done", "blocked"]),
            locale: generator.word(from: ["en_GB", "de_CH", "fr_FR", "ja_JP"]),
            notes: words(12),
            sku: "SKU-\(int(100_000..<999_999))",
            colour: generator.word(from: ["red", "green", "blue", "teal", "amber"]),
            count: int(0..<1_000),
            revision: int(1..<60),
            priority: int(0..<5),
            quantity: int(0..<100_000),
            ownerID: Int64.random(in: 1..<Int64.max, using: &generator),
            flags: UInt32.random(in: 0...UInt32.max, using: &generator),
            rank: int(-1_000..<1_000),
            price: generator.decimal(in: 0...2_000, digits: 2),
            weight: generator.decimal(in: 0...80, digits: 3),
            rating: generator.decimal(in: 0...5, digits: 1),
            latitude: generator.decimal(in: -60...70, digits: 5),
            longitude: generator.decimal(in: -180...180, digits: 5),
            completion: Float(int(0..<101)) / 100,
            isArchived: Bool.random(using: &generator),
            isShared: Bool.random(using: &generator),
            isPinned: Bool.random(using: &generator),
            needsReview: Bool.random(using: &generator),
            created: generator.date(),
            modified: generator.date(),
            due: generator.date(),
            reminder: generator.date(),
            archivedAt: nil,
            nickname: generator.word(from: Vocabulary.landmarks),
            parentName: nil,
            discount: generator.decimal(in: 0...0.5, digits: 2),
            limit: nil,
            labels: (0..<4).map { _ in generator.word(from: Vocabulary.tags) },
            scores: (0..<5).map { _ in int(0..<100) },
            readings: (0..<4).map { _ in generator.decimal(in: -40...40, digits: 2) },
            history: (0..<3).map { _ in generator.date() })
    }

    /// The count.
    public var checksum: Int { count }
}
