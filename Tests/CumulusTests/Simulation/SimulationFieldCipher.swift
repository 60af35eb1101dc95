import CloudCodable
import Cumulus

/// A `FieldCipher` for the simulation only. NOT SECURE: never use it to
/// protect anything.
///
/// The root package has no cipher (it takes no dependencies), so the
/// simulated engines seal their encrypted fields with this one: a stream
/// cipher made of SHA-256 in counter mode and a SHA-256 tag. It is
/// authenticated enough for the tests (a wrong key, a changed byte or
/// other associated data throws on opening) but is no vetted construction.
///
/// `seal` returns the nonce (16 random bytes, fresh for every value), the
/// ciphertext (the plaintext XOR SHA-256(key ‖ nonce ‖ 4-byte block
/// counter), 32 bytes a block), and the tag, SHA-256(key ‖ nonce ‖ length
/// of the associated data ‖ associated data ‖ ciphertext).
struct SimulationFieldCipher: FieldCipher {
    static let nonceCount = 16
    static let tagCount = 32

    /// Why a value does not open.
    struct OpenFailure: Error, CustomStringConvertible {
        var description: String
    }

    func seal(_ plaintext: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8] {
        // A random nonce: the engines of a history share keys, so a counter
        // of one engine would repeat another's.
        var generator = SystemRandomNumberGenerator()
        let nonce = (0..<Self.nonceCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let ciphertext = Self.xor(plaintext, key: key, nonce: nonce)
        return nonce + ciphertext + Self.tag(key: key, nonce: nonce, associatedData, ciphertext)
    }

    func open(_ sealed: [UInt8], key: [UInt8], authenticating associatedData: [UInt8]) throws -> [UInt8] {
        guard sealed.count >= Self.nonceCount + Self.tagCount else {
            throw OpenFailure(description: "a sealed value of \(sealed.count) bytes is cut short")
        }
        let nonce = Array(sealed.prefix(Self.nonceCount))
        let ciphertext = Array(sealed.dropFirst(Self.nonceCount).dropLast(Self.tagCount))
        let tag = Self.tag(key: key, nonce: nonce, associatedData, ciphertext)
        // Every byte is compared, as a real cipher would, though timing does not matter here.
        let difference = zip(tag, sealed.suffix(Self.tagCount)).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) }
        guard difference == 0 else {
            throw OpenFailure(description: "the tag does not match: another key, associated data or bytes")
        }
        return Self.xor(ciphertext, key: key, nonce: nonce)
    }

    /// `bytes` XOR the keystream of `key` and `nonce`: sealing and opening alike.
    private static func xor(_ bytes: [UInt8], key: [UInt8], nonce: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        // A 4-byte counter keeps each block's input to one SHA-256 block (52 bytes).
        var block: UInt32 = 0
        var start = 0
        while start < bytes.count {
            let stream = SHA256.hash(key + nonce + bigEndian(UInt64(block), count: 4))
            for (offset, byte) in bytes[start..<min(start + stream.count, bytes.count)].enumerated() {
                result.append(byte ^ stream[offset])
            }
            start += stream.count
            block += 1
        }
        return result
    }

    private static func tag(key: [UInt8], nonce: [UInt8], _ associatedData: [UInt8], _ ciphertext: [UInt8])
        -> [UInt8]
    {
        // The length keeps the associated data and the ciphertext apart.
        SHA256.hash(key + nonce + bigEndian(UInt64(associatedData.count)) + associatedData + ciphertext)
    }

    /// The last `count` bytes of `value`, most significant first.
    private static func bigEndian(_ value: UInt64, count: Int = 8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) }
    }
}
