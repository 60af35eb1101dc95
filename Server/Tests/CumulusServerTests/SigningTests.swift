import Crypto
import Cumulus
import CumulusSigning
import Foundation
import Testing

@Suite("P256RequestSigner")
struct SigningTests {
    let key = P256.Signing.PrivateKey()

    @Test("its signature of a request's message verifies with the public key")
    func verifies() throws {
        let signer = try P256RequestSigner(keyID: "key-1", privateKeyPEM: key.pemRepresentation)
        #expect(signer.keyID == "key-1")
        let message = CloudRequestSigning.message(
            date: "2023-11-14T22:13:20Z", body: Array(#"{"zones":[]}"#.utf8),
            subpath: "/database/1/iCloud.com.example/development/public/zones/lookup")
        let der = try signer.signature(for: message)
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: message + [0]))
        let other = P256.Signing.PrivateKey().publicKey
        #expect(!other.isValidSignature(signature, for: message))
        #expect(signer.publicKeyPEM == key.publicKey.pemRepresentation)
    }

    @Test("the body hash in the message is swift-crypto's SHA-256")
    func bodyHash() {
        let body = Array(repeating: UInt8(ascii: "q"), count: 1000)
        #expect(CloudRequestSigning.bodyHash(body) == Data(SHA256.hash(data: body)).base64EncodedString())
    }

    @Test("an EC PRIVATE KEY PEM, as openssl writes it, signs too")
    func sec1() throws {
        // A test key made for this test with `openssl ecparam -name prime256v1 -genkey -noout`.
        let pem = """
            -----BEGIN EC PRIVATE KEY-----
            MHcCAQEEIHFz5l/WSMgVHG/QKwTZrMCTccTUOvpkTxMcDqmwbq+5oAoGCCqGSM49
            AwEHoUQDQgAEaAh1VfWXH26S7J7KD3YNX4SPKWQuhssad2t506WNLEm7fkEj0PrG
            s9kYR1lZ706SbK1Blwk4i4DiAG+JAC5bXg==
            -----END EC PRIVATE KEY-----
            """
        let signer = try P256RequestSigner(keyID: "k", privateKeyPEM: pem)
        let publicKey = try P256.Signing.PublicKey(pemRepresentation: signer.publicKeyPEM)
        let der = try signer.signature(for: Array("m".utf8))
        #expect(
            publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: Array("m".utf8)))
    }

    @Test("a PEM that is not a P-256 private key is a typed error that does not quote it")
    func badKey() {
        let pem = "-----BEGIN PRIVATE KEY-----\nU0VDUkVU\n-----END PRIVATE KEY-----"
        let error = #expect(throws: CloudError.self) { try P256RequestSigner(keyID: "k", privateKeyPEM: pem) }
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains("U0VDUkVU") == false)
        #expect(throws: CloudError.self) {
            try P256RequestSigner(keyID: "k", privateKeyPEM: key.publicKey.pemRepresentation)
        }
    }
}
