import CloudCodable
import CloudProtocol
import Foundation

extension RecordService {
    /// `assets/upload`: an upload URL for each record field, checked as a
    /// save of the record would be: the caller's own records in the private
    /// database, a `READ_WRITE` share's in the shared database (a new
    /// record needs the caller to hold some `READ_WRITE` share of the zone;
    /// its save then checks its parent), and in the public database any
    /// record the caller may change. A missing record name gets one.
    func requestAssetUploads(_ requests: [AssetUploadRequest], zoneID: ZoneID, context: RequestContext)
        async throws -> [AssetUploadTarget]
    {
        try ServerLimits.checkItemCount(requests.count, of: "tokens")
        guard !requests.isEmpty else { return [] }
        let schema = try await schema(
            SchemaKey(container: context.key.container, environment: context.key.environment))
        for request in requests {
            if let refusal = AssetRules.fieldRefusal(request, schema: schema, environment: context.key.environment) {
                throw CloudError(.badRequest, reason: refusal, recordName: request.recordName, zoneID: zoneID)
            }
        }
        let expires = ServerTime.adding(assetSettings.uploadLifetime, to: ServerTime.milliseconds(now()))
        let base = absoluteURL("")
        return try await storage.write { transaction in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: true, transaction)
            else { throw ServerLimits.zoneNotFound(zoneID, recordName: nil) }
            // Uploads through a share count toward the owner's storage, as its saves do.
            if let quotaUser = context.key.scope == .shared ? access.key.owner : context.user,
                try await transaction.isQuotaExceeded(
                    user: quotaUser, container: context.key.container, environment: context.key.environment)
            {
                throw CloudError(.quotaExceeded, reason: "the user's storage is full", zoneID: zoneID)
            }
            var rows: [ExactName: StoredRecord] = [:]
            let names = requests.compactMap(\.recordName)
            for row in try await transaction.records(named: names, inZone: access.zone.id) {
                rows[ExactName(row.name)] = row
            }
            var targets: [AssetUploadTarget] = []
            for request in requests {
                let name = request.recordName ?? UUID().uuidString
                let row = rows[ExactName(name)]
                func refuse(_ code: CloudError.Code, _ reason: String) -> CloudError {
                    CloudError(code, reason: reason, recordName: name, zoneID: zoneID)
                }
                if let refusal = WritePermissions.refusal(
                    row, recordType: request.recordType, isDelete: false, access: access, context: context)
                {
                    throw refuse(.accessDenied, refusal)
                }
                if row?.record == nil, let participant = access.view.participant, !access.view.canWriteSomewhere {
                    throw refuse(.accessDenied, "\(participant) may only read this zone's shares")
                }
                if let existing = row?.record, !existing.recordType.isExactly(request.recordType) {
                    throw refuse(
                        .badRequest, "a record of type \(existing.recordType) cannot become a \(request.recordType)")
                }
                let ticket = StoredUploadTicket(
                    id: AssetRules.makeID(), key: access.key, zone: access.zone.id, recordName: name,
                    recordType: request.recordType, fieldName: request.fieldName, user: context.user ?? "",
                    expires: expires)
                try await transaction.createUploadTicket(ticket)
                targets.append(
                    AssetUploadTarget(
                        recordName: name, fieldName: request.fieldName, url: "\(base)/assets/1/upload/\(ticket.id)"))
            }
            return targets
        }
    }

    /// Receives the bytes of an upload URL (`POST <publicURL>/assets/1/upload/<ticket>`)
    /// and answers the asset to save: `{fileChecksum, size, receipt}`,
    /// which `Asset.singleFileBody()` writes as the answer's body.
    ///
    /// The URL is the credential: the ticket says who asked, for which
    /// record field, until when. Each upload to it makes a new asset and
    /// receipt (an upload whose answer was lost can be sent again). The
    /// asset's row is written before its bytes and completed after them,
    /// so that bytes never exist without a row.
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
        let started = ServerTime.milliseconds(now())
        let found = try await storage.read { transaction in try await transaction.uploadTicket(id: ticket) }
        guard let found else { throw CloudError(.notFound, reason: "no upload URL has this ticket") }
        guard found.expires > started else {
            throw CloudError(.expired, reason: "the upload URL has expired; ask assets/upload for another")
        }
        let limit = assetSettings.sizeLimit
        if let contentLength {
            guard contentLength >= 0 else {
                throw CloudError(.badRequest, reason: "the Content-Length \(contentLength) is not a length")
            }
            guard contentLength <= limit else { throw Self.tooLarge(contentLength, limit: limit) }
        }
        var row = StoredAsset(
            id: AssetRules.makeID(), zone: found.zone, recordName: found.recordName, fieldName: found.fieldName,
            user: found.user, size: nil, checksum: nil, created: started, unheldSince: started)
        let pending = row
        try await storage.write { transaction in try await transaction.saveAsset(pending) }
        let meter = ChunkMeter(limit: limit, digest: uploadDigest())
        do {
            try await storage.assetBytes.write(MeteredChunks(base: chunks, meter: meter), as: row.id)
            if let contentLength, contentLength != meter.count {
                throw CloudError(
                    .badRequest,
                    reason: "the body has \(meter.count) bytes where Content-Length announced \(contentLength)")
            }
            let completed = ServerTime.milliseconds(now())
            row.size = meter.count
            row.checksum = Data(meter.digest()).base64EncodedString()
            row.unheldSince = completed
            let receipt = StoredAssetReceipt(
                id: AssetRules.makeID(), asset: row.id, zone: found.zone, recordName: found.recordName,
                fieldName: found.fieldName, user: found.user,
                expires: ServerTime.adding(assetSettings.gracePeriod, to: completed))
            let finished = row
            try await storage.write { transaction in
                try await transaction.saveAsset(finished)
                try await transaction.createAssetReceipt(receipt)
            }
            return Asset(fileChecksum: row.checksum, size: row.size, receipt: receipt.id)
        } catch {
            // What is left is removed now, or by the collector.
            let id = row.id
            try? await storage.assetBytes.delete([id])
            try? await storage.write { transaction in try await transaction.deleteAssets(ids: [id]) }
            throw error
        }
    }

    /// Opens the bytes of a download URL (`GET <publicURL>/assets/1/download/<token>/<name>`):
    /// the whole asset, or `range` (from the request's `Range` header,
    /// which must lie inside the asset and hold a byte).
    ///
    /// The URL is the credential: its token is signed by the server.
    ///
    /// - Throws: ``CloudError``: `ACCESS_DENIED` (403) for a token the
    ///   server did not sign, `EXPIRED` (410) for an expired one,
    ///   `NOT_FOUND` (404) for an asset collected since, and
    ///   `RANGE_NOT_SATISFIABLE` (416) for a range not inside the asset.
    public func openAssetDownload(token: String, range: Range<Int64>?) async throws -> AssetDownload {
        try await openAssetDownload(token: token) { _ in range }
    }

    /// Opens the bytes of a download URL once, with the range chosen when
    /// the asset's size is known: an HTTP `Range` header is read against
    /// the size, and a second open for the part would cost another read.
    ///
    /// - Parameter choosingRange: Given the asset's size, the range to read
    ///   (`nil` for all of it); it may throw to refuse the download.
    /// - Throws: What ``openAssetDownload(token:range:)`` throws, and what
    ///   `choosingRange` throws.
    public func openAssetDownload(token: String, choosingRange: (_ assetSize: Int64) throws -> Range<Int64>?)
        async throws -> AssetDownload
    {
        let secret = try await signingSecret()
        guard let (id, expires) = AssetToken.verify(token, secret: secret) else {
            throw CloudError(.accessDenied, reason: "the download URL was not signed by this server")
        }
        guard expires > ServerTime.milliseconds(now()) else {
            throw CloudError(.expired, reason: "the download URL has expired; fetch the record again for another")
        }
        let asset = try await storage.read { transaction in try await transaction.assets(ids: [id]).first }
        guard let asset, let size = asset.size else {
            throw CloudError(.notFound, reason: "the asset no longer exists")
        }
        let range = try choosingRange(size)
        let bytes = range ?? 0..<size
        if range != nil {
            guard bytes.lowerBound >= 0, bytes.lowerBound < bytes.upperBound, bytes.upperBound <= size else {
                throw CloudError(
                    .rangeNotSatisfiable,
                    reason:
                        "the range \(bytes.lowerBound)..<\(bytes.upperBound) is not inside the asset's \(size) bytes")
            }
        }
        return try await storage.assetBytes.read(id, range: bytes, assetSize: size)
    }

    /// Deletes what no one can use any more: assets no live record has held
    /// for longer than ``AssetSettings/gracePeriod`` (never-saved uploads
    /// count from their upload), expired upload tickets and receipts, and
    /// stored bytes without an asset row (a failed upload's debris).
    /// A host runs it now and then; the in-memory server on demand.
    @discardableResult
    public func collectAssets() async throws -> AssetCollection {
        let now = ServerTime.milliseconds(now())
        let cutoff = ServerTime.adding(.zero - assetSettings.gracePeriod, to: now)
        var collection = AssetCollection()
        let batch = 500
        while true {
            let ids = try await storage.write { transaction in
                let ids = try await transaction.unheldAssets(since: cutoff, limit: batch)
                if !ids.isEmpty { try await transaction.deleteAssets(ids: ids) }
                return ids
            }
            // A crash here leaves bytes without rows: the sweep below removes them.
            if !ids.isEmpty { try await storage.assetBytes.delete(ids) }
            collection.deletedAssets += ids
            if ids.count < batch { break }
        }
        try await storage.write { transaction in try await transaction.deleteExpiredUploads(at: now) }
        // Rows are written before bytes, so bytes listed now without a row
        // read afterwards belong to no upload.
        let stored = try await storage.assetBytes.storedIDs()
        if !stored.isEmpty {
            let rows = try await storage.read { transaction in try await transaction.assets(ids: stored) }
            let known = Set(rows.map { ExactName($0.id) })
            let debris = stored.filter { !known.contains(ExactName($0)) }
            if !debris.isEmpty { try await storage.assetBytes.delete(debris) }
            collection.deletedDebris = debris
        }
        return collection
    }

    /// The answer with a signed download URL in every asset value of its
    /// records; the secret is read only for answers that hold assets.
    func presentingAssets(_ answer: ServiceAnswer) async throws -> ServiceAnswer {
        guard answer.containsRecord(where: AssetRules.hasAssets, encoded: AssetRules.mayHoldAssets) else {
            return answer
        }
        let presenter = AssetPresenter(
            secret: try await signingSecret(),
            expires: ServerTime.adding(assetSettings.downloadLifetime, to: ServerTime.milliseconds(now())),
            base: absoluteURL(""))
        return try answer.mappingRecords(decoding: AssetRules.mayHoldAssets, presenter.present)
    }

    /// The storage's secret of download URLs, made on first use.
    func signingSecret() async throws -> [UInt8] {
        if let secret = assetSecret.withLock({ $0 }) { return secret }
        let proposed = ServerSecrets.randomBytes(32)
        let secret = try await storage.write { transaction in
            try await transaction.assetSigningSecret(proposing: proposed)
        }
        assetSecret.withLock { $0 = secret }
        return secret
    }

    static func tooLarge(_ size: Int64, limit: Int64) -> CloudError {
        CloudError(.limitExceeded, reason: "the asset has \(size) bytes or more, over the limit of \(limit) bytes")
    }
}

/// Counts and hashes the bytes of an upload as they pass.
final class ChunkMeter {
    let limit: Int64
    private(set) var count: Int64 = 0
    private var hasher: any UploadDigest

    init(limit: Int64, digest: any UploadDigest) {
        self.limit = limit
        hasher = digest
    }

    func add(_ chunk: [UInt8]) throws {
        count += Int64(chunk.count)
        guard count <= limit else { throw RecordService.tooLarge(count, limit: limit) }
        hasher.update(chunk)
    }

    func digest() -> [UInt8] { hasher.finalize() }
}

/// An upload's body, counted and hashed by a meter that stops it (by
/// throwing) once it grows over the limit.
struct MeteredChunks<Base: AsyncSequence>: AsyncSequence where Base.Element == [UInt8] {
    typealias Element = [UInt8]
    let base: Base
    let meter: ChunkMeter

    func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), meter: meter) }

    struct Iterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let meter: ChunkMeter

        mutating func next() async throws -> [UInt8]? {
            guard let chunk = try await base.next() else { return nil }
            try meter.add(chunk)
            return chunk
        }
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
