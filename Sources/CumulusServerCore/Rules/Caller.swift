import CloudCodable
import CloudProtocol

/// Who sends a request, once the host has authenticated it.
public struct Caller: Sendable, Hashable {
    /// The container the request's path names (its token was checked).
    public var container: String
    /// The environment the request's path names.
    public var environment: CloudEnvironment
    /// The database the request's path names.
    public var scope: DatabaseScope
    /// The user's record name, or `nil` for a request signed with a
    /// server-to-server key (public database only) or an anonymous reader.
    public var user: String?
    /// Whether the request carries the container's API token alone: it may
    /// only read the public database.
    public var isAnonymous: Bool

    /// Creates a caller.
    ///
    /// - Parameter anonymous: `true` for a request with the API token alone
    ///   (then `user` must be `nil`).
    public init(
        container: String, environment: CloudEnvironment, scope: DatabaseScope, user: String?,
        anonymous: Bool = false
    ) {
        self.container = container
        self.environment = environment
        self.scope = scope
        self.user = anonymous ? nil : user
        isAnonymous = anonymous
    }

    /// Whether the two are the same, names compared byte for byte.
    public static func == (lhs: Caller, rhs: Caller) -> Bool {
        lhs.container.isExactly(rhs.container) && lhs.environment == rhs.environment && lhs.scope == rhs.scope
            && lhs.isAnonymous == rhs.isAnonymous
            && (lhs.user.map { user in rhs.user.map(user.isExactly) ?? false } ?? (rhs.user == nil))
    }

    /// Hashes the names' bytes, so that equal values hash equally.
    public func hash(into hasher: inout Hasher) {
        ExactName(container).hash(into: &hasher)
        hasher.combine(environment)
        hasher.combine(scope)
        hasher.combine(isAnonymous)
        hasher.combine(user.map(ExactName.init))
    }
}
