import Foundation

/// When and by whom a record was created or last modified.
///
/// On the wire this is `{"timestamp": …, "userRecordName": …, "deviceID": …}`
/// with the timestamp in whole milliseconds since 1970.
public struct RecordStamp: Sendable, Hashable, Codable {
    /// The moment of the change, in whole milliseconds since 1970.
    public var timestamp: Int64
    /// The user record name of the user who made the change.
    public var userRecordName: String?
    /// The device that made the change, when the server reports it.
    public var deviceID: String?

    /// Creates a stamp from a timestamp in milliseconds since 1970.
    public init(timestamp: Int64, userRecordName: String? = nil, deviceID: String? = nil) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }

    /// Creates a stamp from a date, rounded to whole milliseconds.
    public init(date: Date, userRecordName: String? = nil, deviceID: String? = nil) {
        self.init(
            timestamp: Int64(clamping: Milliseconds.from(date)),
            userRecordName: userRecordName, deviceID: deviceID)
    }

    /// The moment of the change as a `Date`.
    public var date: Date { Milliseconds.date(timestamp) }
}

/// Conversions between `Date` and whole milliseconds since 1970, the unit of
/// every timestamp Cumulus stores or sends.
enum Milliseconds {
    /// The date's distance from 1970 in milliseconds, rounded to the nearest
    /// whole millisecond, or `nil` when it is not finite or does not fit `Int64`.
    @inline(__always)
    static func exact(_ date: Date) -> Int64? {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        // 2^63 is exactly representable; anything at or above it overflows.
        guard ms.isFinite, ms >= -9_223_372_036_854_775_808.0, ms < 9_223_372_036_854_775_808.0
        else { return nil }
        return Int64(ms)
    }

    /// Like `exact(_:)` but saturating, for stamps that must always have a value.
    static func from(_ date: Date) -> Int64 {
        if let ms = exact(date) { return ms }
        return date.timeIntervalSince1970 < 0 || date.timeIntervalSince1970.isNaN ? .min : .max
    }

    /// The date `ms` milliseconds after 1970.
    @inline(__always)
    static func date(_ ms: Int64) -> Date {
        Date(timeIntervalSince1970: Double(ms) / 1000)
    }
}
