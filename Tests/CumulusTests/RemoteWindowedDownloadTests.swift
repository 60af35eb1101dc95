import CloudCodable
import Foundation
import Synchronization
import Testing

@testable import Cumulus

/// An asset server as a transport: it answers a `Range` (or the whole
/// asset) at once, in small chunks the client buffers until it reads them,
/// as a network faster than the reader does.
final class RangeServingTransport: CloudTransport {
    let bytes: [UInt8]
    /// Whether `Range` headers are ignored and the whole asset answered.
    let ignoresRange: Bool
    /// A window whose answer stops this many bytes early.
    let cutShort: (start: Int64, missing: Int)?
    /// A window answered with another range than the one asked, and saying so.
    let misplaced: Int64?
    private let state = Mutex<(delivered: Int, ranges: [String])>((0, []))

    init(bytes: [UInt8], ignoresRange: Bool = false, cutShort: (Int64, Int)? = nil, misplaced: Int64? = nil) {
        self.bytes = bytes
        self.ignoresRange = ignoresRange
        self.cutShort = cutShort
        self.misplaced = misplaced
    }

    /// How many bytes the transport has handed over to the client so far.
    var delivered: Int { state.withLock { $0.delivered } }
    /// The `Range` headers asked, in order (`-` for none).
    var ranges: [String] { state.withLock { $0.ranges } }

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        throw CloudError(.internalError, reason: "a download streams")
    }

    func stream(_ request: CloudHTTPRequest) async throws -> CloudHTTPStreamedResponse {
        let header = request.headers["Range"]
        var part = 0..<bytes.count
        if let header, !ignoresRange {
            let bounds = header.dropFirst("bytes=".count).split(separator: "-").compactMap { Int($0) }
            part = bounds[0]..<Swift.min(bytes.count, bounds[1] + 1)
        }
        var answered = part
        var stated = part
        if let cutShort, part.lowerBound == cutShort.start {
            answered = part.lowerBound..<part.upperBound - cutShort.missing
        }
        if let misplaced, part.lowerBound == misplaced {
            answered = part.lowerBound + 1..<part.upperBound
            stated = answered
        }
        let (body, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self)
        for start in stride(from: answered.lowerBound, to: answered.upperBound, by: 10) {
            continuation.yield(Array(bytes[start..<Swift.min(answered.upperBound, start + 10)]))
        }
        continuation.finish()
        state.withLock {
            $0.delivered += answered.count
            $0.ranges.append(header ?? "-")
        }
        let partial = header != nil && !ignoresRange
        let headers =
            partial
            ? ["Content-Range": "bytes \(stated.lowerBound)-\(stated.upperBound - 1)/\(bytes.count)"]
            : ["Content-Length": "\(bytes.count)"]
        return CloudHTTPStreamedResponse(status: partial ? 206 : 200, headers: headers, body: body)
    }
}

@Suite("RemoteCloudDatabase downloads in windows")
struct RemoteWindowedDownloadTests {
    static let bytes: [UInt8] = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 ^ $0 >> 3) }

    static func database(_ transport: RangeServingTransport, window: Int64 = 100) -> RemoteCloudDatabase {
        var configuration = RemoteFixture.configuration()
        configuration.downloadWindow = window
        return RemoteCloudDatabase(
            configuration: configuration,
            credentials: .user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.webAuthToken),
            transport: transport)
    }

    static let asset = Asset(fileChecksum: "x", size: 1000, downloadURL: "https://files.example/d/tok/${f}")

    @Test("a reader slower than the network holds at most two windows, and gets every byte in order")
    func boundedBySlowReader() async throws {
        let transport = RangeServingTransport(bytes: Self.bytes)
        let download = try await Self.database(transport).downloadAsset(Self.asset, range: nil)
        #expect(download.assetSize == 1000 && download.range == 0..<1000)
        var received: [UInt8] = []
        var mostAhead = 0
        for try await chunk in download {
            received += chunk
            // The reader yields between chunks, as a slow one does, so requests sent ahead get their answers.
            await Task.yield()
            mostAhead = max(mostAhead, transport.delivered - received.count)
        }
        #expect(received == Self.bytes)
        #expect(mostAhead <= 200, "\(mostAhead) bytes held ahead of the reader")
        #expect(transport.ranges == (0..<10).map { "bytes=\($0 * 100)-\($0 * 100 + 99)" })
    }

    @Test("a range larger than a window comes in windows of exactly its bytes")
    func rangeInWindows() async throws {
        let transport = RangeServingTransport(bytes: Self.bytes)
        let download = try await Self.database(transport).downloadAsset(Self.asset, range: 150..<955)
        #expect(download.range == 150..<955 && download.assetSize == 1000)
        var received: [UInt8] = []
        for try await chunk in download { received += chunk }
        #expect(received == Array(Self.bytes[150..<955]))
        #expect(transport.ranges.first == "bytes=150-249" && transport.ranges.last == "bytes=950-954")
        #expect(transport.ranges.count == 9)
    }

    @Test("an asset within one window, and one from a server that ignores Range, come in one request")
    func oneRequest() async throws {
        let small = RangeServingTransport(bytes: Self.bytes)
        let whole = try await Self.database(small, window: 1000).downloadAsset(Self.asset, range: nil)
        var received: [UInt8] = []
        for try await chunk in whole { received += chunk }
        #expect(received == Self.bytes && small.ranges == ["-"])

        let ignoring = RangeServingTransport(bytes: Self.bytes, ignoresRange: true)
        let download = try await Self.database(ignoring).downloadAsset(Self.asset, range: nil)
        received = []
        for try await chunk in download { received += chunk }
        #expect(received == Self.bytes && ignoring.ranges == ["bytes=0-99"])
        // Asked for a range, the whole asset is refused, as before.
        let refused = try await #require(throws: CloudError.self) {
            try await Self.database(ignoring).downloadAsset(Self.asset, range: 100..<900)
        }
        #expect(refused.code == .internalError)
    }

    @Test("a window cut short or answered with other bytes fails the download; none is yielded past it")
    func brokenWindow() async throws {
        let short = RangeServingTransport(bytes: Self.bytes, cutShort: (300, 5))
        var received: [UInt8] = []
        let error = try await #require(throws: CloudError.self) {
            for try await chunk in try await Self.database(short).downloadAsset(Self.asset, range: nil) {
                received += chunk
            }
        }
        #expect(error.code == .networkFailure)
        #expect(received == Array(Self.bytes[0..<395]))

        let misplaced = RangeServingTransport(bytes: Self.bytes, misplaced: 500)
        received = []
        let changed = try await #require(throws: CloudError.self) {
            for try await chunk in try await Self.database(misplaced).downloadAsset(Self.asset, range: nil) {
                received += chunk
            }
        }
        #expect(changed.code == .internalError)
        #expect(received == Array(Self.bytes[0..<500]))

        // A range past the asset's end is refused once the server tells the size.
        let pastTheEnd = try await #require(throws: CloudError.self) {
            try await Self.database(RangeServingTransport(bytes: Self.bytes)).downloadAsset(
                Asset(size: 2000, downloadURL: "/d/tok/${f}"), range: 900..<1200)
        }
        #expect(pastTheEnd.code == .rangeNotSatisfiable)
    }
}
