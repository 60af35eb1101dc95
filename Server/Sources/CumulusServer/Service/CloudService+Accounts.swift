import CloudCodable
import CloudProtocol
import Crypto
import Foundation

extension CloudService {
    /// Creates a container and returns its API token (64 hexadecimal
    /// characters); only the token's SHA-256 is stored. A taken name throws
    /// `EXISTS`, one outside ``NameRules/checkNewContainerName(_:)`` `BAD_REQUEST`.
    public func addContainer(named name: String) async throws -> String {
        try NameRules.checkNewContainerName(name)
        let token = ServerSecrets.randomHex(bytes: 32)
        let hash = ServerSecrets.sha256Hex(token)
        let created = try await storage.write { transaction in
            try await transaction.createContainer(named: name, tokenHash: hash)
        }
        guard created else { throw CloudError(.exists, reason: "there is already a container named '\(name)'") }
        return token
    }

    /// Creates a user of a container and returns the user's record name
    /// (`_` and 32 hexadecimal characters) and a web auth token that never
    /// expires; only the token's SHA-256 is stored. An unknown container
    /// throws `NOT_FOUND`, a taken name `EXISTS`.
    public func addUser(named name: String, container: String) async throws
        -> (userRecordName: String, webAuthToken: String)
    {
        try await addUser(named: name, container: container, tokenLifetime: nil)
    }

    /// Creates a user whose first web auth token stops working after
    /// `tokenLifetime` (`nil`: never), as ``addUser(named:container:)`` does,
    /// with the name other users see (`displayName`, see `UserNames`): in
    /// lookups that may return them and in the shares they own or join.
    /// A display name holding a control character or longer than
    /// `UserNames.maximumLength` bytes throws `BAD_REQUEST` and creates no user.
    public func addUser(
        named name: String, container: String, tokenLifetime: Duration?, displayName: UserNameComponents? = nil
    ) async throws -> (userRecordName: String, webAuthToken: String) {
        guard !name.isEmpty else { throw CloudError(.badRequest, reason: "a user needs a name") }
        try NameRules.check(name, "the user name")
        try NameRules.check(container, "the container name")
        let displayName = try UserNames.checked(displayName)
        if let tokenLifetime { try Self.checkLifetime(tokenLifetime) }
        let recordName = "_" + ServerSecrets.randomHex(bytes: 16)
        let token = ServerSecrets.randomHex(bytes: 32)
        let now = ServerTime.milliseconds(rules.currentDate())
        let row = StoredUserToken(
            tokenHash: ServerSecrets.sha256Hex(token), userRecordName: recordName, created: now,
            expires: tokenLifetime.map { now &+ ServerTime.milliseconds($0) })
        let created = try await storage.write { transaction -> Bool? in
            guard try await transaction.containerTokenHash(named: container) != nil else { return nil }
            guard try await transaction.createUser(named: name, recordName: recordName, container: container) else {
                return false
            }
            try await transaction.saveUserToken(row, container: container)
            if let displayName {
                _ = try await transaction.setUserName(displayName, recordName: recordName, container: container)
            }
            return true
        }
        guard let created else { throw Self.unknownContainer(container) }
        guard created else {
            throw CloudError(.exists, reason: "the container already has a user named '\(name)'")
        }
        return (recordName, token)
    }

    /// Creates a user of a container, as ``addUser(named:container:)``
    /// does, with an email address by which the container's other users
    /// find them (see ``setEmailAddress(_:discoverable:forUser:container:)``).
    /// Text that is not an address throws `BAD_REQUEST`, an address another
    /// user holds `EXISTS`; neither creates a user.
    public func addUser(
        named name: String, container: String, emailAddress: String, discoverable: Bool = true,
        tokenLifetime: Duration? = nil, displayName: UserNameComponents? = nil
    ) async throws -> (userRecordName: String, webAuthToken: String) {
        // The address is checked first, so that a bad one leaves no user
        // behind: no user has the empty record name, so this changes nothing.
        _ = try await rules.setEmailAddress(emailAddress, discoverable: discoverable, forUser: "", container: container)
        _ = try UserNames.checked(displayName)
        let user = try await addUser(
            named: name, container: container, tokenLifetime: tokenLifetime, displayName: displayName)
        try await setEmailAddress(
            emailAddress, discoverable: discoverable, forUser: user.userRecordName, container: container)
        return user
    }

