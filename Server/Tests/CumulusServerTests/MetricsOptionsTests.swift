import ArgumentParser
import Foundation
import Testing

@testable import CumulusServer
@testable import cumulus

@Suite("Metrics options of cumulus serve")
struct MetricsOptionsTests {
    static let token = "metrics-token-0123456789abcdef"

    /// A file holding `text`, deleted when `body` returns.
    @discardableResult
    static func withFile<T>(_ text: String, _ body: (String) throws -> T) throws -> T {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-token-\(UUID().uuidString)")
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try body(file.path)
    }

    @Test("without an option, /metrics is off and no registry is made")
    func off() throws {
        let options = try ServeCommand.parse([]).metrics
        #expect(try options.listenerAddress() == nil)
        #expect(try options.token(environment: [:]) == nil)
    }

    @Test("--metrics-address takes host:port, an IPv6 host in brackets; anything else is refused")
    func addresses() throws {
        let parsed = [
            ("127.0.0.1:9464", "127.0.0.1", 9464), ("[::1]:9464", "::1", 9464),
            ("metrics.internal:0", "metrics.internal", 0),
        ]
        for (text, host, port) in parsed {
            let address = try #require(try ServeCommand.parse(["--metrics-address", text]).metrics.listenerAddress())
            #expect(address.host == host && address.port == port, "\(text)")
        }
        for text in ["9464", ":9464", "host:", "host:65536", "host:-1", "a b:1", "[]:1"] {
            #expect(throws: (any Error).self, "\(text)") { try ServeCommand.parse(["--metrics-address", text]) }
        }
    }

    @Test("the token comes from --metrics-token-file or CUMULUS_METRICS_TOKEN, not both, and is never shown")
    func tokens() throws {
        try Self.withFile(Self.token + "\n") { path in
            let options = try ServeCommand.parse(["--metrics-token-file", path]).metrics
            #expect(try options.token(environment: [:]) == Self.token)
            do {
                _ = try options.token(environment: [MetricsOptions.tokenVariable: Self.token])
                Issue.record("a token in both places was taken")
            } catch {
                #expect(!"\(error)".contains(Self.token))
            }
        }
        let bare = try ServeCommand.parse([]).metrics
        #expect(try bare.token(environment: [MetricsOptions.tokenVariable: Self.token]) == Self.token)
        #expect(try bare.token(environment: [MetricsOptions.tokenVariable: ""]) == nil)
        for weak in [
            "short", "with a space in it, long enough", String(repeating: "x", count: 4097), "tökentökentökentöken",
        ] {
            do {
                _ = try bare.token(environment: [MetricsOptions.tokenVariable: weak])
                Issue.record("the token '\(weak)' was taken")
            } catch {
                #expect(!"\(error)".contains(weak))
            }
            try Self.withFile(weak) { path in
                #expect(throws: (any Error).self) { try ServeCommand.parse(["--metrics-token-file", path]) }
            }
        }
        #expect(throws: (any Error).self) {
            try ServeCommand.parse(["--metrics-token-file", "/nonexistent/cumulus-metrics-token"])
        }
    }

    @Test("a token alone serves /metrics on the main listener; with an address, on a listener of its own")
    func endpoints() throws {
        try Self.withFile(Self.token) { path in
            let main = try ServeCommand.parse(["--metrics-token-file", path]).metrics
            let onMain = try #require(try main.configuration(logger: quietLogger).endpoint)
            #expect(onMain.listener == nil)
            #expect(onMain.admits(authorization: "Bearer \(Self.token)"))
            #expect(!onMain.admits(authorization: nil))

            let own = try ServeCommand.parse(["--metrics-token-file", path, "--metrics-address", "127.0.0.1:9464"])
            let onOwn = try #require(try own.metrics.configuration(logger: quietLogger).endpoint)
            #expect(onOwn.listener?.host == "127.0.0.1" && onOwn.listener?.port == 9464)
            #expect(!onOwn.admits(authorization: nil))
        }
        let open = try ServeCommand.parse(["--metrics-address", "127.0.0.1:0"]).metrics
        let endpoint = try #require(try open.configuration(logger: quietLogger).endpoint)
        #expect(endpoint.listener?.port == 0 && endpoint.admits(authorization: nil))
    }
}
