import Foundation
import Testing

@testable import Cumulus

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A loopback TCP socket bound to a free port; `listening` makes it accept
/// connections into its backlog without ever answering.
private func loopbackSocket(listening: Bool) throws -> (descriptor: Int32, port: UInt16) {
    #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    try #require(descriptor >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    try #require(bound == 0)
    if listening { try #require(listen(descriptor, 8) == 0) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
    }
    try #require(named == 0)
    return (descriptor, UInt16(bigEndian: address.sin_port))
}

/// A loopback port that nothing listens on: connections to it are refused.
func closedPort() throws -> UInt16 {
    let (descriptor, port) = try loopbackSocket(listening: false)
    close(descriptor)
    return port
}

@Suite("URLSessionTransport")
struct RemoteTransportTests {
    @Test("a refused connection is a network failure whose reason names no URL")
    func refused() async throws {
        let port = try closedPort()
        let url = URL(string: "http://127.0.0.1:\(port)/database/1/c/development/private/zones/list?ckAPIToken=SECRET")!
        let error = try await #require(throws: CloudError.self) {
            _ = try await URLSessionTransport().send(CloudHTTPRequest(method: "GET", url: url, timeout: .seconds(30)))
        }
        #expect(error.code == .networkFailure)
        #expect(error.isTransient)
        #expect(!error.reason.contains("SECRET"))
        #expect(!error.reason.contains("127.0.0.1"))
    }

    @Test("a server that never answers times out as a network failure")
    func timeout() async throws {
        let (descriptor, port) = try loopbackSocket(listening: true)
        defer { close(descriptor) }
        let url = URL(string: "http://127.0.0.1:\(port)/poll?ckWebAuthToken=SECRET")!
        let error = try await #require(throws: CloudError.self) {
            _ = try await URLSessionTransport().send(CloudHTTPRequest(method: "GET", url: url, timeout: .seconds(1)))
        }
        #expect(error.code == .networkFailure)
        #expect(error.reason.contains("timed out"))
        #expect(!error.reason.contains("SECRET"))
    }

    @Test("cancelling the task cancels the request")
    func cancellation() async throws {
        let (descriptor, port) = try loopbackSocket(listening: true)
        defer { close(descriptor) }
        let url = URL(string: "http://127.0.0.1:\(port)/poll")!
        let task = Task {
            try await URLSessionTransport().send(CloudHTTPRequest(method: "GET", url: url, timeout: .seconds(600)))
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { _ = try await task.value }
    }

    @Test("URL errors map to network failures by code alone")
    func mapping() {
        let url = URL(string: "https://example.com/?ckAPIToken=SECRET")!
        let error = URLSessionTransport.networkFailure(
            for: URLError(.networkConnectionLost, userInfo: [NSURLErrorFailingURLErrorKey: url]))
        #expect(error.code == .networkFailure)
        #expect(error.reason == "the connection was lost (URLError \(URLError.Code.networkConnectionLost.rawValue))")
    }

    @Test("response headers are found without regard to case")
    func headerCase() {
        let response = CloudHTTPResponse(status: 200, headers: ["Retry-After": "3"])
        #expect(response.header("retry-after") == "3")
        #expect(response.header("Content-Type") == nil)
    }
}
