import CloudCodable

/// One record field an asset is about to be uploaded for: an entry of an
/// `assets/upload` request.
///
/// The server checks that the caller may save that record (as a save of it
/// would be checked) and answers an ``AssetUploadTarget`` for it.
public struct AssetUploadRequest: Sendable, Hashable {
    /// The record the asset will belong to; `nil` lets the server pick a
    /// name, which the target then carries.
    public var recordName: String?
    /// The record's type.
    public var recordType: String
    /// The `ASSETID` or `ASSETID_LIST` field the asset will be saved in.
    public var fieldName: String

    /// Creates a request for one field.
    public init(recordName: String?, recordType: String, fieldName: String) {
        self.recordName = recordName
        self.recordType = recordType
        self.fieldName = fieldName
    }
}

/// Where to send the bytes of one asset: an entry of the `assets/upload`
/// answer, for ``CloudDatabase/uploadAsset(contentsOf:to:)``.
///
/// The URL is the upload's credential: it expires, and its bytes can only
/// be saved in the record and field it was asked for, by the user who asked.
public struct AssetUploadTarget: Sendable, Hashable {
    /// The record the asset belongs to (the server's pick when none was asked).
    public var recordName: String
    /// The field the asset belongs to.
    public var fieldName: String
    /// Where the bytes are POSTed: absolute, or a path on the database's
    /// server when it starts with `/`.
    public var url: String

    /// Creates a target.
    public init(recordName: String, fieldName: String, url: String) {
        self.recordName = recordName
        self.fieldName = fieldName
        self.url = url
    }
}
