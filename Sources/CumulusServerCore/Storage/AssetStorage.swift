import CloudCodable
import CloudProtocol

/// Where a server keeps the bytes of assets: files under the data
/// directory beside SQLite, chunks in PostgreSQL, or memory.
///
/// The store keeps bytes under ids the record service picks and knows
/// nothing of records, users or limits: the service counts and hashes the
/// bytes as they pass, refuses too many, and keeps the asset's row (a
/// ``StoredAsset``) in the storage's transactions. The row is written before
/// the bytes, so bytes without a row are debris of a failed upload, which
/// ``RecordService/collectAssets()`` removes.
public protocol AssetByteStore: Sendable {
    /// Stores the bytes `chunks` yields under `id`, and returns once they
    /// are durable (for files: written to a temporary file, synced, renamed).
    ///
    /// When iterating `chunks` throws (the service stops an asset that grows
    /// over its limit that way, and a client may go away), the store keeps
    /// nothing of it and rethrows that error.
    ///
    /// `chunks` need not be `Sendable` (a request body rarely is): read it
    /// in the calling task, from a nonisolated method (a struct or final
    /// class, not an actor's isolated method).
    func write<Chunks: AsyncSequence>(_ chunks: Chunks, as id: String) async throws where Chunks.Element == [UInt8]

    /// The bytes `range` of the asset stored under `id`, as a stream of
    /// chunks; the service checks the range against the asset's size first.
    ///
    /// - Throws: ``CloudError`` (`NOT_FOUND`) when nothing is stored under `id`.
    func read(_ id: String, range: Range<Int64>, assetSize: Int64) async throws -> AssetDownload

    /// Deletes what is stored under each id; an id with nothing stored is no error.
    func delete(_ ids: [String]) async throws

    /// Every id something is stored under, for the sweep of bytes whose row is gone.
    func storedIDs() async throws -> [String]
}

/// An asset's row: what it is, which record field it was uploaded for, and
/// whether a record holds it.
///
/// An asset belongs to the one record field its upload was asked for: only
/// that field of that record can hold it, so the bytes are never shared.
public struct StoredAsset: Sendable, Hashable {
    /// The asset's id, also the id of its bytes in the ``AssetByteStore``.
    public var id: String
    /// The storage's identifier of the zone of the record (a zone's row id,
    /// as ``StoredZone/id``): deleting the zone releases its assets.
    public var zone: Int64
    /// The record the asset was uploaded for.
    public var recordName: String
    /// The field the asset was uploaded for.
    public var fieldName: String
    /// Who uploaded it; empty for a server-to-server key.
    public var user: String
    /// The size in bytes, or `nil` while the bytes are arriving.
    public var size: Int64?
    /// The base64 SHA-256 of the bytes, or `nil` while they are arriving.
    public var checksum: String?
    /// When the row was made, in milliseconds since 1970.
    public var created: Int64
    /// Since when no live record holds the asset, in milliseconds since
    /// 1970 (its upload, or the save or deletion that let it go), or `nil`
    /// while one does. The collector deletes an asset unheld for longer
    /// than the grace period.
    public var unheldSince: Int64?

    /// Creates a row.
    public init(
        id: String, zone: Int64, recordName: String, fieldName: String, user: String, size: Int64?, checksum: String?,
        created: Int64, unheldSince: Int64?
    ) {
        self.id = id
        self.zone = zone
        self.recordName = recordName
        self.fieldName = fieldName
        self.user = user
        self.size = size
        self.checksum = checksum
        self.created = created
        self.unheldSince = unheldSince
    }
}

/// An upload URL's row (`assets/upload` answers its id in the URL): which
/// record field of which zone the bytes are for, who asked, and until when.
public struct StoredUploadTicket: Sendable, Hashable {
    /// The ticket's id: random, unguessable, the URL's credential.
    public var id: String
    /// The database that owns the zone (the owner's private database for
    /// an upload through the shared database).
    public var key: DatabaseKey
    /// The zone's row id.
    public var zone: Int64
    /// The record the asset is for.
    public var recordName: String
    /// The record's type.
    public var recordType: String
    /// The field the asset is for.
    public var fieldName: String
    /// Who asked; empty for a server-to-server key.
    public var user: String
    /// When the URL stops working, in milliseconds since 1970.
    public var expires: Int64

    /// Creates a row.
    public init(
        id: String, key: DatabaseKey, zone: Int64, recordName: String, recordType: String, fieldName: String,
        user: String, expires: Int64
    ) {
        self.id = id
        self.key = key
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
        self.fieldName = fieldName
        self.user = user
        self.expires = expires
    }
}

/// An upload's receipt row: the proof, until it expires, that `user` may
/// save the asset in one field of one record.
public struct StoredAssetReceipt: Sendable, Hashable {
    /// The receipt: random, unguessable, as the client saves it in the field.
    public var id: String
    /// The asset's id.
    public var asset: String
    /// The zone's row id.
    public var zone: Int64
    /// The record the asset may be saved in.
    public var recordName: String
    /// The field the asset may be saved in.
    public var fieldName: String
    /// Who may save it; empty for a server-to-server key.
    public var user: String
    /// When the receipt stops working, in milliseconds since 1970.
    public var expires: Int64

