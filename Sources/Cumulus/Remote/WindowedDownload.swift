import CloudProtocol
import Foundation

/// The chunks of a download read in windows: one ranged request per
/// window, the next sent once the reader starts on the current one.
///
/// A transport buffers whatever arrives before the reader asks for it, so
/// one request for a large asset read slowly would hold all of it; with
/// windows, at most the current window and the next are held.
struct WindowedDownload: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    typealias Body = AsyncThrowingStream<[UInt8], any Error>

    /// The first window's body, already answered.
    let first: Body
    /// How many bytes the first window holds.
    let firstCount: Int64
    /// The bytes the whole download yields.
    let range: Range<Int64>
    let size: Int64
    let window: Int64
    /// Sends the request of a window and answers its body.
    let open: @Sendable (Range<Int64>) async throws -> Body

    func makeAsyncIterator() -> Iterator {
        Iterator(
            current: first.makeAsyncIterator(), owed: firstCount, next: range.lowerBound + firstCount,
            end: range.upperBound, window: window, ahead: Ahead(open: open))
    }

    struct Iterator: AsyncIteratorProtocol {
        var current: Body.Iterator
        /// The bytes the current window has still to yield.
        var owed: Int64
        /// Where the next window starts.
        var next: Int64
        let end: Int64
        let window: Int64
        let ahead: Ahead

        mutating func next() async throws -> [UInt8]? {
            while true {
                if let chunk = try await current.next() {
                    owed -= Int64(chunk.count)
                    guard owed >= 0 else {
                        throw CloudError(
                            .internalError, reason: "the server sent more bytes than the range it answered")
                    }
                    if next < end { ahead.start(nextWindow) }
                    if chunk.isEmpty { continue }
                    return chunk
                }
                // A window cut short would shift every later byte: never yield past it.
                guard owed == 0 else {
                    throw CloudError(.networkFailure, reason: "the download ended \(owed) bytes early")
                }
                guard next < end else { return nil }
                let part = nextWindow
                current = try await ahead.take(part).makeAsyncIterator()
                owed = Int64(part.count)
                next = part.upperBound
            }
        }

        private var nextWindow: Range<Int64> { next..<Swift.min(end, next + window) }
    }

    /// The request of the next window, sent ahead of the reader; cancelled
    /// when the reader goes away first.
    final class Ahead: @unchecked Sendable {
        // Safety: `pending` is touched only while `lock` is held.
        private let lock = NSLock()
        private var pending: (part: Range<Int64>, task: Task<Body, any Error>)?
        private let open: @Sendable (Range<Int64>) async throws -> Body

        init(open: @escaping @Sendable (Range<Int64>) async throws -> Body) {
            self.open = open
        }

        /// Sends the request of `part` unless it was sent already.
        func start(_ part: Range<Int64>) {
            lock.lock()
            defer { lock.unlock() }
            guard pending?.part != part else { return }
            pending?.task.cancel()
            let open = self.open
            pending = (part, Task { try await open(part) })
        }

        /// The body of `part`: the request sent ahead, or a new one.
        func take(_ part: Range<Int64>) async throws -> Body {
            let taken = takePending()
            guard let taken, taken.part == part else {
                taken?.task.cancel()
                return try await open(part)
            }
            return try await withTaskCancellationHandler {
                try await taken.task.value
            } onCancel: {
                taken.task.cancel()
            }
        }

        private func takePending() -> (part: Range<Int64>, task: Task<Body, any Error>)? {
            lock.lock()
            defer { lock.unlock() }
            let taken = pending
            pending = nil
            return taken
        }

        deinit {
            pending?.task.cancel()
        }
    }
}
