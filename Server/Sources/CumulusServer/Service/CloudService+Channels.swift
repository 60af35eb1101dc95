import CloudCodable
import CloudProtocol
import Foundation

/// The credential a notification channel was opened with, as the channel's
/// row keeps it: never the secret itself. A poll checks it again whenever a
/// credential may have been taken away, and the channel ends once it no
/// longer holds.
public enum ChannelCredential: Sendable, Hashable {
    /// A web auth token, by its SHA-256 (what the store keeps of it).
    case webAuthToken(hash: String)
    /// An identity token of `issuer` for `subject`: the channel holds while
    /// the container trusts the issuer and the subject still signs in as
    /// the channel's user. A token's own expiry does not end it: the app
    /// fetches a new token of the same identity.
    case identity(issuer: String, subject: String)
    /// A server-to-server key.
    case serverKey(id: String)

    /// The text a channel's row keeps: a kind, then the fields, each
    /// but the last with its length in UTF-8 bytes, so no byte of a name
    /// can run two fields together.
    public var stored: String {
        switch self {
        case .webAuthToken(let hash): "web:" + hash
        case .identity(let issuer, let subject): "identity:\(issuer.utf8.count):" + issuer + subject
        case .serverKey(let id): "key:" + id
        }
    }

    /// Reads what ``stored`` wrote; `nil` for anything else.
    public init?(stored text: String) {
        if text.hasPrefix("web:") {
            self = .webAuthToken(hash: String(text.dropFirst(4)))
        } else if text.hasPrefix("key:") {
            self = .serverKey(id: String(text.dropFirst(4)))
        } else if text.hasPrefix("identity:") {
            let rest = Array(text.utf8.dropFirst("identity:".utf8.count))
            guard let colon = rest.firstIndex(of: UInt8(ascii: ":")),
                let length = Int(String(decoding: rest[..<colon], as: UTF8.self)), length >= 0,
                rest.count - colon - 1 >= length,
                let issuer = String(validating: rest[(colon + 1)..<(colon + 1 + length)], as: UTF8.self),
                let subject = String(validating: rest[(colon + 1 + length)...], as: UTF8.self)
            else { return nil }
            self = .identity(issuer: issuer, subject: subject)
        } else {
            return nil
        }
    }
}

extension CloudService {
    /// Whether the credential a channel was opened with still holds: a web
    /// auth token not revoked nor expired, of the channel's user, who is not
    /// blocked; an identity not blocked, whose issuer the container still
    /// trusts and which still signs in as the channel's user; a key still
    /// registered. A channel
    /// opened without a credential named holds; one whose credential cannot
    /// be read does not.
    public func channelCredentialHolds(_ channel: StoredChannel) async throws -> Bool {
        guard let text = channel.credential else { return true }
        guard let credential = ChannelCredential(stored: text) else { return false }
        let container = channel.key.container
        let now = ServerTime.milliseconds(rules.currentDate())
        return try await storage.read { transaction in
            switch credential {
            case .webAuthToken(let hash):
                guard let token = try await transaction.userToken(tokenHash: hash, container: container),
                    !token.isExpired(at: now), token.userRecordName.isExactly(channel.user)
                else { return false }
                return try await !transaction.isUserBlocked(channel.user, container: container)
            case .identity(let issuer, let subject):
                let issuers = try await transaction.identityIssuers(container: container)
                guard issuers.contains(where: { $0.issuer.isExactly(issuer) }),
                    let user = try await transaction.identityUser(
                        issuer: issuer, subject: subject, container: container),
                    user.isExactly(channel.user)
                else { return false }
                return try await !transaction.isIdentityBlocked(issuer: issuer, subject: subject, container: container)
            case .serverKey(let id):
                return try await transaction.serverKey(id: id, container: container) != nil
            }
        }
    }
}
