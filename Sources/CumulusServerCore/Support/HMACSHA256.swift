import CloudCodable
import CloudProtocol

/// HMAC-SHA256 (RFC 2104), on the SHA-256 the root package carries: the
/// signature of asset download URLs.
enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    static func code(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        var inner = SHA256()
        inner.update(block.map { $0 ^ 0x36 })
        inner.update(message)
        let innerDigest = inner.finalize()
        var outer = SHA256()
        outer.update(block.map { $0 ^ 0x5c })
        outer.update(innerDigest)
        return outer.finalize()
    }

    /// Whether two codes are equal, in a time that does not depend on where they differ.
    static func isEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
