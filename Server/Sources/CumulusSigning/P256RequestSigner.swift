import CloudProtocol
import Crypto

/// Signs requests with a server-to-server key: ECDSA on P-256 over SHA-256,
/// the signature in DER, as the CloudKit Web Services protocol asks.
///
/// ```swift
/// let signer = try P256RequestSigner(keyID: keyID, privateKeyPEM: pem)
/// let database = RemoteCloudDatabase(
///     configuration: .init(baseURL: url, container: "iCloud.com.example.notes", scope: .public),
///     credentials: .serverKey(apiToken: nil, signer: signer))
/// ```
public struct P256RequestSigner: CloudRequestSigner {
    /// The key's identifier on the server.
    public let keyID: String
    private let privateKey: P256.Signing.PrivateKey

    /// Creates a signer from a P-256 private key in PEM (`EC PRIVATE KEY`
    /// or PKCS #8 `PRIVATE KEY`), as `openssl ecparam -name prime256v1
    /// -genkey -noout` writes it.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) when the PEM is not a P-256
    ///   private key; its reason does not quote the key.
    public init(keyID: String, privateKeyPEM: String) throws {
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw CloudError(.badRequest, reason: "the server-to-server key is not a P-256 private key in PEM")
        }
        self.keyID = keyID
    }

    /// The PEM of the public key, which the server registers under ``keyID``.
    public var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// The DER ECDSA signature of `message`, hashed with SHA-256.
    public func signature(for message: [UInt8]) throws -> [UInt8] {
        Array(try privateKey.signature(for: message).derRepresentation)
    }
}
