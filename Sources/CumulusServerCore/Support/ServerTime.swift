import Foundation

/// The server's times as stores keep them, milliseconds in an `Int64`,
/// with one overflow rule for the core and the record server: saturate. A
/// host's clock, a damaged row or a configured limit never traps or wraps
/// the arithmetic.
public enum ServerTime {
    /// Milliseconds since 1970, rounded down, clamped to what `Int64` holds.
    public static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return value > 0 ? .max : .min }
        return Int64(exactly: value) ?? (value > 0 ? .max : .min)
    }

    /// Whole milliseconds of `duration`, clamped to what `Int64` holds.
    public static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds > 0 ? .max : .min }
        let (total, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return carry ? (whole > 0 ? .max : .min) : total
    }

    /// `seconds` as a duration of whole milliseconds, rounded by `rule`,
    /// clamped to what `Int64` milliseconds hold; NaN is zero.
    public static func duration(seconds: Double, rounding rule: FloatingPointRoundingRule = .down) -> Duration {
        let value = (seconds * 1000).rounded(rule)
        guard !value.isNaN else { return .zero }
        return .milliseconds(Int64(exactly: value) ?? (value > 0 ? .max : .min))
    }

    /// The date `milliseconds` after 1970, as stores keep times.
    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// `time` plus `duration`, in milliseconds, clamped to what `Int64` holds.
    public static func adding(_ duration: Duration, to time: Int64) -> Int64 {
        let (sum, overflow) = time.addingReportingOverflow(ServerTime.milliseconds(duration))
        return overflow ? (time > 0 ? .max : .min) : sum
    }

    /// `later - earlier`, saturating: a stored time from a damaged row reads
    /// as long ago, never a trap.
    public static func elapsed(from earlier: Int64, to later: Int64) -> Int64 {
        let (difference, overflow) = later.subtractingReportingOverflow(earlier)
        return overflow ? (earlier < 0 ? .max : .min) : difference
    }
}
