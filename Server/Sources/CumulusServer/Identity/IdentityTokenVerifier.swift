import CloudCodable
import CloudProtocol
import Crypto
import Foundation
import JWTKit
import Logging

/// An identity token found good: who it proves the bearer is, until when,
/// and what the server trusted to find it so.
struct VerifiedToken: Sendable {
    /// The issuer's subject, and the address it verified.
    let identity: VerifiedIdentity
    /// The token's `exp`.
    let expires: Date
    /// The issuer's configuration and keys it was verified with (see
    /// ``ConfiguredIssuer/trust(keys:)``).
    let trust: SHA256Digest
}

/// Checks identity tokens (JWT) against the issuers configured for the
/// caller's container, with jwt-kit: the algorithm (signed, asymmetric),
/// the issuer, the signature with the issuer's key named by `kid`, the
/// expiry and not-before dates within the clock-skew leeway, the audience,
/// and the subject. Every refusal is an ``HTTPFailure`` that says what is
/// wrong and never holds the token.
struct IdentityTokenVerifier: Sendable {
    /// The algorithms of public-key signatures; `none` and the HMAC ones,
    /// whose key would be the public key itself, are refused.
    static let acceptedAlgorithms: Set<String> = [
        "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
    ]

    let directory: IdentityIssuerDirectory
    let settings: IdentityTokenSettings
    /// The server's wall clock.
    let now: @Sendable () -> Date

    init(
        service: any CloudServing, settings: IdentityTokenSettings, now: @escaping @Sendable () -> Date, logger: Logger
    ) {
        directory = IdentityIssuerDirectory(service: service, settings: settings, logger: logger)
        self.settings = settings
        self.now = now
    }

    /// Whether a token JWT-shaped: three base64url parts joined by dots.
    /// A classic web auth token is 64 hexadecimal characters, never this.
    static func isTokenShaped(_ token: String) -> Bool {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return parts.count == 3 && parts[0].count > 0 && parts[1].count > 0
            && token.utf8.allSatisfy { $0 == UInt8(ascii: ".") || $0.isBase64URL }
    }

    /// Whether each of the token's three parts is canonical base64url
    /// without padding (RFC 7515 §2): only `A-Z a-z 0-9 - _`, no length
    /// that leaves a lone character, and zero in the bits the last
    /// character does not fill, so that one token has one spelling.
    static func isCanonical(_ token: String) -> Bool {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return parts.count == 3 && parts.allSatisfy(isCanonicalPart)
    }

    private static func isCanonicalPart(_ part: Substring.UTF8View.SubSequence) -> Bool {
        var last: UInt8 = 0
        for byte in part {
            guard let value = byte.base64URLValue else { return false }
            last = value
        }
        switch part.count % 4 {
        case 1: return false
        // Two characters carry one byte (4 bits left over), three carry two (2 bits left over).
        case 2: return last & 0x0F == 0
        case 3: return last & 0x03 == 0
        default: return true
        }
    }

    /// The identity `token` proves, for a request to `container`.
    func verify(_ token: String, container: String) async throws -> VerifiedToken {
        guard Self.isCanonical(token) else {
            throw Self.refusal(
                "The identity token is not canonical base64url: each of its three parts is base64url without padding.")
        }
        let bytes = Array(token.utf8)
        let header: JWTHeader
        let unverified: IdentityClaims
        do {
            (header, unverified, _) = try DefaultJWTParser().parse(bytes, as: IdentityClaims.self)
        } catch {
            throw Self.refusal("The identity token is not a well-formed JWT.")
        }
        let algorithm = try Self.checkAlgorithm(header.alg)
        guard let issuerName = unverified.issuer?.value, !issuerName.isEmpty else {
            throw Self.refusal("The identity token has no issuer (iss).")
        }
        guard let issuer = try await directory.issuer(issuerName, container: container) else {
            throw Self.refusal("The identity token's issuer is not configured for this container.")
        }
        let keys = try await directory.keys(of: issuer, keyID: header.kid)
        let claims = try await Self.verifySignature(bytes, keyID: header.kid, algorithm: algorithm, keys: keys)
        let identity = try check(claims, issuer: issuer)
        return VerifiedToken(
            identity: identity, expires: claims.expires?.value ?? now(), trust: issuer.trust(keys: keys))
    }

