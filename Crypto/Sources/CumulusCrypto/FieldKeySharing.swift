import Crypto
import Cumulus
import Foundation

/// A user's key-agreement key (X25519): other users wrap the keys of the
/// zones they share with this user for its public half, and only its
/// private half unwraps them. Keep ``rawRepresentation`` in the keychain.
public struct FieldKeyAgreementKey: Sendable {
    let privateKey: Curve25519.KeyAgreement.PrivateKey

    /// A new random key pair.
    public init() {
        privateKey = Curve25519.KeyAgreement.PrivateKey()
    }

    /// The key pair whose private half is these 32 bytes.
    public init(rawRepresentation: [UInt8]) throws {
        privateKey = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation)
    }

    /// The private half, to store; never send it anywhere.
    public var rawRepresentation: [UInt8] { Array(privateKey.rawRepresentation) }

    /// The public half, to publish (``FieldKeySharing/publish(_:in:)``).
    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }
}

/// How the keys of an encrypted shared zone reach its participants without
/// the server ever holding one it can use.
///
/// 1. Each user publishes the public half of a ``FieldKeyAgreementKey`` in
///    the public database, as a record named by their user record name
///    that only they can change.
/// 2. The owner wraps the zone's field keys for each participant's public
///    key (X25519 with a fresh key each time, HKDF-SHA256, AES-256-GCM,
///    bound to the zone's name and the participant) and saves the wrapped
///    keys in a record of the shared zone.
/// 3. A participant reads that record through the shared database and
///    unwraps the keys with its private key.
///
/// The server stores public keys and wrapped keys only. It could still
/// hand the owner a public key of its own instead of a participant's, so
/// apps that must rule that out compare ``fingerprint(of:)`` out of band.
/// Removing a participant does not take back keys it already has: rotate
/// to a new key granted to those who remain.
public enum FieldKeySharing {
    /// The record type of a published public key, in the public database.
    public static let publicKeyRecordType = "CumulusFieldKeyAgreement"
    /// The record type of a zone's wrapped keys.
    public static let grantsRecordType = "CumulusFieldKeyGrants"
    /// The name of a zone's record of wrapped keys.
    public static let grantsRecordName = "cumulus-field-key-grants"

    static let publicKeyField = "publicKey"
    static let recipientsField = "recipients"
    static let grantsField = "grants"
    static let magic = Array("CUK1".utf8)

    /// Why a key could not be shared or received.
    public struct Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        /// What went wrong.
        public var message: String

        init(_ message: String) { self.message = message }

