import Cumulus
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP server on loopback that answers every request by a script, with
/// blocking sockets on threads of its own (never the tasks' pool): a body
/// without end, no answer at all, a byte now and then, or an answer that
/// comes late. It counts the bytes it managed to send.
final class ScriptedHTTPServer: Sendable {
    enum Script: Sendable {
        /// A 200 whose body never ends (until `cap` bytes went out).
        case endless(cap: Int)
        /// Reads the request and never answers.
        case stall
        /// A 200 whose body comes one byte every interval, without end.
        case drip(every: Duration)
        /// `document` as a 200 with its length, after `delay`.
        case late(Duration, document: String)
    }

    /// The port it listens on, on 127.0.0.1.
    let port: Int
    private let listener: Int32
    private let script: Script
    private let sent = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)

    /// The longest any connection is kept, whatever its script.
    private static let longest: Duration = .seconds(30)

    init(_ script: Script) throws {
        self.script = script
        let socket = Self.makeSocket()
        guard socket >= 0 else { throw CloudError(.internalError, reason: "no socket") }
        var reuse: Int32 = 1
        setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        guard let bound = bindToLoopback(socket), listen(socket, 16) == 0 else {
            close(socket)
            throw CloudError(.internalError, reason: "cannot listen on loopback")
        }
        listener = socket
        port = bound
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// The URL of the document.
    var url: String { "http://127.0.0.1:\(port)/jwks" }

    /// The body bytes sent so far, on every connection.
    var bytesSent: Int { sent.load(ordering: .relaxed) }

    /// How many connections were accepted.
    var connectionCount: Int { connections.load(ordering: .relaxed) }

    /// Stops accepting and ends every connection soon.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        // Wakes the accepting thread, which closes the socket as it leaves.
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func makeSocket() -> Int32 {
        #if canImport(Glibc)
            Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
    }

    private func acceptLoop() {
        defer { close(listener) }
        while !stopped.load(ordering: .relaxed) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            connections.add(1, ordering: .relaxed)
            Thread.detachNewThread { [self] in
                serve(connection)
                close(connection)
            }
        }
    }

    private func serve(_ connection: Int32) {
        let until = ContinuousClock.now + Self.longest
        guard readHead(connection) else { return }
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
        switch script {
        case .endless(let cap):
            guard write(connection, Array(head.utf8), counting: false) else { return }
            let chunk = [UInt8](repeating: UInt8(ascii: " "), count: 64 * 1024)
            while !stopped.load(ordering: .relaxed), bytesSent < cap, ContinuousClock.now < until,
                write(connection, chunk, counting: true)
            {}
        case .stall:
            while !stopped.load(ordering: .relaxed), ContinuousClock.now < until { Thread.sleep(forTimeInterval: 0.05) }
        case .drip(let interval):
            guard write(connection, Array(head.utf8), counting: false) else { return }
            while !stopped.load(ordering: .relaxed), ContinuousClock.now < until,
                write(connection, [UInt8(ascii: " ")], counting: true)
            {
                Thread.sleep(forTimeInterval: Self.seconds(interval))
            }
        case .late(let delay, let document):
            let answerAt = ContinuousClock.now + delay
            while !stopped.load(ordering: .relaxed), ContinuousClock.now < answerAt {
                Thread.sleep(forTimeInterval: 0.02)
            }
            let bytes = Array(document.utf8)
            let lengthHead =
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(bytes.count)\r\n"
                + "Connection: close\r\n\r\n"
            if write(connection, Array(lengthHead.utf8), counting: false) {
                _ = write(connection, bytes, counting: true)
            }
        }
    }

    /// Reads until the end of the request's head; `false` when the client left first.
    private func readHead(_ connection: Int32) -> Bool {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.containsHeadEnd {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            received += buffer.prefix(count)
        }
        return true
    }

    /// Sends all of `bytes`; `false` once the client is gone.
    private func write(_ connection: Int32, _ bytes: [UInt8], counting: Bool) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                send(connection, buffer.baseAddress! + offset, buffer.count - offset, Self.noSignal)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
            if counting { sent.add(count, ordering: .relaxed) }
        }
        return true
    }

    #if canImport(Glibc)
        private static let noSignal = Int32(MSG_NOSIGNAL)
    #else
        private static let noSignal: Int32 = 0
    #endif

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension [UInt8] {
    /// Whether the bytes hold the blank line that ends an HTTP head.
    fileprivate var containsHeadEnd: Bool {
        guard count >= 4 else { return false }
        for index in 0...(count - 4)
        where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return true
        }
        return false
    }
}
