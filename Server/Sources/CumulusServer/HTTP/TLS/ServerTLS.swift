import Foundation
import NIOSSL

/// The record server's TLS: a certificate chain and the private key of its
/// first certificate, checked when made so that a bad file stops the
/// server before it listens.
///
/// ```swift
/// var configuration = ServerConfiguration(host: "0.0.0.0", port: 8443, logger: logger)
/// configuration.tls = try ServerTLS(certificateChainFile: "/etc/cumulus/chain.pem", privateKeyFile: "/etc/cumulus/key.pem")
/// ```
public struct ServerTLS: Sendable {
    /// The configuration every connection's TLS handler is made from.
    public let configuration: TLSConfiguration

    /// TLS from PEM files: the certificate chain (the server's certificate
    /// first, then its intermediates) and the unencrypted private key.
    ///
    /// - Throws: ``ServerTLSError`` naming the file that is missing,
    ///   unreadable or not PEM, or saying that the key is not the
    ///   certificate's.
    public init(certificateChainFile: String, privateKeyFile: String) throws(ServerTLSError) {
        let chainBytes = try Self.contents(of: certificateChainFile, what: "certificate")
        let keyBytes = try Self.contents(of: privateKeyFile, what: "private key")
        try self.init(
            certificateChainPEM: chainBytes, privateKeyPEM: keyBytes,
            names: (certificateChainFile, privateKeyFile))
    }

    /// TLS from PEM text already read: the certificate chain and the
    /// unencrypted private key.
    public init(certificateChainPEM: [UInt8], privateKeyPEM: [UInt8]) throws(ServerTLSError) {
        try self.init(
            certificateChainPEM: certificateChainPEM, privateKeyPEM: privateKeyPEM,
            names: ("the certificate chain", "the private key"))
    }

    private init(certificateChainPEM: [UInt8], privateKeyPEM: [UInt8], names: (chain: String, key: String))
        throws(ServerTLSError)
    {
        guard let chain = try? NIOSSLCertificate.fromPEMBytes(certificateChainPEM), !chain.isEmpty else {
            throw ServerTLSError("The TLS certificate file '\(names.chain)' holds no PEM certificate.")
        }
        guard let key = try? NIOSSLPrivateKey(bytes: privateKeyPEM, format: .pem) else {
            throw ServerTLSError("The TLS key file '\(names.key)' holds no unencrypted PEM private key.")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        // The context is what checks that the key is the certificate's.
        guard (try? NIOSSLContext(configuration: configuration)) != nil else {
            throw ServerTLSError(
                "The TLS key in '\(names.key)' is not the key of the first certificate in '\(names.chain)'.")
        }
        self.configuration = configuration
    }

    private static func contents(of path: String, what: String) throws(ServerTLSError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ServerTLSError("The TLS \(what) file '\(path)' does not exist.")
        }
        guard !isDirectory.boolValue, let data = FileManager.default.contents(atPath: path) else {
            throw ServerTLSError("The TLS \(what) file '\(path)' cannot be read.")
        }
        return Array(data)
    }
}

/// A TLS certificate or key the server cannot use.
public struct ServerTLSError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the file.
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
