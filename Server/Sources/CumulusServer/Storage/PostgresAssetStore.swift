import CloudCodable
import CloudProtocol
import PostgresNIO

/// ``AssetByteStore`` in PostgreSQL, the bytes of ``PostgresStorage``: each
/// asset is rows of up to ``chunkSize`` bytes in `asset_chunks`, keyed by
/// the asset's id and the chunk's offset, so that every server on the
/// database reads what any of them wrote.
///
/// Each chunk is written by a statement of its own, committed before the
/// next is sent: an upload on a slow link holds a pooled connection only
/// while a chunk is written, and holds at most one chunk in memory. The
/// bytes are complete, and durable, once ``write(_:as:)`` returns; a write
/// that fails deletes its chunks, and the chunks a crash leaves behind are
/// bytes without a finished row, which the collector deletes.
struct PostgresAssetStore: AssetByteStore {
    let storage: PostgresStorage

    /// The bytes of one row, and of one chunk of a download.
    static let chunkSize = 1 << 20

    func write<Chunks: AsyncSequence>(_ chunks: Chunks, as id: String) async throws where Chunks.Element == [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(Self.chunkSize)
        var offset: Int64 = 0
        do {
            for try await chunk in chunks {
                var rest = chunk[...]
                while !rest.isEmpty {
                    let taken = rest.prefix(Self.chunkSize - buffer.count)
                    buffer += taken
                    rest = rest.dropFirst(taken.count)
                    guard buffer.count == Self.chunkSize else { continue }
                    try await insert(buffer, of: id, at: offset)
                    offset += Int64(buffer.count)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            // The last chunk, or the one empty chunk of an empty asset: an asset
            // always has a chunk at offset 0, which says it is stored.
            if !buffer.isEmpty || offset == 0 { try await insert(buffer, of: id, at: offset) }
        } catch {
            try? await delete([id])
            throw error
        }
    }

    func read(_ id: String, range: Range<Int64>, assetSize: Int64) async throws -> AssetDownload {
        let rows = try await run("SELECT 1 AS stored FROM asset_chunks WHERE asset_id = \(id) AND start = 0") { rows in
            rows.count
        }
        guard rows > 0 else { throw CloudError(.notFound, reason: "the asset's bytes are gone") }
        return AssetDownload(
            assetSize: assetSize, range: range, chunks: PostgresChunks(store: self, id: id, range: range))
    }

    func delete(_ ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        try await run("DELETE FROM asset_chunks WHERE asset_id = ANY(\(ids))") { _ in () }
    }

    func storedIDs() async throws -> [String] {
        try await run("SELECT asset_id FROM asset_chunks WHERE start = 0") { rows in
            try rows.map { row in try PostgresColumns(row, table: "asset_chunks").value("asset_id", as: String.self) }
        }
    }

    private func insert(_ bytes: [UInt8], of id: String, at offset: Int64) async throws {
        try await run(
            "INSERT INTO asset_chunks (asset_id, start, bytes) VALUES (\(id), \(offset), \(ByteBuffer(bytes: bytes)))"
        ) { _ in () }
    }

    /// The bytes from `offset` to the end of its chunk, at most `limit` of them.
    func chunk(of id: String, from offset: Int64, limit: Int64) async throws -> [UInt8] {
        let count = Int32(min(limit, Int64(Self.chunkSize)))
        // `substring` of an uncompressed value reads only the pages it needs.
        return try await run(
            """
            SELECT substring(bytes FROM (\(offset) - start + 1)::integer FOR \(count)) AS part FROM asset_chunks
                WHERE asset_id = \(id) AND start <= \(offset) ORDER BY start DESC LIMIT 1
            """
        ) { rows in
            guard let row = rows.first else { return [] }
            return Array(
                try PostgresColumns(row, table: "asset_chunks").value("part", as: ByteBuffer.self).readableBytesView)
        }
    }

    /// Runs one statement on a pooled connection, bounded as a transaction
    /// of the storage is, and reads its rows there.
    private func run<T: Sendable>(_ query: PostgresQuery, _ read: @escaping @Sendable ([PostgresRow]) throws -> T)
        async throws -> T
    {
        let limits = storage.limits
        do {
            return try await storage.attempt(
                leaseWait: limits.connectionWait, deadline: .now + limits.transactionTimeout
            ) { connection, attempt in
                let rows = try await connection.run(query).rows
                return try read(rows)
            }
        } catch let error as CloudError {
            throw error
        } catch let error as ImpossibleRow {
            throw error.cloudError(logging: storage.logger)
        } catch {
            throw PostgresStorage.cloudError(for: error, limits: limits, logger: storage.logger)
        }
    }
}

/// The chunks of a range of an asset in PostgreSQL, read one at a time as
/// they are asked for.
struct PostgresChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]

    let store: PostgresAssetStore
    let id: String
    let range: Range<Int64>

    func makeAsyncIterator() -> Iterator {
        Iterator(store: store, id: id, next: range.lowerBound, end: range.upperBound)
    }

    struct Iterator: AsyncIteratorProtocol {
        let store: PostgresAssetStore
        let id: String
        var next: Int64
        let end: Int64

        mutating func next() async throws -> [UInt8]? {
            guard next < end else { return nil }
            let bytes = try await store.chunk(of: id, from: next, limit: end - next)
            guard !bytes.isEmpty else {
                throw CloudError(.internalError, reason: "an asset's chunks are shorter than its row says")
            }
            next += Int64(bytes.count)
            return bytes
        }
    }
}
