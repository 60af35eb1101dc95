import CloudCodable
import CloudProtocol
import Crypto
import Foundation
import JWTKit

/// An issuer's public keys, read from its key set (JWKS) by jwt-kit: what
/// verifies the signatures of its tokens.
///
/// Only public keys with a key ID (`kid`) are kept, since a token names its
/// key by ID; keys for encryption (`"use": "enc"`) and keys of a type
/// jwt-kit does not know are left out. A set holding a private key is
/// refused, so that an operator who gives one by mistake learns it at once.
struct IdentityKeySet: Sendable {
    /// The keys, by key ID, as jwt-kit verifies with them.
    let keys: JWTKeyCollection
    /// The key IDs of ``keys``, as exact bytes.
    let keyIDs: Set<ExactName>
    /// The algorithms a token signed with each key may name in its header
    /// (`alg`): the key's own when its JWK names one, else those of its
    /// type and curve (RFC 7515 §4.1.1, RFC 7517 §4.4).
    let algorithms: [ExactName: Set<String>]
    /// Each key alone, in the document's order, for a token that names no
    /// key: it is tried only with the keys of the algorithm it names.
    let singleKeys: [(keyID: ExactName, keys: JWTKeyCollection)]
    /// The SHA-256 of the document: another document is another set.
    let digest: SHA256Digest
    /// How many keys of the document were left out.
    let skipped: Int

    /// Reads a JWKS document. Throws ``CloudError`` (`BAD_REQUEST`) for a
    /// document that is not a key set, holds a private key or a key jwt-kit
    /// cannot use, or has no usable key at all.
    static func parse(_ document: String) async throws -> IdentityKeySet {
        let decoded: DecodedKeySet
        do {
            decoded = try JSONDecoder().decode(DecodedKeySet.self, from: Data(document.utf8))
        } catch {
            throw CloudError(.badRequest, reason: "the key set is not a JWKS document (a JSON object with \"keys\")")
        }
        let keys = JWTKeyCollection()
        var keyIDs = Set<ExactName>()
        var algorithms: [ExactName: Set<String>] = [:]
        var singleKeys: [(keyID: ExactName, keys: JWTKeyCollection)] = []
        var skipped = 0
        for (position, entry) in decoded.keys.enumerated() {
            guard let key = entry.key, entry.use != "enc", key.algorithm?.rawValue != "RSA-OAEP",
                let keyID = key.keyIdentifier?.string,
                !keyIDs.contains(ExactName(keyID))
            else {
                skipped += 1
                continue
            }
            guard key.privateExponent == nil else {
                throw CloudError(
                    .badRequest, reason: "key \(position + 1) of the key set is a private key; give public keys only")
            }
            try await check(key, position: position)
            let single = JWTKeyCollection()
            do {
                try await keys.add(jwk: key)
                try await single.add(jwk: key)
            } catch {
                throw CloudError(.badRequest, reason: "key \(position + 1) of the key set cannot be used: \(error)")
            }
            keyIDs.insert(ExactName(keyID))
            algorithms[ExactName(keyID)] = Self.algorithms(of: key)
            singleKeys.append((ExactName(keyID), single))
        }
        guard !keyIDs.isEmpty else {
            throw CloudError(
                .badRequest,
                reason: "the key set has no public key Cumulus can use (RSA, EC or OKP, with a \"kid\")")
        }
        return IdentityKeySet(
            keys: keys, keyIDs: keyIDs, algorithms: algorithms, singleKeys: singleKeys,
            digest: SHA256.hash(data: Data(document.utf8)), skipped: skipped)
    }

    /// The algorithms a token signed with `key` may name: the JWK's `alg`,
    /// or without one every algorithm of its type (RSA) or the one of its
    /// curve (EC, OKP).
    static func algorithms(of key: JWK) -> Set<String> {
        if let named = key.algorithm?.rawValue { return [named] }
        switch (key.keyType, key.curve?.rawValue) {
        case (.rsa, _): return ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
        case (.ecdsa, "P-256"): return ["ES256"]
        case (.ecdsa, "P-384"): return ["ES384"]
        case (.ecdsa, "P-521"): return ["ES512"]
        case (.octetKeyPair, _): return ["EdDSA"]
        default: return []
        }
    }

    /// Builds the key for the algorithm it names, or the usual one of its
    /// type when it names none, so that a key whose numbers are wrong is
    /// found when the set is read rather than when a token arrives.
    private static func check(_ key: JWK, position: Int) async throws {
        var probe = key
        if probe.algorithm == nil {
            switch (probe.keyType, probe.curve?.rawValue) {
            case (.rsa, _): probe.algorithm = .rs256
            case (.ecdsa, "P-384"): probe.algorithm = .es384
            case (.ecdsa, "P-521"): probe.algorithm = .es512
            case (.ecdsa, _): probe.algorithm = .es256
            default: probe.algorithm = .eddsa
            }
        }
        do {
            _ = try await JWTKeyCollection().add(jwk: probe).getKey(for: probe.keyIdentifier)
        } catch {
            throw CloudError(.badRequest, reason: "key \(position + 1) of the key set is not a valid public key")
        }
    }
}

/// A JWKS document whose keys are each decoded on their own, so that one
/// key of an unknown type does not make the whole set unreadable.
private struct DecodedKeySet: Decodable {
    struct Entry: Decodable {
        /// The key, or `nil` when jwt-kit does not know its type.
        let key: JWK?
        /// The key's `use`: `sig`, `enc`, or absent.
        let use: String?

        private enum CodingKeys: String, CodingKey { case use }

        init(from decoder: any Decoder) throws {
            key = try? JWK(from: decoder)
            use = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .use)
        }
    }

    let keys: [Entry]
}
