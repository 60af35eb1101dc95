import Foundation

/// A photo or file a model holds: a property of this type becomes an
/// `ASSETID` field (`[CloudAsset]` an `ASSETID_LIST`, an optional one a
/// field that may be absent).
///
/// ```swift
/// struct Photo: CloudCodable, Identifiable {
///     var id = UUID()
///     var caption: String
///     var image: CloudAsset
///     var cloudMetadata: RecordMetadata?
/// }
/// let photo = Photo(caption: "Dunes", image: try CloudAsset(contentsOf: pictureURL))
/// try await engine.upload(photo)   // the engine keeps a copy of the file until the server has it
/// ```
///
/// An asset is known by its contents: its ``checksum`` (the base64 SHA-256
/// of the bytes, as the server's `fileChecksum`) and its ``size``. Two
/// assets with the same bytes are equal, wherever they are stored, and a
/// model fetched from the server carries the same asset as the one that was
/// uploaded. A fetched asset is a reference: ask the engine for its bytes
/// (`SyncEngine.data(for:)`, `fileURL(for:)`, `download(_:)`).
public struct CloudAsset: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The base64 SHA-256 of the bytes: the server's `fileChecksum`.
    public let checksum: String
    /// The size of the bytes.
    public let size: Int64
    /// Where the bytes of an asset made on this device are, for the engine
    /// to copy on upload; `nil` for an asset known by reference.
    package let source: Source?

    /// Where an asset made on this device takes its bytes from.
    package enum Source: Sendable {
        case file(URL)
        case data(Data)
    }

    /// An asset of these bytes.
    public init(data: Data) {
        checksum = Self.checksum(of: data)
        size = Int64(data.count)
        source = .data(data)
    }

    /// An asset of the file's contents, which the engine copies when the
    /// model is uploaded (so the file may change or go away after that).
    /// `SyncEngine.asset(contentsOf:)` reads the file once instead, taking
    /// the engine's copy as it hashes.
    ///
    /// - Throws: What reading the file throws.
    public init(contentsOf file: URL) throws {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(chunk)
            size += Int64(chunk.count)
        }
        self.checksum = Data(hasher.finalize()).base64EncodedString()
        self.size = size
        source = .file(file)
    }

    /// An asset whose checksum and size were read from `source` already.
    package init(checksum: String, size: Int64, source: Source) {
        self.checksum = checksum
        self.size = size
        self.source = source
    }

    /// An asset known by its checksum and size, without its bytes: what a
    /// fetched record holds.
    public init(checksum: String, size: Int64) {
        self.checksum = checksum
        self.size = size
        source = nil
    }

    /// The base64 SHA-256 of `data`, as ``checksum`` holds it.
    package static func checksum(of data: Data) -> String {
        Data(SHA256.hash(data)).base64EncodedString()
    }

    /// Equal when the contents are: same checksum and size.
    public static func == (lhs: CloudAsset, rhs: CloudAsset) -> Bool {
        lhs.checksum == rhs.checksum && lhs.size == rhs.size
    }

    /// Hashes the checksum.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(checksum)
    }

    /// The checksum and size.
    public var description: String { "CloudAsset(\(checksum), \(size) bytes)" }

    // MARK: Codable

    private enum CodingKeys: String, CodingKey {
        case checksum, size, file, data
    }

    /// Decodes an asset as ``encode(to:)`` wrote it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        checksum = try container.decode(String.self, forKey: .checksum)
        size = try container.decode(Int64.self, forKey: .size)
        if let file = try container.decodeIfPresent(URL.self, forKey: .file) {
            source = .file(file)
        } else if let data = try container.decodeIfPresent(Data.self, forKey: .data) {
            source = .data(data)
        } else {
            source = nil
        }
    }

    /// Encodes the checksum and size, and, for an asset not uploaded yet,
    /// where its bytes are (the file's URL, or the bytes themselves), so
    /// that an app that stores its models keeps what it has not uploaded.
    /// (A model's asset property becomes an `ASSETID` field instead.)
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(checksum, forKey: .checksum)
        try container.encode(size, forKey: .size)
        switch source {
        case .file(let url)?: try container.encode(url, forKey: .file)
        case .data(let data)?: try container.encode(data, forKey: .data)
        case nil: break
        }
    }
}

// MARK: Fields

extension CloudAsset {
    /// The `ASSETID` value the asset is saved as: its checksum and size.
    /// The engine adds the upload's receipt when it sends the record.
    public var fieldValue: Asset { Asset(fileChecksum: checksum, size: size) }

    /// The asset of an `ASSETID` value, or `nil` when the value has no checksum.
    public init?(_ value: Asset) {
        guard let checksum = value.fileChecksum else { return nil }
        self.init(checksum: checksum, size: value.size ?? 0)
    }

    /// The assets with bytes the record encoder met on this thread while
    /// `body` ran: what the engine copies before it queues an upload.
    package static func collecting<T>(_ body: () throws -> T) rethrows -> (T, [CloudAsset]) {
        do {
            var sink = AssetSink()
            sinks.give(&sink)
        }
        var result: T
        do {
            result = try body()
        } catch {
            _ = sinks.take()
            throw error
        }
        return (result, sinks.take()?.assets ?? [])
    }

    /// Records an asset the encoder turned into a field, when a
    /// ``collecting(_:)`` is under way on this thread.
    static func encoded(_ asset: CloudAsset) -> Asset {
        if asset.source != nil, var sink = sinks.take() {
            sink.assets.append(asset)
            sinks.give(&sink)
        }
        return asset.fieldValue
    }

    private static let sinks = ThreadLocalCache<AssetSink>()
}

/// The assets met while encoding under ``CloudAsset/collecting(_:)``.
private final class AssetSink {
    var assets: [CloudAsset] = []
}
