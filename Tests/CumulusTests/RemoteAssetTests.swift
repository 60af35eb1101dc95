import CloudCodable
import CumulusServerCore
import Foundation
import Testing

@testable import Cumulus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A file holding `bytes`, removed by the caller.
private func temporaryFile(_ bytes: [UInt8]) throws -> URL {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-upload-\(UUID().uuidString)")
    try Data(bytes).write(to: file)
    return file
}

private func pattern(_ count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 ^ $0 >> 9) }
}

@Suite("RemoteCloudDatabase assets")
struct RemoteAssetTests {
    @Test("an upload goes to the target's URL on the database's server, with no token")
    func upload() async throws {
        let bytes = pattern(1000)
        let transport = RecordingTransport { _ in
            var writer = JSONWriter(capacity: 64)
            writer.appendSingleFile(Asset(fileChecksum: "c2Vh", size: 1000, receipt: "r1"))
            return CloudHTTPResponse(status: 200, body: writer.bytes)
        }
        let database = RemoteFixture.database(transport)
        let file = try temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(at: file) }
        let asset = try await database.uploadAsset(
            contentsOf: file, to: AssetUploadTarget(recordName: "n1", fieldName: "photo", url: "/assets/1/upload/t1"))
        #expect(asset == Asset(fileChecksum: "c2Vh", size: 1000, receipt: "r1"))
        let request = try #require(transport.requests.first)
        #expect(request.method == "POST")
        #expect(request.url.absoluteString == "https://cloud.example.com:443/assets/1/upload/t1")
        #expect(request.body == bytes)
        #expect(request.headers["Content-Type"] == "application/octet-stream")
    }

    @Test("an upload refused by the server throws its error")
    func uploadRefused() async throws {
        let transport = RecordingTransport { _ in
            CloudHTTPResponse(
                status: 413, headers: ["Content-Type": "application/json"],
                body: CloudError(.limitExceeded, reason: "too large").encodedBody())
        }
        let file = try temporaryFile([1, 2, 3])
        defer { try? FileManager.default.removeItem(at: file) }
        let error = try await #require(throws: CloudError.self) {
            try await RemoteFixture.database(transport).uploadAsset(
                contentsOf: file, to: AssetUploadTarget(recordName: "n1", fieldName: "f", url: "https://a.example/u"))
        }
        #expect(error.code == .limitExceeded)
    }

    @Test("a download asks for its range, names a file for ${f}, and sends no token")
    func downloadRange() async throws {
        let bytes = pattern(100)
        let transport = RecordingTransport { request in
            CloudHTTPResponse(
                status: 206, headers: ["Content-Range": "bytes 10-19/100"], body: Array(bytes[10..<20]))
        }
        let database = RemoteFixture.database(transport)
        let asset = Asset(fileChecksum: "x", size: 100, downloadURL: "https://files.example/assets/1/download/tok/${f}")
        let download = try await database.downloadAsset(asset, range: 10..<20)
        #expect(download.assetSize == 100)
        #expect(download.range == 10..<20)
        var received: [UInt8] = []
        for try await chunk in download { received += chunk }
        #expect(received == Array(bytes[10..<20]))
        let request = try #require(transport.requests.first)
        #expect(request.url.absoluteString == "https://files.example/assets/1/download/tok/asset")
        #expect(request.headers["Range"] == "bytes=10-19")
    }

    @Test("a download the server refuses throws its error; an answer of another range is refused")
    func downloadRefused() async throws {
        let expired = RecordingTransport { _ in
            CloudHTTPResponse(status: 410, body: CloudError(.expired, reason: "old").encodedBody())
        }
        let asset = Asset(size: 100, downloadURL: "/assets/1/download/tok/${f}")
        let error = try await #require(throws: CloudError.self) {
            try await RemoteFixture.database(expired).downloadAsset(asset, range: nil)
        }
        #expect(error.code == .expired)
        let whole = RecordingTransport { _ in
            CloudHTTPResponse(status: 200, headers: ["Content-Length": "100"], body: pattern(100))
        }
        let ignored = try await #require(throws: CloudError.self) {
            try await RemoteFixture.database(whole).downloadAsset(asset, range: 5..<10)
        }
        #expect(ignored.code == .internalError)
        let empty = try await #require(throws: CloudError.self) {
            try await RemoteFixture.database(whole).downloadAsset(asset, range: 5..<5)
        }
        #expect(empty.code == .rangeNotSatisfiable)
        // A server that serves a range running past the end up to the end
        // (RFC 9110): the range asked is not inside the asset, as everywhere else.
        let clamped = RecordingTransport { _ in
            CloudHTTPResponse(status: 206, headers: ["Content-Range": "bytes 90-99/100"], body: pattern(10))
        }
        let pastTheEnd = try await #require(throws: CloudError.self) {
            try await RemoteFixture.database(clamped).downloadAsset(asset, range: 90..<120)
        }
        #expect(pastTheEnd.code == .rangeNotSatisfiable)
        let shorter = try await #require(throws: CloudError.self) {
            try await RemoteFixture.database(clamped).downloadAsset(asset, range: 90..<95)
        }
        #expect(shorter.code == .internalError)
    }

    @Test("URLSession streams an upload from its file and a download in chunks")
    func urlSessionStreams() async throws {
        let bytes = pattern(300_000)
        let server = try LoopbackHTTPServer { request in
            if request.method == "POST" {
                var writer = JSONWriter(capacity: 64)
                writer.appendSingleFile(Asset(fileChecksum: "sum", size: Int64(request.body.count), receipt: "r"))
                let echoed = request.body == bytes ? writer.bytes : Array("{}".utf8)
                return (200, ["Content-Type": "application/json"], echoed)
            }
            #expect(request.headers["range"] == "bytes=1000-250999")
            return (206, ["Content-Range": "bytes 1000-250999/300000"], Array(bytes[1000..<251_000]))
        }
        defer { server.stop() }
        let database = RemoteCloudDatabase(
            configuration: .init(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, container: "c"),
            credentials: .user(apiToken: "t", webAuthToken: "w"))
        let file = try temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(at: file) }
        let asset = try await database.uploadAsset(
            contentsOf: file, to: AssetUploadTarget(recordName: "n", fieldName: "f", url: "/assets/1/upload/t"))
        #expect(asset.size == 300_000)
        #expect(asset.receipt == "r")

        let download = try await database.downloadAsset(
            Asset(downloadURL: "/assets/1/download/tok/${f}"), range: 1000..<251_000)
        #expect(download.assetSize == 300_000)
        var received: [UInt8] = []
        var chunks = 0
        for try await chunk in download {
            received += chunk
            chunks += 1
        }
        #expect(received == Array(bytes[1000..<251_000]))
        #expect(chunks > 1)
        #expect(server.paths == ["/assets/1/upload/t", "/assets/1/download/tok/asset"])
    }
}

