import CloudCodable
import CloudProtocol
import Foundation

/// A web auth token's row: whose it is, since and until when. The token
/// itself is never stored, only its SHA-256.
public struct StoredUserToken: Sendable, Hashable {
    /// The SHA-256 of the token, as lowercase hexadecimal.
    public var tokenHash: String
    /// The token's ID: the first 16 characters of its hash, shown in lists
    /// and used to revoke it without having the token.
    public var id: String
    /// The record name of the user the token signs in.
    public var userRecordName: String
    /// When it was made, in milliseconds since 1970.
    public var created: Int64
    /// When it stops working, in milliseconds since 1970; `nil` never.
    public var expires: Int64?

    /// Creates a row; the ID is derived from the hash.
    public init(tokenHash: String, userRecordName: String, created: Int64, expires: Int64?) {
        self.tokenHash = tokenHash
        id = String(tokenHash.prefix(Self.idLength))
        self.userRecordName = userRecordName
        self.created = created
        self.expires = expires
    }

    /// How many characters of the hash make the ID.
    public static let idLength = 16

    /// Whether the token no longer works at `time` (milliseconds since 1970).
    public func isExpired(at time: Int64) -> Bool {
        expires.map { $0 <= time } ?? false
    }
}

/// A user as the operator sees them: name, record name, address, the name
/// others see, how many of their web auth tokens work, and the identities
/// they sign in with.
public struct StoredUserAccount: Sendable, Hashable {
    /// The name the operator gave the user (an identity user's is its record name).
    public var name: String
    /// The user's record name.
    public var recordName: String
    /// The address others find the user by, if any.
    public var emailAddress: String?
    /// Whether lookups may return the user.
    public var isDiscoverable: Bool
    /// How many of the user's web auth tokens have not expired.
    public var activeTokens: Int
    /// The name other users see, if any (see ``UserNames``).
    public var nameComponents: UserNameComponents?
    /// The issuers' subjects that sign in as the user (none for a user the
    /// operator made); the stores leave it empty, and the service's list fills it.
    public var identities: [StoredIdentity]
    /// Whether one of ``identities`` is blocked; filled as ``identities`` is.
    public var isBlocked: Bool

    /// Creates a row.
    public init(
        name: String, recordName: String, emailAddress: String?, isDiscoverable: Bool, activeTokens: Int,
        nameComponents: UserNameComponents? = nil, identities: [StoredIdentity] = [], isBlocked: Bool = false
    ) {
        self.name = name
        self.recordName = recordName
        self.emailAddress = emailAddress
        self.isDiscoverable = isDiscoverable
        self.activeTokens = activeTokens
        self.nameComponents = nameComponents
        self.identities = identities
        self.isBlocked = isBlocked
    }
}

/// A container's API tokens: the current one, and the one it replaced
/// while that one's overlap lasts.
public struct StoredContainerCredentials: Sendable, Hashable {
    /// The SHA-256 of the current API token.
    public var tokenHash: String
    /// The SHA-256 of the token the last rotation replaced, if it may still work.
    public var previousTokenHash: String?
    /// When the previous token stops working, in milliseconds since 1970.
    public var previousTokenExpires: Int64?

    /// Creates a row.
    public init(tokenHash: String, previousTokenHash: String? = nil, previousTokenExpires: Int64? = nil) {
        self.tokenHash = tokenHash
        self.previousTokenHash = previousTokenHash
        self.previousTokenExpires = previousTokenExpires
    }
}

/// A server-to-server key's row.
public struct StoredServerKey: Sendable, Hashable {
    /// The key ID requests name it by.
    public var id: String
    /// The P-256 public key, in PEM.
    public var publicKeyPEM: String

    /// Creates a row.
    public init(id: String, publicKeyPEM: String) {
        self.id = id
        self.publicKeyPEM = publicKeyPEM
    }
}

/// A token of the operator's console, as the store keeps it: its hash,
/// never the token.
public struct StoredConsoleToken: Sendable, Hashable {
    /// The SHA-256 of the token, as lowercase hexadecimal (``ServerSecrets/sha256Hex(_:)``).
    public var tokenHash: String
    /// The token's ID: the first 16 characters of its hash, shown in lists
    /// and logs and used to revoke it.
    public var id: String
    /// What the operator called it (who holds it).
    public var label: String
    /// When it was made, in milliseconds since 1970.
    public var created: Int64

    /// Creates a row.
    public init(tokenHash: String, id: String, label: String, created: Int64) {
        self.tokenHash = tokenHash
        self.id = id
        self.label = label
        self.created = created
    }
}

