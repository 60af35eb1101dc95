import CloudCodable

/// An opaque position in a change history: of a zone (`changes/zone`) or of
/// a database's zones (`changes/database`).
public struct SyncToken: RawRepresentable, Sendable, Hashable, Codable {
    /// The token as the server wrote it.
    public var rawValue: String
    /// Wraps a token the server returned.
    public init(rawValue: String) { self.rawValue = rawValue }
}
