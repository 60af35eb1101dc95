import ArgumentParser
import Cumulus
import CumulusServer
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import cumulus

/// `cumulus serve` with TLS: requests answered over TLS on loopback, plain
/// HTTP refused, and files that cannot serve refused before listening.
@Suite("TLS")
struct HTTPTLSTests {
    @Test("a request is answered over TLS, and the notification URL says https")
    func answeredOverTLS() async throws {
        try await HTTPTestServer.with(configuration: try Self.tlsConfiguration()) { server in
            let caller = try #require(
                try await TLSClient.send(
                    "POST \(server.path("users/caller"))?\(server.userQueryString) HTTP/1.1\r\n"
                        + "Host: localhost:\(server.port)\r\nContent-Length: 0\r\n\r\n", port: server.port))
            #expect(caller.status == 200)
            #expect(caller.json["userRecordName"] as? String == server.userRecordName)

            let body = #"{"apnsEnvironment":"development"}"#
            let token = try #require(
                try await TLSClient.send(
                    "POST \(server.path("tokens/create"))?\(server.userQueryString) HTTP/1.1\r\n"
                        + "Host: localhost:\(server.port)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)",
                    port: server.port))
            // On the listening address, not the Host header's name.
            let url = try #require(token.json["webcourierURL"] as? String)
            #expect(url.hasPrefix("https://127.0.0.1:\(server.port)/notifications/1/"), "\(url)")
        }
    }

    @Test("plain HTTP to the TLS port gets no HTTP answer and a closed connection; TLS still works after")
    func plainHTTPRefused() async throws {
        try await HTTPTestServer.with(configuration: try Self.tlsConfiguration()) { server in
            let plain = try await RawHTTPConnection.connect(port: server.port)
            try await plain.send("GET /share/nothing HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(try await plain.waitForClose(within: .seconds(30)))
            #expect(!plain.unread.hasPrefix("HTTP/"))
            await plain.close()

            let answer = try await TLSClient.send(
                "GET /share/nothing HTTP/1.1\r\nHost: localhost\r\n\r\n", port: server.port)
            #expect(answer?.status == 404)
        }
    }

    @Test("a missing, unreadable, non-PEM or mismatched file is refused with a message naming it")
    func badFilesRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-tls-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = try TestCertificates.write(to: directory)
        let missing = directory.appendingPathComponent("missing.pem").path
        let cases: [(certificate: String, key: String, message: String)] = [
            (missing, files.key, "'\(missing)' does not exist"),
            (files.certificate, missing, "'\(missing)' does not exist"),
            (directory.path, files.key, "'\(directory.path)' cannot be read"),
            (files.key, files.key, "'\(files.key)' holds no PEM certificate"),
            (files.certificate, files.certificate, "'\(files.certificate)' holds no unencrypted PEM private key"),
            (files.certificate, files.otherKey, "is not the key of the first certificate in '\(files.certificate)'"),
        ]
        for (certificate, key, message) in cases {
            #expect {
                _ = try ServerTLS(certificateChainFile: certificate, privateKeyFile: key)
            } throws: { ($0 as? ServerTLSError)?.message.contains(message) == true }
            do {
                _ = try ServeCommand.parse(["--tls-certificate", certificate, "--tls-key", key])
                Issue.record("\(certificate), \(key) was accepted")
            } catch {
                let text = ServeCommand.message(for: error)
                #expect(text.contains(message), "\(text)")
            }
        }
        #expect(throws: (any Error).self) { try ServeCommand.parse(["--tls-certificate", files.certificate]) }
        #expect(throws: (any Error).self) { try ServeCommand.parse(["--tls-key", files.key]) }
        let good = try ServeCommand.parse(["--tls-certificate", files.certificate, "--tls-key", files.key])
        #expect(try good.network.tls() != nil)
        #expect(try ServeCommand.parse([]).network.tls() == nil)
    }

    static func tlsConfiguration() throws -> ServerConfiguration {
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.tls = try ServerTLS(
            certificateChainPEM: Array(TestCertificates.certificate.utf8),
            privateKeyPEM: Array(TestCertificates.key.utf8))
        return configuration
    }
}

extension HTTPTestServer {
    /// ``userQuery`` as a query string.
    var userQueryString: String {
        "ckAPIToken=\(apiToken)&ckWebAuthToken=\(webAuthToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
    }
}

/// A TLS client on loopback that trusts the test certificate alone.
enum TLSClient {
    /// Sends `request` as written over a new TLS connection to `localhost`
    /// and returns the first response, or `nil` when the connection ends first.
    static func send(_ request: String, port: Int) async throws -> RawHTTPResponse? {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(TestCertificates.certificate.utf8)))
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var bytes: [UInt8] = []
            for try await buffer in inbound {
                bytes.append(contentsOf: buffer.readableBytesView)
                if let (response, _) = RawHTTPResponse.parse(bytes) { return response }
            }
            return nil
        }
    }
}
