import CloudCodable
import Foundation

/// An error from a cloud database: a whole request that failed, or one
/// record, zone or subscription inside a request.
///
/// The code is the wire's `serverErrorCode`. Codes are values, not enum
/// cases, so that a server can add one without breaking clients:
///
/// ```swift
/// if error.code == .conflict, let server = error.serverRecord { … }
/// ```
public struct CloudError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A `serverErrorCode`.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The code as the wire writes it, e.g. `"CONFLICT"`.
        public var rawValue: String
        /// Creates a code from its wire form.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The wire form.
        public var description: String { rawValue }

        /// The caller may not do this.
        public static let accessDenied = Code(rawValue: "ACCESS_DENIED")
        /// An atomic request failed because another of its operations failed.
        public static let atomicError = Code(rawValue: "ATOMIC_ERROR")
        /// The credentials were refused.
        public static let authenticationFailed = Code(rawValue: "AUTHENTICATION_FAILED")
        /// The request needs a signed-in user.
        public static let authenticationRequired = Code(rawValue: "AUTHENTICATION_REQUIRED")
        /// The request is malformed, or breaks a limit (too many operations, a record too large).
        public static let badRequest = Code(rawValue: "BAD_REQUEST")
        /// The record's change tag is out of date: the server holds a newer version.
        public static let conflict = Code(rawValue: "CONFLICT")
        /// A record or zone of that name already exists.
        public static let exists = Code(rawValue: "EXISTS")
        /// The server failed; retrying may help.
        public static let internalError = Code(rawValue: "INTERNAL_ERROR")
        /// No such record or subscription.
        public static let notFound = Code(rawValue: "NOT_FOUND")
        /// The user's storage is full.
        public static let quotaExceeded = Code(rawValue: "QUOTA_EXCEEDED")
        /// Too many requests; wait `retryAfter` before the next.
        public static let throttled = Code(rawValue: "THROTTLED")
        /// The server is busy; wait `retryAfter` and try again.
        public static let tryAgainLater = Code(rawValue: "TRY_AGAIN_LATER")
        /// A reference with the `VALIDATE` action points at a missing record.
        public static let validatingReferenceError = Code(rawValue: "VALIDATING_REFERENCE_ERROR")
        /// No such zone.
        public static let zoneNotFound = Code(rawValue: "ZONE_NOT_FOUND")
        /// The sync token is too old for the server to answer from; fetch again from the start.
        /// (A Cumulus addition to the CloudKit Web Services codes.)
        public static let changeTokenExpired = Code(rawValue: "CHANGE_TOKEN_EXPIRED")
        /// The record is already inside another share's hierarchy (HTTP 409).
        public static let alreadyShared = Code(rawValue: "ALREADY_SHARED")
        /// An asset is larger than the server accepts (HTTP 413).
        /// (A Cumulus addition to the CloudKit Web Services codes.)
        public static let limitExceeded = Code(rawValue: "LIMIT_EXCEEDED")
        /// An asset's upload URL or download URL has expired (HTTP 410): ask
        /// for another, or fetch the record again.
        /// (A Cumulus addition to the CloudKit Web Services codes.)
        public static let expired = Code(rawValue: "EXPIRED")
        /// The byte range asked of an asset is not inside it (HTTP 416).
        /// (A Cumulus addition to the CloudKit Web Services codes.)
        public static let rangeNotSatisfiable = Code(rawValue: "RANGE_NOT_SATISFIABLE")
        /// The database or storage cannot carry out this kind of request
        /// (HTTP 501), e.g. a test double without assets.
        /// (A Cumulus addition to the CloudKit Web Services codes.)
        public static let unsupported = Code(rawValue: "UNSUPPORTED")
        /// The request never reached the server or its answer never came back.
        /// (Client-side only; never on the wire.)
        public static let networkFailure = Code(rawValue: "NETWORK_FAILURE")
        /// The database's credentials changed after the account check the
        /// request was bound to; the request was not sent.
        /// (Client-side only; never on the wire.)
        public static let accountChanged = Code(rawValue: "ACCOUNT_CHANGED")
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for people.
    public var reason: String
    /// How long to wait before retrying, for throttling and transient failures.
    /// An error without it is not retryable.
    public var retryAfter: Duration?
    /// The record the error is about, for per-record errors.
    public var recordName: String?
    /// The zone the error is about, for per-zone errors.
    public var zoneID: ZoneID?
    /// For ``Code/conflict``: the server's current version of the record.
    public var serverRecord: Record?
    /// The server's identifier of the failed request, for its logs.
    public var uuid: String?

    /// Creates an error.
    public init(
        _ code: Code, reason: String, retryAfter: Duration? = nil, recordName: String? = nil,
        zoneID: ZoneID? = nil, serverRecord: Record? = nil, uuid: String? = nil
    ) {
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
        self.recordName = recordName
        self.zoneID = zoneID
        self.serverRecord = serverRecord
        self.uuid = uuid
    }

    /// The HTTP status the wire protocol answers this code with.
    public var httpStatus: Int {
        switch code {
        case .accessDenied: 403
        case .atomicError, .badRequest: 400
        case .authenticationFailed: 401
        case .authenticationRequired: 421
        case .conflict, .exists, .alreadyShared: 409
        case .notFound, .zoneNotFound: 404
        case .quotaExceeded: 413
        case .throttled: 429
        case .tryAgainLater: 503
        case .validatingReferenceError: 412
        case .changeTokenExpired, .expired: 410
        case .limitExceeded: 413
        case .rangeNotSatisfiable: 416
        case .unsupported: 501
        default: 500
        }
    }

    /// Whether sending the same request again later may succeed: throttling,
    /// a busy or failing server, and network failures.
    public var isTransient: Bool {
        switch code {
        case .throttled, .tryAgainLater, .internalError, .networkFailure: true
        default: retryAfter != nil
        }
    }

    /// The error of a database or storage that keeps no assets.
    package static func assetsUnsupported(by type: Any.Type) -> CloudError {
        CloudError(.unsupported, reason: "\(type) does not upload or download assets")
    }

    /// The code, the reason and what the error is about.
    public var description: String {
        var text = "\(code.rawValue): \(reason)"
        if let recordName { text += " (record \(recordName))" }
        if let zoneID { text += " (zone \(zoneID.zoneName))" }
        if let retryAfter { text += " (retry after \(retryAfter))" }
        return text
    }
}
