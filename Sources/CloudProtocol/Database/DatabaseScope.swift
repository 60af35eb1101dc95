import CloudCodable

/// One of a container's three databases.
public enum DatabaseScope: String, Sendable, Hashable, Codable, CaseIterable {
    /// Readable by every user; each record writable by its creator.
    case `public`
    /// The signed-in user's own data.
    case `private`
    /// Other users' zones shared with the signed-in user.
    case shared
}
