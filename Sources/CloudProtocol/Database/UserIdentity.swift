import CloudCodable

/// A user, as `users/current` and the user lookups answer.
public struct UserIdentity: Sendable, Hashable, Codable {
    /// The user's record name, stable for the user's lifetime.
    public var userRecordName: String
    /// How the user was found: a lookup by email address answers the
    /// address it was asked with, never one it was not.
    public var lookupInfo: UserLookupInfo?
    /// The user's name, when the server knows it.
    public var nameComponents: UserNameComponents?

    /// Creates an identity.
    public init(
        userRecordName: String, lookupInfo: UserLookupInfo? = nil, nameComponents: UserNameComponents? = nil
    ) {
        self.userRecordName = userRecordName
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
    }
}
