import CloudCodable

/// The outcome of one share in `records/resolve` or `records/accept`.
public enum ShareResult: Sendable, Hashable {
    /// The share as the caller may see it.
    case share(ShareMetadata)
    /// This share failed.
    case failure(shortGUID: String, CloudError)
}
