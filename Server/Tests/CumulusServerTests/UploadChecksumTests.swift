import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

/// An upload's `fileChecksum` is the SHA-256 of its bytes, whichever
/// SHA-256 the server hashes with and however the body is chunked.
@Suite("Upload checksums")
struct UploadChecksumTests {
    /// FIPS 180-2's vectors: "abc", the two-block message, and a million "a".
    static let vectors: [(bytes: [UInt8], hex: String)] = [
        (Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (
            Array(repeating: UInt8(ascii: "a"), count: 1_000_000),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        ),
    ]

    @Test("the checksum of an upload is the SHA-256 of its bytes", arguments: TestStore.available)
    func checksumsAreSHA256(_ store: TestStore) async throws {
        try await HTTPAssetTests.withServer(store) { server, _ in
            let alice = try await server.database(signedInAs: "alice")
            for (index, vector) in Self.vectors.enumerated() {
                let saved = try await AssetHTTP.savePhoto(
                    "photo-\(index)", bytes: vector.bytes, in: alice, on: server.baseURL)
                guard case .asset(let asset)? = saved["image"] else {
                    Issue.record("the saved record has no asset")
                    continue
                }
                let digest = try #require(asset.fileChecksum.flatMap { Data(base64Encoded: $0) })
                #expect(digest.map { String(format: "%02x", $0) }.joined() == vector.hex)
                #expect(asset.size == Int64(vector.bytes.count))
            }
        }
    }
}
