import CloudCodable

/// The SHA-256 an asset upload's bytes pass through as they arrive, which
/// becomes the asset's `fileChecksum`.
///
/// The core's own (``CoreUploadDigest``) needs no dependency; a server
/// passes a faster one (for example swift-crypto's) to the record service.
public protocol UploadDigest {
    /// A digest of the empty message.
    init()
    /// Adds `bytes` to the message.
    mutating func update(_ bytes: [UInt8])
    /// The 32 bytes of the digest of everything added.
    mutating func finalize() -> [UInt8]
}

/// The core's own SHA-256 as an ``UploadDigest``.
public struct CoreUploadDigest: UploadDigest {
    private var hasher = SHA256()

    /// A digest of the empty message.
    public init() {}

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: [UInt8]) { hasher.update(bytes) }

    /// The 32 bytes of the digest.
    public mutating func finalize() -> [UInt8] { hasher.finalize() }
}
