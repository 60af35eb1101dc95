import CloudCodable
import Cumulus
import Foundation

/// The keys of a history's encrypted fields.
///
/// An app that rotates keys hands every device the new key before any
/// device writes with it (a synced keychain), so that every device keeps
/// reading every value. The simulation does the same: every device reads
/// with all the history's keys from the start, and rotating moves one
/// device's current key (the one it writes with) to the next.
struct SimulationKeys {
    /// The keys, oldest first; fixed by the seed, without drawing from the history's generator.
    let all: [FieldKey]
    /// The field every version of the simulated model encrypts.
    static let encryptedField = SimField.title
    /// How every sealed value starts (the engine's envelope).
    static let magic = Data("CUE1".utf8)

    /// What the checks read the server with: every key.
    let reader: FieldEncryption

    /// The cipher of every device and of the checks.
    let cipher: any FieldCipher

    /// The keys of the history of `seed`; another `cipher` stands for a broken one.
    init(seed: UInt64, cipher: any FieldCipher = SimulationFieldCipher()) {
        all = (1...3).map { number in
            FieldKey(identifier: "k\(number)", bytes: SHA256.hash(Array("simulation key \(seed) \(number)".utf8)))
        }
        self.cipher = cipher
        reader = FieldEncryption(
            cipher: cipher, keys: StaticFieldKeys(current: all[0], previous: Array(all.dropFirst())))
    }

    /// The encryption of a device whose current key is `all[current]`.
    func encryption(current: Int) -> FieldEncryption {
        let previous = all.enumerated().filter { $0.offset != current }.map(\.element)
        return FieldEncryption(cipher: cipher, keys: StaticFieldKeys(current: all[current], previous: previous))
    }

    /// The identifier of the key that sealed `envelope`: after the magic,
    /// one byte of length and the identifier's UTF-8.
    static func keyIdentifier(of envelope: Data) -> String? {
        let bytes = Array(envelope)
        guard bytes.count > magic.count, bytes.count > magic.count + Int(bytes[magic.count]) else { return nil }
        let start = magic.count + 1
        return String(decoding: bytes[start..<(start + Int(bytes[magic.count]))], as: UTF8.self)
    }
}

/// A sealed value of one record, as the checks cache what it opens to.
struct SealedValue: Hashable {
    var recordName: String
    var sealed: Data
}