/// An HTTP/1.1 server on a loopback port that answers each connection's
/// one request with what `handler` returns, then closes it.
final class LoopbackHTTPServer: @unchecked Sendable {
    struct Request {
        var method: String
        var path: String
        /// Lowercased names.
        var headers: [String: String]
        var body: [UInt8]
    }

    typealias Handler = @Sendable (Request) -> (Int, [String: String], [UInt8])

    // Safety: `seen` is touched only while `lock` is held; the descriptor is set once.
    private let lock = NSLock()
    private var seen: [String] = []
    private let descriptor: Int32
    let port: UInt16

    init(handler: @escaping Handler) throws {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(bound == 0 && listen(descriptor, 8) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
        let listener = descriptor
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                serve(connection, handler)
            }
        }
    }

    var paths: [String] {
        lock.lock()
        defer { lock.unlock() }
        return seen
    }

    func stop() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        close(descriptor)
    }

    private func serve(_ connection: Int32, _ handler: Handler) {
        defer { close(connection) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        func fill() -> Bool {
            let count = read(connection, &chunk, chunk.count)
            guard count > 0 else { return false }
            buffer += chunk[0..<count]
            return true
        }
        let separator = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            guard fill() else { return }
            headerEnd = buffer.indices.dropLast(3).first { Array(buffer[$0..<$0 + 4]) == separator }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let line = head[0].split(separator: " ")
        var headers: [String: String] = [:]
        for field in head.dropFirst() {
            guard let colon = field.firstIndex(of: ":") else { continue }
            headers[field[..<colon].lowercased()] = field[field.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body = Array(buffer[(headerEnd! + 4)...])
        if let length = headers["content-length"].flatMap(Int.init) {
            while body.count < length {
                buffer = []
                guard fill() else { return }
                body += buffer
            }
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            body = Self.dechunk(&body) {
                buffer = []
                return fill() ? buffer : nil
            }
        }
        lock.lock()
        seen.append(String(line[1]))
        lock.unlock()
        let (status, answerHeaders, answer) = handler(
            Request(method: String(line[0]), path: String(line[1]), headers: headers, body: body))
        var text = "HTTP/1.1 \(status) X\r\nContent-Length: \(answer.count)\r\nConnection: close\r\n"
        for (name, value) in answerHeaders { text += "\(name): \(value)\r\n" }
        let bytes = Array((text + "\r\n").utf8) + answer
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            written += count
        }
    }

    /// The body of a chunked transfer: `pending` holds what was read so far.
    private static func dechunk(_ pending: inout [UInt8], more: () -> [UInt8]?) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            while !pending.contains(UInt8(ascii: "\n")) {
                guard let next = more() else { return body }
                pending += next
            }
            let newline = pending.firstIndex(of: UInt8(ascii: "\n"))!
            let sizeText = String(decoding: pending[0..<newline], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard let size = Int(sizeText.split(separator: ";")[0], radix: 16) else { return body }
            pending.removeFirst(newline + 1)
            if size == 0 { return body }
            while pending.count < size + 2 {
                guard let next = more() else { return body }
                pending += next
            }
            body += pending[0..<size]
            pending.removeFirst(size + 2)
        }
    }
}
