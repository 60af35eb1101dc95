import CloudCodable
import CloudProtocol
import Foundation

/// Authenticated encryption for a model's encrypted fields
/// (``CloudCodable/cloudEncryptedFields``).
///
/// Cumulus has no cipher of its own: `CumulusCrypto` (the package in
/// `Crypto/` of this repository) has `AESGCMFieldCipher`, built on
/// swift-crypto (CryptoKit on Apple's platforms).
public protocol FieldCipher: Sendable {
    /// Encrypts `plaintext` with the 32-byte `key`, authenticating
    /// `associatedData`; returns everything ``open(_:key:authenticating:)``
    /// needs besides the key (nonce, ciphertext and tag).
    func seal(_ plaintext: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8]

    /// Decrypts what ``seal(_:key:authenticating:)`` made.
    ///
    /// - Throws: when the key is wrong, or the bytes or the associated data
    ///   were changed.
    func open(_ sealed: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8]
}

/// A key of encrypted fields: 32 bytes and the identifier that every
/// ciphertext made with it names.
public struct FieldKey: Sendable, Hashable {
    /// Names the key in every ciphertext made with it; at most 255 bytes of UTF-8.
    public var identifier: String
    /// The key's 32 bytes.
    public var bytes: [UInt8]

    /// Creates a key.
    public init(identifier: String, bytes: [UInt8]) {
        self.identifier = identifier
        self.bytes = bytes
    }
}

/// The app's keys of encrypted fields, by zone. Keys belong to the app: the
/// server never holds one.
///
/// New writes use ``currentKey(for:)``; a ciphertext names the key it was
/// made with, so a key can be replaced (rotated) while the old one still
/// reads what it wrote.
public protocol FieldKeyProvider: Sendable {
    /// The key new writes of encrypted fields in `zone` use.
    func currentKey(for zone: ZoneID) throws -> FieldKey

    /// The key named `identifier` for `zone`, or `nil` when this device does
    /// not have it.
    func key(identifier: String, for zone: ZoneID) throws -> FieldKey?
}

/// Keys held in memory: a current key for writes and every key that reads,
/// the same for every zone. Apps keep keys in their keychain; this type
/// suits tests and apps that load their keys at launch.
public struct StaticFieldKeys: FieldKeyProvider {
    /// The key new writes use.
    public var current: FieldKey
    /// Older keys that still read what they wrote.
    public var previous: [FieldKey]

    /// Keys with `current` for writes and `previous` for reading older values.
    public init(current: FieldKey, previous: [FieldKey] = []) {
        self.current = current
        self.previous = previous
    }

    /// ``current``, whatever the zone.
    public func currentKey(for zone: ZoneID) throws -> FieldKey { current }

    /// The key of that identifier among ``current`` and ``previous``.
    public func key(identifier: String, for zone: ZoneID) throws -> FieldKey? {
        ([current] + previous).first { $0.identifier.utf8.elementsEqual(identifier.utf8) }
    }
}

/// What an engine needs to encrypt a model's encrypted fields: a cipher and
/// the app's keys (``SyncConfiguration/fieldEncryption``).
public struct FieldEncryption: Sendable {
    /// The authenticated cipher.
    public var cipher: any FieldCipher
    /// The app's keys.
    public var keys: any FieldKeyProvider

    /// Encryption with `cipher` and `keys`.
    public init(cipher: any FieldCipher, keys: any FieldKeyProvider) {
        self.cipher = cipher
        self.keys = keys
    }
}

/// Why an encrypted field could not be written or read.
public struct FieldEncryptionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The name of the code.
        public var description: String { name }

        /// The model declares encrypted fields and the engine has no
        /// ``SyncConfiguration/fieldEncryption``.
        public static let notConfigured = Code("notConfigured")
        /// This device does not have the key a value was encrypted with; the
        /// record is kept as the server has it and read again once the key
        /// is there.
        public static let keyUnavailable = Code("keyUnavailable")
        /// A value does not open with its key: the wrong key under its
        /// identifier, or bytes changed since they were sealed.
        public static let cannotOpen = Code("cannotOpen")
        /// A value that cannot be encrypted: an asset or a reference, which
        /// the server must read (assets' bytes and references' targets), or a
        /// key that is not 32 bytes.
        public static let cannotSeal = Code("cannotSeal")
        /// A query or a query subscription names an encrypted field, which the
        /// server cannot compare; it was not sent.
        public static let encryptedFieldInQuery = Code("encryptedFieldInQuery")
    }

    /// The kind of failure.
    public var code: Code
    /// The field concerned.
    public var field: String
    /// What went wrong.
    public var message: String

    init(_ code: Code, field: String, _ message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// The code, the field and what went wrong.
    public var description: String { "field encryption \(code) (field '\(field)'): \(message)" }
}

extension FieldEncryption {
    /// `record` with the values of `fields` sealed with its zone's current
    /// key, as a sync engine sends it (values still sealed stay as they are).
    ///
    /// - Throws: ``FieldEncryptionError`` (`cannotSeal`) for an asset or a
    ///   reference in one of `fields`, or what the key provider or the
    ///   cipher throws.
    public func seal(_ record: Record, fields: Set<String>) throws -> Record {
        try EncryptedFields(recordType: record.recordType, names: fields, encryption: self).seal(record)
    }

    /// `record` with the sealed values of `fields` opened.
    ///
    /// - Throws: ``FieldEncryptionError`` (`keyUnavailable`, `cannotOpen`)
    ///   for the first value that does not open.
    public func open(_ record: Record, fields: Set<String>) throws -> Record {
        try EncryptedFields(recordType: record.recordType, names: fields, encryption: self).openedOrThrow(record)
    }
}