    /// Creates a row.
    public init(
        id: String, asset: String, zone: Int64, recordName: String, fieldName: String, user: String, expires: Int64
    ) {
        self.id = id
        self.asset = asset
        self.zone = zone
        self.recordName = recordName
        self.fieldName = fieldName
        self.user = user
        self.expires = expires
    }
}

/// What the record service reads and writes of assets inside a storage
/// transaction: part of every ``StorageTransaction``.
///
/// The defaults throw ``CloudError/Code/unsupported`` (but for releasing a
/// deleted zone's assets, which does nothing): a storage that keeps no
/// assets still serves every other request.
public protocol AssetTransaction: Sendable {
    /// The secret download URLs are signed with: the stored one, or
    /// `proposed` stored now when there is none yet. Every server sharing
    /// the storage answers the same secret, so each accepts the URLs of the others.
    func assetSigningSecret(proposing proposed: [UInt8]) async throws -> [UInt8]

    /// Stores a new upload ticket.
    func createUploadTicket(_ ticket: StoredUploadTicket) async throws
    /// The ticket with this id, or `nil`.
    func uploadTicket(id: String) async throws -> StoredUploadTicket?

    /// Inserts an asset's row, or replaces the row with its id.
    func saveAsset(_ asset: StoredAsset) async throws
    /// The rows of the assets with these ids (missing ones left out).
    func assets(ids: [String]) async throws -> [StoredAsset]
    /// Deletes the rows of these assets.
    func deleteAssets(ids: [String]) async throws
    /// Marks these assets held by a live record (``StoredAsset/unheldSince`` `nil`).
    func holdAssets(ids: [String]) async throws
    /// Marks these assets unheld since `time` (milliseconds since 1970).
    func releaseAssets(ids: [String], at time: Int64) async throws
    /// Marks every held asset of the zone unheld since `time`: the zone is gone.
    func releaseAssets(inZone zone: Int64, at time: Int64) async throws
    /// The ids of the assets unheld since `cutoff` or earlier (milliseconds
    /// since 1970), at most `limit`.
    func unheldAssets(since cutoff: Int64, limit: Int) async throws -> [String]

    /// Stores a new receipt.
    func createAssetReceipt(_ receipt: StoredAssetReceipt) async throws
    /// The receipts with these ids (missing ones left out).
    func assetReceipts(ids: [String]) async throws -> [StoredAssetReceipt]

    /// Deletes the tickets and receipts that expired at `time` or earlier.
    func deleteExpiredUploads(at time: Int64) async throws
}

extension AssetTransaction {
    /// Throws ``CloudError/Code/unsupported``.
    public func assetSigningSecret(proposing proposed: [UInt8]) async throws -> [UInt8] {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func createUploadTicket(_ ticket: StoredUploadTicket) async throws {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func uploadTicket(id: String) async throws -> StoredUploadTicket? {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func saveAsset(_ asset: StoredAsset) async throws { throw CloudError.assetsUnsupported(by: Self.self) }
    /// Throws ``CloudError/Code/unsupported``.
    public func assets(ids: [String]) async throws -> [StoredAsset] {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func deleteAssets(ids: [String]) async throws { throw CloudError.assetsUnsupported(by: Self.self) }
    /// Throws ``CloudError/Code/unsupported``.
    public func holdAssets(ids: [String]) async throws { throw CloudError.assetsUnsupported(by: Self.self) }
    /// Throws ``CloudError/Code/unsupported``.
    public func releaseAssets(ids: [String], at time: Int64) async throws {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Nothing: a storage that keeps no assets has none to release.
    public func releaseAssets(inZone zone: Int64, at time: Int64) async throws {}
    /// Throws ``CloudError/Code/unsupported``.
    public func unheldAssets(since cutoff: Int64, limit: Int) async throws -> [String] {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func createAssetReceipt(_ receipt: StoredAssetReceipt) async throws {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func assetReceipts(ids: [String]) async throws -> [StoredAssetReceipt] {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
    /// Throws ``CloudError/Code/unsupported``.
    public func deleteExpiredUploads(at time: Int64) async throws {
        throw CloudError.assetsUnsupported(by: Self.self)
    }
}

/// The byte store of a storage that keeps no assets: every call throws
/// ``CloudError/Code/unsupported``.
public struct UnsupportedAssetByteStore: AssetByteStore {
    /// Creates the store.
    public init() {}

    /// Throws ``CloudError/Code/unsupported``.
    public func write<Chunks: AsyncSequence>(_ chunks: Chunks, as id: String) async throws
    where Chunks.Element == [UInt8] {
        throw CloudError.assetsUnsupported(by: Self.self)
    }

    /// Throws ``CloudError/Code/unsupported``.
    public func read(_ id: String, range: Range<Int64>, assetSize: Int64) async throws -> AssetDownload {
        throw CloudError.assetsUnsupported(by: Self.self)
    }

    /// Throws ``CloudError/Code/unsupported``.
    public func delete(_ ids: [String]) async throws { throw CloudError.assetsUnsupported(by: Self.self) }

    /// No ids: nothing is stored.
    public func storedIDs() async throws -> [String] { [] }
}
