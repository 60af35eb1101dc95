import Cumulus
import CumulusServerCore
import Testing

@testable import CumulusTesting

/// Chunks of `size` bytes, without end, counting how many were taken.
private struct EndlessChunks: AsyncSequence {
    typealias Element = [UInt8]
    let size: Int
    let taken: Counter

    final class Counter: @unchecked Sendable {
        // Safety: one task reads the sequence and then the count.
        var count = 0
    }

    func makeAsyncIterator() -> Iterator { Iterator(size: size, taken: taken) }

    struct Iterator: AsyncIteratorProtocol {
        let size: Int
        let taken: Counter
        mutating func next() async throws -> [UInt8]? {
            taken.count += 1
            return [UInt8](repeating: 1, count: size)
        }
    }
}

/// Finite chunks.
private struct Chunks: AsyncSequence {
    typealias Element = [UInt8]
    let chunks: [[UInt8]]
    func makeAsyncIterator() -> Iterator { Iterator(rest: chunks[...]) }
    struct Iterator: AsyncIteratorProtocol {
        var rest: ArraySlice<[UInt8]>
        mutating func next() async throws -> [UInt8]? { rest.popFirst() }
    }
}

@Suite("Receiving an asset's bytes")
struct AssetReceivingTests {
    /// A server whose largest asset is 1000 bytes, and the ticket of an upload URL for alice's `n1`.
    private func ticket() async throws -> (InMemoryCloudServer, String) {
        let server = InMemoryCloudServer(assetSizeLimit: 1000)
        let alice = server.database(signedInAs: "alice")
        let targets = try await alice.requestAssetUploads(
            [AssetUploadRequest(recordName: "n1", recordType: "Note", fieldName: "photo")], zoneID: .defaultZone)
        let url = try #require(targets.first?.url)
        #expect(url.hasPrefix("/assets/1/upload/"))
        return (server, String(url.dropFirst("/assets/1/upload/".count)))
    }

    @Test("a body that grows over the limit is stopped as it streams, and nothing of it is kept")
    func overLimitWhileStreaming() async throws {
        let (server, ticket) = try await ticket()
        let taken = EndlessChunks.Counter()
        let error = try await #require(throws: CloudError.self) {
            try await server.service.receiveAsset(
                ticket: ticket, contentLength: nil, chunks: EndlessChunks(size: 300, taken: taken))
        }
        #expect(error.code == .limitExceeded)
        #expect(error.httpStatus == 413)
        #expect(taken.count == 4)
        #expect(await server.storedAssetCount() == 0)
        // Exactly at the limit is accepted.
        let asset = try await server.service.receiveAsset(
            ticket: ticket, contentLength: nil, chunks: Chunks(chunks: [[UInt8](repeating: 2, count: 1000)]))
        #expect(asset.size == 1000)
    }

    @Test("a Content-Length over the limit is refused before a byte is read; one the body breaks is refused")
    func contentLength() async throws {
        let (server, ticket) = try await ticket()
        let taken = EndlessChunks.Counter()
        await #expect(throws: CloudError.self) {
            try await server.service.receiveAsset(
                ticket: ticket, contentLength: 1001, chunks: EndlessChunks(size: 1, taken: taken))
        }
        #expect(taken.count == 0)
        let error = try await #require(throws: CloudError.self) {
            try await server.service.receiveAsset(ticket: ticket, contentLength: 10, chunks: Chunks(chunks: [[1, 2]]))
        }
        #expect(error.code == .badRequest)
        #expect(await server.storedAssetCount() == 0)
    }

    @Test("an unknown ticket is NOT_FOUND, an expired one EXPIRED")
    func tickets() async throws {
        let (server, ticket) = try await ticket()
        let unknown = try await #require(throws: CloudError.self) {
            try await server.service.receiveAsset(ticket: "nope", contentLength: nil, chunks: Chunks(chunks: []))
        }
        #expect(unknown.code == .notFound)
        server.skipTime(.seconds(3601))
        let expired = try await #require(throws: CloudError.self) {
            try await server.service.receiveAsset(ticket: ticket, contentLength: nil, chunks: Chunks(chunks: []))
        }
        #expect(expired.code == .expired)
        #expect(expired.httpStatus == 410)
    }
}
