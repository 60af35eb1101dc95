/// The bytes of an asset as they arrive, in order, a chunk at a time:
/// what ``CloudDatabase/downloadAsset(_:range:)`` answers.
///
/// ```swift
/// let download = try await database.downloadAsset(asset, range: nil)
/// let file = try FileHandle(forWritingTo: partial)
/// for try await chunk in download { try file.write(contentsOf: chunk) }
/// ```
///
/// A download is read once. Reading stops the transfer when the reading
/// task is cancelled or the iterator goes away; a later download with
/// `range: written..<download.assetSize` resumes it.
public struct AssetDownload: AsyncSequence, Sendable {
    /// A chunk of the asset's bytes.
    public typealias Element = [UInt8]

    /// The size of the whole asset, in bytes.
    public let assetSize: Int64
    /// The bytes the download yields: the range asked for, or the whole asset.
    public let range: Range<Int64>
    private let iterator: @Sendable () -> Iterator

    /// A download of `range` of an asset of `assetSize` bytes whose chunks
    /// `chunks` yields.
    public init<Chunks: AsyncSequence & Sendable>(assetSize: Int64, range: Range<Int64>, chunks: Chunks)
    where Chunks.Element == [UInt8] {
        self.assetSize = assetSize
        self.range = range
        iterator = { Iterator(chunks.makeAsyncIterator()) }
    }

    /// A download of a whole asset held in memory, as one chunk.
    public init(bytes: [UInt8]) {
        self.init(assetSize: Int64(bytes.count), range: 0..<Int64(bytes.count), chunks: OneChunk(bytes: bytes))
    }

    /// The iterator over the chunks.
    public func makeAsyncIterator() -> Iterator { iterator() }

    /// Yields the chunks of a download.
    public struct Iterator: AsyncIteratorProtocol {
        private let source: Source

        init<Base: AsyncIteratorProtocol>(_ base: Base) where Base.Element == [UInt8] {
            source = IteratorSource(base)
        }

        /// The next chunk, or `nil` once the range has been yielded.
        public mutating func next() async throws -> [UInt8]? {
            try await source.next()
        }
    }
}

/// The erased iterator of a download's chunks.
private class Source {
    func next() async throws -> [UInt8]? { nil }
}

private final class IteratorSource<Base: AsyncIteratorProtocol>: Source where Base.Element == [UInt8] {
    private var base: Base

    init(_ base: Base) { self.base = base }

    override func next() async throws -> [UInt8]? { try await base.next() }
}

/// A sequence of one chunk, or none for no bytes.
private struct OneChunk: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let bytes: [UInt8]

    func makeAsyncIterator() -> Iterator { Iterator(bytes: bytes.isEmpty ? nil : bytes) }

    struct Iterator: AsyncIteratorProtocol {
        var bytes: [UInt8]?
        mutating func next() async throws -> [UInt8]? {
            defer { bytes = nil }
            return bytes
        }
    }
}
