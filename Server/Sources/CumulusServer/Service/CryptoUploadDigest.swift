import Crypto
import CumulusServerCore

/// swift-crypto's SHA-256 (BoringSSL's, with the processor's SHA
/// instructions where it has them) for asset uploads: the core's own,
/// written without dependencies, was most of an upload's time.
struct CryptoUploadDigest: UploadDigest {
    private var hasher = SHA256()

    init() {}

    mutating func update(_ bytes: [UInt8]) { hasher.update(data: bytes) }

    mutating func finalize() -> [UInt8] { Array(hasher.finalize()) }
}
