/// A file stored beside a record: the `ASSETID` field type.
///
/// The value is the dictionary the server answers after an upload
/// (`{fileChecksum, size, receipt, …}`); a fetched asset also carries a
/// `downloadURL`.
public struct Asset: Sendable, Hashable, Codable {
    /// The checksum of the file's contents.
    public var fileChecksum: String?
    /// The file's size in bytes.
    public var size: Int64?
    /// The checksum of the file's reference, when the server gives one.
    public var referenceChecksum: String?
    /// The key that wraps the file's encryption key, when the server gives one.
    public var wrappingKey: String?
    /// The receipt of the upload, which the server asks for when the record is saved.
    public var receipt: String?
    /// Where the file can be downloaded, on records the server returns.
    public var downloadURL: String?

    /// Creates an asset value.
    public init(
        fileChecksum: String? = nil, size: Int64? = nil, referenceChecksum: String? = nil,
        wrappingKey: String? = nil, receipt: String? = nil, downloadURL: String? = nil
    ) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.referenceChecksum = referenceChecksum
        self.wrappingKey = wrappingKey
        self.receipt = receipt
        self.downloadURL = downloadURL
    }
}
