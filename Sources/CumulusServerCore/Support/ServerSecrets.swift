import CloudCodable
import CloudProtocol

/// How the server makes and keeps its secrets, written once for the core
/// and the record server: tokens and channel handles are random bytes as
/// lowercase hexadecimal, stores keep their SHA-256 (never the token), and
/// secrets are compared in constant time.
public enum ServerSecrets {
    /// `count` random bytes from the system's CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<max(0, count)).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// `count` random bytes from the system's CSPRNG, as lowercase hexadecimal.
    public static func randomHex(bytes count: Int) -> String {
        hex(randomBytes(count))
    }

    /// The SHA-256 of `text`'s UTF-8, as lowercase hexadecimal: what a store
    /// keeps of a token.
    public static func sha256Hex(_ text: String) -> String {
        sha256Hex(bytes: Array(text.utf8))
    }

    /// The SHA-256 of `bytes`, as lowercase hexadecimal.
    public static func sha256Hex(bytes: [UInt8]) -> String {
        hex(SHA256.hash(bytes))
    }

    /// Whether the two hold the same bytes, taking as long whichever bytes
    /// differ (only the lengths are compared first).
    public static func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }

    /// `bytes` as lowercase hexadecimal, two digits a byte.
    public static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
