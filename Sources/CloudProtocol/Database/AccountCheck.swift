import CloudCodable

/// Who a database's requests act as, as one `users/current` found: the
/// user, and the generation of the database's credentials it was asked
/// with. A database bound to a check (``CloudDatabase/bound(to:)``)
/// refuses to send a request once its credentials changed since.
public struct AccountCheck: Sendable, Hashable {
    /// The signed-in user.
    public var user: UserIdentity
    /// The database's count of account changes when the check was made.
    public var generation: UInt64

    /// Creates a check.
    public init(user: UserIdentity, generation: UInt64) {
        self.user = user
        self.generation = generation
    }
}

/// Whether there is a user to sync for.
public enum AccountStatus: Sendable, Hashable {
    /// A user is signed in and the database can be used.
    case available
    /// No user is signed in (the server asked for one:
    /// `AUTHENTICATION_REQUIRED`).
    case noAccount
    /// The server refused the credentials (`AUTHENTICATION_FAILED`): a
    /// wrong API token or container, or a sign-in that is no longer valid.
    /// A setup mistake or an expired sign-in, not a sign-out.
    case credentialsRefused
    /// The user may not use the database (`ACCESS_DENIED`: parental
    /// controls, policy).
    case restricted
    /// The account cannot be reached right now: offline, throttled, or the
    /// server busy or failing. Syncing goes on trying.
    case temporarilyUnavailable
    /// The server's answer did not say.
    case couldNotDetermine

    /// The status a failed `users/current` implies: the one rule every
    /// database and the engine use.
    public init(after error: CloudError) {
        switch error.code {
        case .authenticationRequired: self = .noAccount
        case .authenticationFailed: self = .credentialsRefused
        case .accessDenied: self = .restricted
        default: self = error.isTransient ? .temporarilyUnavailable : .couldNotDetermine
        }
    }
}