    /// The dates, the audience and the subject of a token whose signature is good.
    private func check(_ claims: IdentityClaims, issuer: ConfiguredIssuer) throws -> VerifiedIdentity {
        let leeway = Self.seconds(settings.clockSkewLeeway)
        let now = now()
        guard let expires = claims.expires else {
            throw Self.refusal("The identity token has no expiry (exp).")
        }
        do {
            try expires.verifyNotExpired(currentDate: now.addingTimeInterval(-leeway))
        } catch {
            throw Self.refusal("The identity token has expired.")
        }
        if let notBefore = claims.notBefore {
            do {
                try notBefore.verifyNotBefore(currentDate: now.addingTimeInterval(leeway))
            } catch {
                throw Self.refusal("The identity token is not valid yet (nbf).")
            }
        }
        let audiences = claims.audience?.value ?? []
        guard audiences.contains(where: { audience in issuer.stored.audiences.contains { $0.isExactly(audience) } })
        else {
            throw Self.refusal("The identity token's audience (aud) is not one configured for its issuer.")
        }
        guard let subject = claims.subject?.value, !subject.isEmpty else {
            throw Self.refusal("The identity token has no subject (sub).")
        }
        guard !subject.utf8.contains(0) else {
            throw Self.refusal("The identity token's subject (sub) holds U+0000.")
        }
        let email = claims.emailVerified ? claims.email.flatMap(EmailAddresses.normalized) : nil
        let name = UserNames.fromClaims(name: claims.name, givenName: claims.givenName, familyName: claims.familyName)
        return VerifiedIdentity(
            issuer: issuer.stored.issuer, subject: subject, verifiedEmailAddress: email, nameComponents: name)
    }

    /// The header's algorithm, when it is one Cumulus accepts.
    private static func checkAlgorithm(_ algorithm: String?) throws -> String {
        guard let algorithm, acceptedAlgorithms.contains(algorithm) else {
            if algorithm?.lowercased() == "none" {
                throw refusal("The identity token is not signed (alg none).")
            }
            throw refusal(
                "The identity token's algorithm (alg) is not one Cumulus accepts: "
                    + acceptedAlgorithms.sorted().joined(separator: ", ") + ".")
        }
        return algorithm
    }

    /// The claims of a token whose signature verifies with the key it
    /// names, or without a `kid` with one of the keys of its algorithm. The
    /// header's `alg` must be the key's (RFC 7515 §4.1.1): jwt-kit would
    /// verify with the key's own algorithm whatever the header says.
    private static func verifySignature(
        _ bytes: [UInt8], keyID: String?, algorithm: String, keys: IdentityKeySet
    ) async throws -> IdentityClaims {
        guard let keyID else {
            var refusal: any Error = refusal("The identity token's algorithm (alg) is not one of its issuer's keys'.")
            for single in keys.singleKeys where keys.algorithms[single.keyID]?.contains(algorithm) == true {
                do {
                    return try await single.keys.verify(bytes, as: IdentityClaims.self)
                } catch {
                    refusal = signatureRefusal(error)
                }
            }
            throw refusal
        }
        guard let allowed = keys.algorithms[ExactName(keyID)] else {
            throw refusal("The identity token is signed with a key (kid) that is not in the issuer's key set.")
        }
        guard allowed.contains(algorithm) else {
            throw refusal(
                "The identity token's algorithm (alg) is not its key's: "
                    + allowed.sorted().joined(separator: ", ") + ".")
        }
        do {
            return try await keys.keys.verify(bytes, as: IdentityClaims.self)
        } catch {
            throw signatureRefusal(error)
        }
    }

    /// What jwt-kit's refusal of a signature means for the caller.
    private static func signatureRefusal(_ error: any Error) -> HTTPFailure {
        guard let error = error as? JWTError else {
            return refusal("The identity token cannot be verified with the issuer's keys.")
        }
        switch error.errorType {
        case .signatureVerificationFailed:
            return refusal("The identity token's signature does not verify with the issuer's key.")
        case .malformedToken:
            return refusal("The identity token is not a well-formed JWT.")
        default:
            return refusal("The identity token's algorithm (alg) does not fit the issuer's key.")
        }
    }

    static func refusal(_ reason: String) -> HTTPFailure {
        HTTPFailure(.authenticationFailed, reason)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension UInt8 {
    /// A character of base64url (RFC 4648 §5), padding included: enough
    /// to take a token for a JWT, which ``IdentityTokenVerifier/isCanonical(_:)``
    /// then judges.
    fileprivate var isBase64URL: Bool {
        base64URLValue != nil || self == UInt8(ascii: "=")
    }

    /// The six bits a base64url character (RFC 4648 §5) stands for, or `nil`.
    fileprivate var base64URLValue: UInt8? {
        switch self {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): self - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): self - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
