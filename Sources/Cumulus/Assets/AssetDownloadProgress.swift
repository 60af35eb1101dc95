import Foundation

/// What a download of an asset reports: how many of its bytes are on this
/// device, then where its file is.
public enum AssetDownloadUpdate: Sendable, Hashable {
    /// `completed` of the asset's `total` bytes are on this device (a
    /// resumed download starts from what an earlier one wrote).
    case progress(completed: Int64, total: Int64)
    /// The asset's file, complete and checked: the last update.
    case finished(URL)
}

/// The progress of one asset's download, as ``SyncEngine/download(_:)``
/// answers it: ``AssetDownloadUpdate/progress(completed:total:)`` values,
/// then ``AssetDownloadUpdate/finished(_:)`` with the file.
///
/// ```swift
/// for try await update in engine.download(photo.image) {
///     switch update {
///     case .progress(let completed, let total): bar.progress = Double(completed) / Double(total)
///     case .finished(let file): imageView.image = UIImage(contentsOfFile: file.path)
///     }
/// }
/// ```
///
/// Each iteration starts its own transfer. Cancelling the iterating task
/// (or dropping the iterator) stops the transfer; what was written stays,
/// and a later download of the asset resumes from there.
public struct AssetDownloadProgress: AsyncSequence, Sendable {
    /// An update of the transfer.
    public typealias Element = AssetDownloadUpdate

    private let transfer: @Sendable (@escaping @Sendable (AssetDownloadUpdate) -> Void) async throws -> Void

    init(_ transfer: @escaping @Sendable (@escaping @Sendable (AssetDownloadUpdate) -> Void) async throws -> Void) {
        self.transfer = transfer
    }

    /// Starts the transfer.
    public func makeAsyncIterator() -> Iterator {
        let (stream, continuation) = AsyncThrowingStream<AssetDownloadUpdate, any Error>.makeStream()
        let transfer = transfer
        let task = Task {
            do {
                try await transfer { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        // The consumer went away or was cancelled: the transfer stops.
        continuation.onTermination = { _ in task.cancel() }
        return Iterator(base: stream.makeAsyncIterator())
    }

    /// Yields the updates of one transfer.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<AssetDownloadUpdate, any Error>.Iterator

        /// The next update, or `nil` after the file.
        public mutating func next() async throws -> AssetDownloadUpdate? {
            try await base.next()
        }
    }
}