        /// What went wrong.
        public var description: String { "field key sharing: \(message)" }
    }

    // MARK: Publishing public keys

    /// Publishes `key`'s public half as the signed-in user's record in the
    /// public database (`publicDatabase`), replacing an earlier one.
    public static func publish(_ key: FieldKeyAgreementKey, in publicDatabase: any CloudDatabase) async throws {
        let user = try await publicDatabase.currentUser().userRecordName
        let record = Record(
            recordType: publicKeyRecordType, recordName: user, zoneID: .defaultZone,
            fields: [publicKeyField: .bytes(Data(key.publicKey))])
        let results = try await publicDatabase.modifyRecords(
            [RecordOperation(.forceReplace, record)], zoneID: .defaultZone, atomic: false)
        if case .failure(let error)? = results.first { throw error }
    }

    /// The public key that `user` published, or `nil` when there is none.
    public static func publishedKey(of user: String, in publicDatabase: any CloudDatabase) async throws -> [UInt8]? {
        let results = try await publicDatabase.lookupRecords([user], zoneID: .defaultZone, desiredKeys: nil)
        switch results.first {
        case .record(let record)?:
            guard record.recordType == publicKeyRecordType, case .bytes(let bytes)? = record[publicKeyField],
                bytes.count == 32
            else { throw Error("the public key record of '\(user)' is not one") }
            return Array(bytes)
        case .failure(let error)? where error.code == .notFound: return nil
        case .failure(let error)?: throw error
        case .deleted?, nil: return nil
        }
    }

    /// A short, stable spelling of a public key for people to compare.
    public static func fingerprint(of publicKey: [UInt8]) -> String {
        SHA256.hash(data: publicKey).prefix(10).map { String(format: "%02x", $0) }.joined()
    }

    // MARK: Granting and receiving zone keys

    /// Saves `keys` (the zone's current key first) wrapped for each
    /// participant in the record of wrapped keys of `zone`, through the
    /// owner's private database. Participants left out lose nothing they
    /// already unwrapped, and receive no key made later.
    ///
    /// - Parameter participants: each participant's user record name and
    ///   published public key.
    public static func grant(
        _ keys: [FieldKey], in zone: ZoneID, to participants: [(user: String, publicKey: [UInt8])],
        database: any CloudDatabase
    ) async throws {
        var recipients: [String] = []
        var grants: [Data] = []
        for participant in participants {
            for key in keys {
                recipients.append(participant.user)
                grants.append(Data(try wrap(key, for: participant.publicKey, zone: zone, recipient: participant.user)))
            }
        }
        let record = Record(
            recordType: grantsRecordType, recordName: grantsRecordName, zoneID: zone,
            fields: [recipientsField: .stringList(recipients), grantsField: .bytesList(grants)])
        let results = try await database.modifyRecords(
            [RecordOperation(.forceReplace, record)], zoneID: zone, atomic: false)
        if case .failure(let error)? = results.first { throw error }
    }

    /// The keys of the shared `zone` granted to the signed-in user, in the
    /// order they were granted (the current key first), read through the
    /// shared database and unwrapped with `key`. Empty when none were.
    public static func receive(
        in zone: ZoneID, with key: FieldKeyAgreementKey, database: any CloudDatabase
    ) async throws -> [FieldKey] {
        let user = try await database.currentUser().userRecordName
        let results = try await database.lookupRecords([grantsRecordName], zoneID: zone, desiredKeys: nil)
        guard case .record(let record)? = results.first else {
            if case .failure(let error)? = results.first, error.code != .notFound { throw error }
            return []
        }
        guard case .stringList(let recipients)? = record[recipientsField],
            case .bytesList(let grants)? = record[grantsField], recipients.count == grants.count
        else { throw Error("the record of wrapped keys in zone '\(zone.zoneName)' is not one") }
        return try zip(recipients, grants).compactMap { recipient, grant in
            // Names are compared as bytes: another spelling is another user.
            guard recipient.utf8.elementsEqual(user.utf8) else { return nil }
            return try unwrap(Array(grant), with: key, zone: zone, recipient: user)
        }
    }

    // MARK: Wrapping one key

    /// `key` sealed for the holder of `publicKey`: "CUK1", a fresh X25519
    /// public key, then AES-256-GCM (nonce, ciphertext, tag) of the key's
    /// identifier and bytes under a key derived from the agreement, with
    /// the zone's name and the recipient as associated data.
    public static func wrap(_ key: FieldKey, for publicKey: [UInt8], zone: ZoneID, recipient: String) throws
        -> [UInt8]
    {
        let identifier = Array(key.identifier.utf8)
        guard identifier.count <= 255, key.bytes.count == 32 else {
            throw Error("a field key needs 32 bytes and an identifier of at most 255 bytes")
        }
        let recipientKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey)
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let ephemeralPublic = Array(ephemeral.publicKey.rawRepresentation)
        let wrapping = try wrappingKey(
            ephemeral.sharedSecretFromKeyAgreement(with: recipientKey), ephemeralPublic: ephemeralPublic,
            recipientPublic: publicKey, zone: zone, recipient: recipient)
        let plaintext = [UInt8(identifier.count)] + identifier + key.bytes
        let box = try AES.GCM.seal(
            plaintext, using: wrapping, authenticating: context(zone: zone, recipient: recipient))
        guard let combined = box.combined else { throw Error("the cipher gave no combined form") }
        return magic + ephemeralPublic + Array(combined)
    }

    /// The key that ``wrap(_:for:zone:recipient:)`` sealed for `key`'s public half.
    ///
    /// - Throws: ``Error`` when the bytes are not a wrapped key, or were
    ///   wrapped for another key, zone or recipient.
    public static func unwrap(_ wrapped: [UInt8], with key: FieldKeyAgreementKey, zone: ZoneID, recipient: String)
        throws -> FieldKey
    {
        guard wrapped.count > magic.count + 32, wrapped.starts(with: magic) else {
            throw Error("not a wrapped field key")
        }
        let ephemeralPublic = Array(wrapped[magic.count..<magic.count + 32])
        let plaintext: [UInt8]
        do {
            let secret = try key.privateKey.sharedSecretFromKeyAgreement(
                with: Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeralPublic))
            let wrapping = wrappingKey(
                secret, ephemeralPublic: ephemeralPublic, recipientPublic: key.publicKey, zone: zone,
                recipient: recipient)
            let box = try AES.GCM.SealedBox(combined: wrapped[(magic.count + 32)...])
            plaintext = Array(
                try AES.GCM.open(box, using: wrapping, authenticating: context(zone: zone, recipient: recipient)))
        } catch {
            throw Error("the wrapped key does not open with this key for zone '\(zone.zoneName)': \(error)")
        }
        guard let length = plaintext.first.map(Int.init), plaintext.count == 1 + length + 32 else {
            throw Error("the wrapped key's contents are malformed")
        }
        return FieldKey(
            identifier: String(decoding: plaintext[1..<1 + length], as: UTF8.self),
            bytes: Array(plaintext[(1 + length)...]))
    }

    private static func wrappingKey(
        _ secret: SharedSecret, ephemeralPublic: [UInt8], recipientPublic: [UInt8], zone: ZoneID, recipient: String
    ) -> SymmetricKey {
        secret.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: ephemeralPublic + recipientPublic,
            sharedInfo: context(zone: zone, recipient: recipient), outputByteCount: 32)
    }

    /// What a wrapped key is bound to: the zone's name and the recipient,
    /// length-prefixed so that no two pairs spell the same bytes.
    private static func context(zone: ZoneID, recipient: String) -> [UInt8] {
        let label = Array("cumulus field key".utf8)
        let zoneName = Array(zone.zoneName.utf8)
        let user = Array(recipient.utf8)
        return label + lengthPrefix(zoneName.count) + zoneName + lengthPrefix(user.count) + user
    }

    private static func lengthPrefix(_ count: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(count).bigEndian) { Array($0) }
    }
}
