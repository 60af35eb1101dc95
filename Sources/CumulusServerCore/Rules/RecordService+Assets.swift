import CloudCodable
import Cumulus
import Foundation

extension RecordService {
    /// `assets/upload`: an upload URL for each record field, checked as a
    /// save of the record would be.
    func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID, context: RequestContext)
        async throws -> [AssetUploadTarget]
    {
        throw CloudError(.unsupported, reason: "assets are not yet served")
    }

    /// Receives the bytes of an upload URL (`POST <publicURL>/assets/1/upload/<ticket>`)
    /// and answers the asset to save: `{fileChecksum, size, receipt}`,
    /// which ``Cumulus/Asset/singleFileBody()`` writes as the answer's body.
    ///
    /// The URL is the credential: the ticket says who asked, for which
    /// record field, until when.
    ///
    /// - Parameters:
    ///   - ticket: The last component of the upload URL's path.
    ///   - contentLength: The request's `Content-Length`, if it has one: a
    ///     length over the limit is refused before anything is read.
    ///   - chunks: The request's body.
    /// - Throws: ``CloudError``: `NOT_FOUND` (404) for an unknown ticket,
    ///   `EXPIRED` (410) for an expired one, `LIMIT_EXCEEDED` (413) for an
    ///   asset over ``AssetSettings/sizeLimit`` (noticed while the bytes
    ///   arrive, or from `contentLength`), `BAD_REQUEST` for a
    ///   `contentLength` the body does not match; what `chunks` throws
    ///   passes through.
    public func receiveAsset<Chunks: AsyncSequence>(ticket: String, contentLength: Int64?, chunks: Chunks)
        async throws -> Asset where Chunks.Element == [UInt8]
    {
        throw CloudError(.unsupported, reason: "assets are not yet served")
    }

    /// Opens the bytes of a download URL (`GET <publicURL>/assets/1/download/<token>/<name>`):
    /// the whole asset, or `range` (from the request's `Range` header).
    ///
    /// The URL is the credential: its token is signed by the server.
    ///
    /// - Throws: ``CloudError``: `ACCESS_DENIED` (403) for a token the
    ///   server did not sign, `EXPIRED` (410) for an expired one,
    ///   `NOT_FOUND` (404) for an asset collected since, and
    ///   `RANGE_NOT_SATISFIABLE` (416) for a range not inside the asset.
    public func openAssetDownload(token: String, range: Range<Int64>?) async throws -> AssetDownload {
        throw CloudError(.unsupported, reason: "assets are not yet served")
    }

    /// Deletes what no one can use any more: assets no live record has held
    /// for longer than ``AssetSettings/gracePeriod`` (never-saved uploads
    /// count from their upload), expired upload tickets and receipts, and
    /// stored bytes without an asset row (a failed upload's debris).
    /// A host runs it now and then; the in-memory server on demand.
    @discardableResult
    public func collectAssets() async throws -> AssetCollection {
        throw CloudError(.unsupported, reason: "assets are not yet served")
    }
}

/// What ``RecordService/collectAssets()`` deleted.
public struct AssetCollection: Sendable, Hashable {
    /// The ids of the assets deleted, rows and bytes.
    public var deletedAssets: [String]
    /// The ids of the bytes deleted that had no row.
    public var deletedDebris: [String]

    /// Creates a report.
    public init(deletedAssets: [String] = [], deletedDebris: [String] = []) {
        self.deletedAssets = deletedAssets
        self.deletedDebris = deletedDebris
    }
}

extension Asset {
    /// The upload URL's answer body, `{"singleFile":{"fileChecksum":…,"size":…,"receipt":…}}`.
    public func singleFileBody() -> [UInt8] {
        var writer = JSONWriter(capacity: 160)
        writer.appendSingleFile(self)
        return writer.bytes
    }
}
