/// A geographic location: the `LOCATION` field type.
///
/// On the wire: `{latitude, longitude, horizontalAccuracy, verticalAccuracy,
/// altitude, speed, course, timestamp}`, the timestamp in milliseconds since 1970.
public struct Location: Sendable, Hashable, Codable {
    /// Latitude in degrees.
    public var latitude: Double
    /// Longitude in degrees.
    public var longitude: Double
    /// The radius of uncertainty of the position, in metres.
    public var horizontalAccuracy: Double?
    /// The accuracy of the altitude, in metres.
    public var verticalAccuracy: Double?
    /// Altitude in metres.
    public var altitude: Double?
    /// Speed in metres per second.
    public var speed: Double?
    /// Course in degrees from true north.
    public var course: Double?
    /// When the position was measured, in milliseconds since 1970.
    public var timestamp: Int64?

    /// Creates a location.
    public init(
        latitude: Double, longitude: Double, horizontalAccuracy: Double? = nil,
        verticalAccuracy: Double? = nil, altitude: Double? = nil, speed: Double? = nil,
        course: Double? = nil, timestamp: Int64? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.altitude = altitude
        self.speed = speed
        self.course = course
        self.timestamp = timestamp
    }
}
