import Foundation

/// A file's bytes as an asynchronous sequence of chunks, read as they are
/// asked for: an upload never holds the whole file.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    /// The size of the chunks read.
    static let chunkSize = 65_536
    let file: URL

    func makeAsyncIterator() -> Iterator { Iterator(file: file) }

    struct Iterator: AsyncIteratorProtocol {
        let file: URL
        private var handle: FileHandle?
        private var finished = false

        init(file: URL) { self.file = file }

        mutating func next() async throws -> [UInt8]? {
            guard !finished else { return nil }
            if handle == nil { handle = try FileHandle(forReadingFrom: file) }
            guard let handle else { return nil }
            let data = try handle.read(upToCount: FileChunks.chunkSize) ?? Data()
            guard !data.isEmpty else {
                finished = true
                try handle.close()
                return nil
            }
            return [UInt8](data)
        }
    }

    /// The file's size in bytes.
    static func size(of file: URL) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }
}
