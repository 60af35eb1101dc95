import CloudCodable
import Foundation

/// Signs requests with a server-to-server key: an ECDSA P-256 private key
/// whose public half the server holds under ``keyID``.
///
/// `CumulusSigning` (in the server package) has `P256RequestSigner`, built
/// on swift-crypto; the client package itself has no cryptography beyond
/// SHA-256. A signer that keeps its key in a keychain or a hardware module
/// conforms the same way.
public protocol CloudRequestSigner: Sendable {
    /// The key's identifier, sent as `X-Apple-CloudKit-Request-KeyID`.
    var keyID: String { get }

    /// The DER-encoded ECDSA P-256 signature, over SHA-256, of `message`
    /// (the bytes ``CloudRequestSigning/message(date:body:subpath:)`` builds).
    func signature(for message: [UInt8]) throws -> [UInt8]
}

/// How a server-to-server request is signed: the one definition that the
/// client, which signs, and the server, which verifies, share.
///
/// The signed message is `{date}:{base64 SHA-256 of the body}:{subpath}`,
/// where `subpath` is the URL path from `/database/1/` on, without the query.
public enum CloudRequestSigning {
    /// The header that names the key.
    public static let keyIDHeader = "X-Apple-CloudKit-Request-KeyID"
    /// The header with the signing date, ``dateString(for:)``.
    public static let dateHeader = "X-Apple-CloudKit-Request-ISO8601Date"
    /// The header with the base64 signature.
    public static let signatureHeader = "X-Apple-CloudKit-Request-SignatureV1"

    /// The message a request's signature covers.
    ///
    /// - Parameters:
    ///   - date: The date header's value, as sent.
    ///   - body: The request's body; empty for a `GET`.
    ///   - subpath: The URL path from `/database/1/` on, e.g.
    ///     `/database/1/iCloud.com.example/development/public/records/query`.
    public static func message(date: String, body: [UInt8], subpath: String) -> [UInt8] {
        message(date: date, bodyHash: bodyHash(body), subpath: subpath)
    }

    /// The message a request's signature covers, from the body's hash
    /// (``bodyHash(_:)``) computed by the caller.
    public static func message(date: String, bodyHash: String, subpath: String) -> [UInt8] {
        Array("\(date):\(bodyHash):\(subpath)".utf8)
    }

    /// The base64 SHA-256 digest of `body`, the middle part of the message.
    public static func bodyHash(_ body: [UInt8]) -> String {
        Data(SHA256.hash(body)).base64EncodedString()
    }

    /// `date` as the date header writes it: `yyyy-MM-dd'T'HH:mm:ss'Z'` in
    /// UTC, whole seconds (rounded down).
    public static func dateString(for date: Date) -> String {
        let seconds = Int64((date.timeIntervalSince1970).rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilDate(daysSince1970: days)
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))T\(padded(secondOfDay / 3600, 2)):"
            + "\(padded(secondOfDay / 60 % 60, 2)):\(padded(secondOfDay % 60, 2))Z"
    }

    /// Reads a date header, or `nil` when it is not exactly in the form
    /// ``dateString(for:)`` writes.
    public static func date(from string: String) -> Date? {
        let bytes = Array(string.utf8)
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        // A day past the month's end (February 30) comes back as another date.
        guard civilDate(daysSince1970: days) == (year, month, day) else { return nil }
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// The proleptic Gregorian date of a day count from 1970-01-01.
    private static func civilDate(daysSince1970 days: Int64) -> (Int64, Int64, Int64) {
        // Counts in 400-year eras from 0000-03-01, so that leap days end each year.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The inverse of ``civilDate(daysSince1970:)``.
    private static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let marchYear = month <= 2 ? year - 1 : year
        let era = (marchYear >= 0 ? marchYear : marchYear - 399) / 400
        let yearOfEra = marchYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
