import Crypto
import Cumulus
import Foundation

/// AES-256-GCM for encrypted fields, from swift-crypto (CryptoKit on
/// Apple's platforms): a random 12-byte nonce each time, the 16-byte tag
/// authenticating the ciphertext and the associated data.
///
/// ```swift
/// let keys = StaticFieldKeys(current: AESGCMFieldCipher.makeKey(identifier: "2026-11"))
/// var configuration = SyncConfiguration()
/// configuration.fieldEncryption = FieldEncryption(cipher: AESGCMFieldCipher(), keys: keys)
/// ```
public struct AESGCMFieldCipher: FieldCipher {
    /// The cipher.
    public init() {}

    /// The nonce, the ciphertext and the tag, in that order.
    public func seal(_ plaintext: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), authenticating: associatedData)
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return Array(combined)
    }

    /// The plaintext of what ``seal(_:key:authenticating:)`` made.
    ///
    /// - Throws: `CryptoKitError` when the key, the bytes or the associated
    ///   data are not those it was sealed with.
    public func open(_ sealed: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.SealedBox(combined: sealed)
        return Array(try AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: associatedData))
    }

    /// A new random 256-bit key named `identifier`, from the system's
    /// secure random generator.
    public static func makeKey(identifier: String) -> FieldKey {
        FieldKey(identifier: identifier, bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }
}
