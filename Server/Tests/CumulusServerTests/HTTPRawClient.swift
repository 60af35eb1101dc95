import Cumulus
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A TCP connection that sends bytes exactly as given, for requests no
/// HTTP client library would send: malformed, slow, HTTP/1.0.
final class RawHTTPConnection: Sendable {
    /// What the connection received and whether the server closed it.
    private struct Received {
        var bytes: [UInt8] = []
        var closed = false
    }

    /// Shared by the connection and its handler, which is made on the event loop.
    private final class Box: Sendable {
        let received = Mutex(Received())
    }

    private let channel: any Channel
    private let box: Box

    private init(channel: any Channel, box: Box) {
        self.channel = channel
        self.box = box
    }

    /// Connects to the server on 127.0.0.1.
    static func connect(port: Int) async throws -> RawHTTPConnection {
        let box = Box()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(box: box))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawHTTPConnection(channel: channel, box: box)
    }

    /// Sends `text` at once.
    func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    /// Sends `bytes` at once.
    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    /// Sends `text` one byte every `interval`, until it is all sent, the
    /// server closes the connection or `limit` passes; returns how many
    /// bytes went out.
    @discardableResult
    func trickle(_ text: String, every interval: Duration, giveUpAfter limit: Duration = .seconds(5)) async throws
        -> Int
    {
        let deadline = ContinuousClock.now + limit
        var sent = 0
        for byte in text.utf8 {
            if isClosed || ContinuousClock.now >= deadline { break }
            do {
                try await send([byte])
            } catch {
                break
            }
            sent += 1
            try await Task.sleep(for: interval)
        }
        return sent
    }

    /// Whether the server closed the connection.
    var isClosed: Bool {
        box.received.withLock { $0.closed }
    }

    /// Waits until the server closes the connection, at most `limit`; returns whether it did.
    func waitForClose(within limit: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while !isClosed, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return isClosed
    }

    /// The next whole response, waiting at most `limit`; `nil` when none
    /// came (or the connection closed first).
    func response(within limit: Duration) async throws -> RawHTTPResponse? {
        let deadline = ContinuousClock.now + limit
        while true {
            let parsed = box.received.withLock { received -> RawHTTPResponse? in
                guard let (response, length) = RawHTTPResponse.parse(received.bytes) else { return nil }
                received.bytes.removeFirst(length)
                return response
            }
            if let parsed { return parsed }
            if isClosed || ContinuousClock.now >= deadline { return nil }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Everything received and not yet taken as a response.
    var unread: String {
        box.received.withLock { String(decoding: $0.bytes, as: UTF8.self) }
    }

    /// Closes the connection from this side.
    func close() async {
        try? await channel.close()
    }

    /// Keeps what the server sends and notes when it closes.
    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let box: Box

        init(box: Box) {
            self.box = box
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            box.received.withLock { $0.bytes.append(contentsOf: buffer.readableBytesView) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            box.received.withLock { $0.closed = true }
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}

/// One HTTP/1 response as the raw client read it.
struct RawHTTPResponse: Sendable {
    /// `HTTP/1.1` or `HTTP/1.0`.
    let version: String
    let status: Int
    /// Header names in lower case.
    let headers: [String: String]
    let body: [UInt8]

    /// The body as a JSON object, or an empty one.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    var serverErrorCode: String? { json["serverErrorCode"] as? String }

    /// Whether this is the error dictionary of `code` with `status`.
    func isError(_ code: CloudError.Code, status: Int) -> Bool {
        self.status == status && serverErrorCode == code.rawValue && headers["content-type"] == "application/json"
            && json["uuid"] is String
    }

    /// A response at the start of `bytes` and its length, once it is all there.
    static func parse(_ bytes: [UInt8]) -> (RawHTTPResponse, Int)? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.firstRange(of: separator) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard bytes.count >= end.upperBound + length else { return nil }
        let body = Array(bytes[end.upperBound..<end.upperBound + length])
        return (
            RawHTTPResponse(version: String(statusLine[0]), status: status, headers: headers, body: body),
            end.upperBound + length
        )
    }
}