    /// Gives a user of a container an email address by which the container's
    /// other users find them (`nil` takes it away); `discoverable: false`
    /// keeps the user out of lookups. The address is stored with its ASCII
    /// letters lowercased. An address belongs to one user of a container at
    /// a time: the first who holds it keeps it until it is taken from them.
    /// Text that is not an address throws `BAD_REQUEST`; an address another
    /// user holds `EXISTS`; an unknown container or user `NOT_FOUND`.
    public func setEmailAddress(
        _ address: String?, discoverable: Bool = true, forUser recordName: String, container: String
    ) async throws {
        let known = try await rules.setEmailAddress(
            address, discoverable: discoverable, forUser: recordName, container: container)
        guard known else {
            throw CloudError(.notFound, reason: "the container '\(container)' has no user '\(recordName)'")
        }
    }

    /// Gives a user of a container the name other users see (see
    /// `UserNames`), or takes it away (`nil`). A name holding a control
    /// character or longer than `UserNames.maximumLength` bytes throws
    /// `BAD_REQUEST`; an unknown user `NOT_FOUND`.
    public func setName(_ name: UserNameComponents?, forUser recordName: String, container: String) async throws {
        guard try await rules.setName(name, forUser: recordName, container: container) else {
            throw CloudError(.notFound, reason: "the container '\(container)' has no user '\(recordName)'")
        }
    }

    /// What the page at a share's URL shows, or `nil` for an unknown shortGUID.
    public func sharePreview(shortGUID: String) async throws -> SharePreview? {
        try await rules.sharePreview(shortGUID: shortGUID)
    }

    /// Registers a server-to-server key (a P-256 public key in PEM) and
    /// returns its key ID (64 hexadecimal characters). A PEM that is not a
    /// P-256 public key throws `BAD_REQUEST`; an unknown container `NOT_FOUND`.
    public func addServerKey(container: String, publicKeyPEM: String) async throws -> String {
        do {
            _ = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        } catch {
            throw CloudError(.badRequest, reason: "the key is not a P-256 public key in PEM: \(error)")
        }
        let keyID = ServerSecrets.randomHex(bytes: 32)
        let created = try await storage.write { transaction -> Bool in
            guard try await transaction.containerTokenHash(named: container) != nil else { return false }
            try await transaction.createServerKey(id: keyID, publicKeyPEM: publicKeyPEM, container: container)
            return true
        }
        guard created else { throw Self.unknownContainer(container) }
        return keyID
    }

    /// Whether `apiToken` is one of the container's API tokens that work
    /// now (`false` for an unknown container).
    public func authenticateContainer(named name: String, apiToken: String) async throws -> Bool {
        if case .valid = try await authenticateAPIToken(apiToken, container: name) { return true }
        return false
    }

    /// The record name of the container's user with this web auth token, or
    /// `nil` for none or an expired one.
    public func user(container: String, webAuthToken: String) async throws -> String? {
        if case .valid(let user, _) = try await authenticateWebAuthToken(webAuthToken, container: container) {
            return user
        }
        return nil
    }

    /// The PEM public key registered under `keyID` for the container, or `nil`.
    public func serverKey(container: String, keyID: String) async throws -> String? {
        try await storage.read { transaction in try await transaction.serverKey(id: keyID, container: container) }
    }

    /// The types the environment's schema gives fields, for reading fields
    /// sent without `type`.
    public func fieldTypes(container: String, environment: CloudEnvironment) async throws -> FieldTypeLookup {
        try await rules.fieldTypes(container: container, environment: environment)
    }

    /// Makes the listening address the base of the service's URLs when no
    /// public URL is configured.
    public func useListeningAddress(_ url: String) {
        rules.useListeningAddress(url)
    }

    /// `path` on the public URL, else the listening address.
    public func absoluteURL(_ path: String) -> String {
        rules.absoluteURL(path)
    }

    /// A new notification channel for `caller` (the `apnsToken` of `tokens/create`).
    public func createNotificationToken(for caller: Caller) async throws -> String {
        try await rules.openChannel(for: caller)
    }

    /// Waits until the channel has notifications after `cursor` (from the channel's creation
    /// when `nil`) or `timeout` passes, and returns them with the next
    /// cursor. An unknown token throws `NOT_FOUND`, a cursor the server did
    /// not write `BAD_REQUEST`, a channel whose credential no longer holds
    /// (``channelCredentialHolds(_:)``) `AUTHENTICATION_FAILED`, at once when
    /// a credential is taken away during the wait.
    public func pollNotifications(token: String, cursor: String?, timeout: Duration) async throws
        -> NotificationBatch
    {
        try await rules.pollChannel(token: token, cursor: cursor, timeout: timeout) { [self] channel in
            try await channelCredentialHolds(channel)
        }
    }

    // MARK: Errors

    static func unknownContainer(_ name: String) -> CloudError {
        CloudError(.notFound, reason: "there is no container named '\(name)'")
    }
}