/// What the server's accounts read and write of credentials inside a
/// storage transaction: part of every ``StorageTransaction``.
///
/// Every change that takes a credential away (a revoked token, a removed
/// user or key, a rotated API token) calls ``recordCredentialChange()`` in
/// the same transaction, so that every server drops what it trusted. The
/// defaults throw ``CloudError/Code/unsupported``: a storage without
/// accounts (the in-memory server's) still serves every request.
public protocol CredentialTransaction: Sendable {
    /// Creates a user without tokens; `false` when the name is taken in the container.
    func createUser(named name: String, recordName: String, container: String) async throws -> Bool
    /// The user of a container with this name, or `nil`.
    func userAccount(named name: String, container: String, activeAt time: Int64) async throws -> StoredUserAccount?
    /// Every user of a container, by name, with the tokens working at `time`.
    func userAccounts(container: String, activeAt time: Int64) async throws -> [StoredUserAccount]
    /// Deletes a user's row (not their tokens or data); `false` when there was none.
    func deleteUser(recordName: String, container: String) async throws -> Bool

    /// Stores a new web auth token.
    func saveUserToken(_ token: StoredUserToken, container: String) async throws
    /// The token with this hash, expired or not, or `nil`.
    func userToken(tokenHash: String, container: String) async throws -> StoredUserToken?
    /// The tokens whose ID is `id` (one, but for a collision).
    func userTokens(id: String, container: String) async throws -> [StoredUserToken]
    /// A user's tokens, oldest first.
    func userTokens(ofUser recordName: String, container: String) async throws -> [StoredUserToken]
    /// Deletes the tokens with these hashes.
    func deleteUserTokens(hashes: [String], container: String) async throws

    /// A container's API tokens, or `nil` for an unknown container.
    func containerCredentials(named name: String) async throws -> StoredContainerCredentials?
    /// Replaces a container's API tokens; `false` for an unknown container.
    func setContainerCredentials(_ credentials: StoredContainerCredentials, named name: String) async throws -> Bool

    /// A container's server-to-server keys, by ID.
    func serverKeys(container: String) async throws -> [StoredServerKey]
    /// Deletes a server-to-server key; `false` when there was none.
    func deleteServerKey(id: String, container: String) async throws -> Bool

    /// The operator's console tokens, oldest first.
    func consoleTokens() async throws -> [StoredConsoleToken]
    /// Stores a new console token.
    func saveConsoleToken(_ token: StoredConsoleToken) async throws
    /// Deletes the console token with this ID; `false` when there was none.
    func deleteConsoleToken(id: String) async throws -> Bool

    /// Notes that a credential was taken away: moves the credentials epoch
    /// on, and tells every server listening (PostgreSQL's `NOTIFY`, sent
    /// when the transaction commits).
    func recordCredentialChange() async throws
    /// The credentials epoch: a number that changes with every
    /// ``recordCredentialChange()``.
    func credentialsEpoch() async throws -> Int64
}

extension CredentialTransaction {
    /// Throws ``CloudError/Code/unsupported``.
    public func consoleTokens() async throws -> [StoredConsoleToken] {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func saveConsoleToken(_ token: StoredConsoleToken) async throws {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func deleteConsoleToken(id: String) async throws -> Bool {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func createUser(named name: String, recordName: String, container: String) async throws -> Bool {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func userAccount(named name: String, container: String, activeAt time: Int64) async throws
        -> StoredUserAccount?
    {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func userAccounts(container: String, activeAt time: Int64) async throws -> [StoredUserAccount] {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func deleteUser(recordName: String, container: String) async throws -> Bool {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func saveUserToken(_ token: StoredUserToken, container: String) async throws {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func userToken(tokenHash: String, container: String) async throws -> StoredUserToken? {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func userTokens(id: String, container: String) async throws -> [StoredUserToken] {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func userTokens(ofUser recordName: String, container: String) async throws -> [StoredUserToken] {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func deleteUserTokens(hashes: [String], container: String) async throws {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func containerCredentials(named name: String) async throws -> StoredContainerCredentials? {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func setContainerCredentials(_ credentials: StoredContainerCredentials, named name: String) async throws
        -> Bool
    {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func serverKeys(container: String) async throws -> [StoredServerKey] {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func deleteServerKey(id: String, container: String) async throws -> Bool {
        throw CloudError.accountsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func recordCredentialChange() async throws { throw CloudError.accountsUnsupported(by: Self.self) }
    /// Throws ``CloudError/Code/unsupported``.
    public func credentialsEpoch() async throws -> Int64 { throw CloudError.accountsUnsupported(by: Self.self) }

    /// Creates a user with one web auth token that never expires, made now;
    /// `false` (and no token) when the name is taken in the container.
    public func createUser(named name: String, recordName: String, tokenHash: String, container: String)
        async throws -> Bool
    {
        guard try await createUser(named: name, recordName: recordName, container: container) else { return false }
        let now = ServerTime.milliseconds(Date())
        try await saveUserToken(
            StoredUserToken(tokenHash: tokenHash, userRecordName: recordName, created: now, expires: nil),
            container: container)
        return true
    }

    /// The record name of the user whose web auth token has this hash,
    /// whether or not the token expired.
    public func userRecordName(container: String, tokenHash: String) async throws -> String? {
        try await userToken(tokenHash: tokenHash, container: container)?.userRecordName
    }
}

extension CloudError {
    /// The error of a storage that keeps no accounts.
    static func accountsUnsupported(by type: Any.Type) -> CloudError {
        CloudError(.unsupported, reason: "\(type) keeps no accounts")
    }
}
