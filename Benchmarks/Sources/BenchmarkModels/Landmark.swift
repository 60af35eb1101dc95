import CloudCodable
import Foundation

/// The reference model of the performance figures: a place with every
/// common kind of property, about 215 bytes as `JSONEncoder` output.
public struct Landmark: BenchmarkModel, Identifiable, Hashable {
    /// A point on the map, stored as a nested value (a `BYTES` field holding JSON).
    public struct Coordinate: Codable, Hashable, Sendable {
        /// Degrees north.
        public var latitude: Double
        /// Degrees east.
        public var longitude: Double

        /// Creates a coordinate.
        public init(latitude: Double, longitude: Double) {
            self.latitude = latitude
            self.longitude = longitude
        }
    }

    /// The landmark's identity.
    public var id: UUID
    /// Its name.
    public var name: String
    /// Where it is.
    public var coordinate: Coordinate
    /// Three tags.
    public var tags: [String]
    /// How often it was visited.
    public var visits: Int
    /// When it was last visited.
    public var lastVisited: Date
    /// Whether the user marked it.
    public var isFavorite: Bool
    /// Server metadata; `nil`, as for a model that was never synced.
    public var cloudMetadata: RecordMetadata?

    /// Creates a landmark.
    public init(
        id: UUID, name: String, coordinate: Coordinate, tags: [String], visits: Int, lastVisited: Date,
        isFavorite: Bool, cloudMetadata: RecordMetadata? = nil
    ) {
        self.id = id
        self.name = name
        self.coordinate = coordinate
        self.tags = tags
        self.visits = visits
        self.lastVisited = lastVisited
        self.isFavorite = isFavorite
        self.cloudMetadata = cloudMetadata
    }

    /// `"Landmark"`.
    public static var displayName: String { "Landmark" }

    /// A landmark with a real name, plausible coordinates and three tags.
    public static func sample(_ index: Int) -> Landmark {
        var generator = SampleGenerator(seed: index)
        return Landmark(
            id: generator.uuid(),
            name: generator.word(from: Vocabulary.landmarks),
            coordinate: Coordinate(
                latitude: generator.decimal(in: -60...70, digits: 4),
                longitude: generator.decimal(in: -180...180, digits: 4)),
            tags: (0..<3).map { _ in generator.word(from: Vocabulary.tags) },
            visits: Int.random(in: 0..<500, using: &generator),
            lastVisited: generator.date(),
            isFavorite: Bool.random(using: &generator))
    }

    /// The visit count.
    public var checksum: Int { visits }
}
