import Foundation

/// What the client reads of an identity token, without verifying it: whom
/// it speaks for and when it expires. The server verifies the token; the
/// client only needs to know when to ask for a new one and whether the
/// account changed.
struct IdentityTokenClaims: Equatable {
    /// `iss`, if the payload has it as a string.
    var issuer: String?
    /// `sub`, if the payload has it as a string.
    var subject: String?
    /// `exp`, if the payload has it as a number of seconds since 1970.
    var expiry: Date?

    /// The claims of a JSON Web Token in its compact form
    /// (`header.payload.signature`, each part base64url); `nil` when the
    /// token is not of that shape or its payload is not a JSON object.
    init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Self.base64URLDecoded(parts[1]),
            let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { return nil }
        issuer = object["iss"] as? String
        subject = object["sub"] as? String
        if let seconds = (object["exp"] as? NSNumber)?.doubleValue, seconds.isFinite {
            expiry = Date(timeIntervalSince1970: seconds)
        }
    }

    /// The bytes of base64url text, padded or not; `nil` for anything else.
    static func base64URLDecoded(_ text: Substring) -> Data? {
        var standard = String(text).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if standard.hasSuffix("=") {
            guard standard.utf8.count % 4 == 0 else { return nil }
        } else {
            switch standard.utf8.count % 4 {
            case 2: standard += "=="
            case 3: standard += "="
            case 1: return nil
            default: break
            }
        }
        return Data(base64Encoded: standard)
    }
}

/// Whom the identity tokens of ``RemoteCloudDatabase/Credentials/identity(apiToken:token:)``
/// speak for: a change of it is a change of account. Never printed: an
/// unreadable token is its own identity.
enum TokenIdentity: Hashable {
    /// The provider answered `nil`.
    case signedOut
    /// A token whose payload names its subject: issuer and subject as exact
    /// UTF-8 bytes, so that two spellings Swift's `==` calls equal are two users.
    case subject(issuer: [UInt8]?, subject: [UInt8])
    /// A token whose subject cannot be read: only the same token is the same
    /// account. The server decides what it is worth.
    case unreadable(token: [UInt8])

    /// The identity of the provider's answer.
    init(token: String?) {
        guard let token else {
            self = .signedOut
            return
        }
        if let claims = IdentityTokenClaims(token: token), let subject = claims.subject {
            self = .subject(issuer: claims.issuer.map { Array($0.utf8) }, subject: Array(subject.utf8))
        } else {
            self = .unreadable(token: Array(token.utf8))
        }
    }
}
