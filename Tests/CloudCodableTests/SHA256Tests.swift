import Testing

@testable import CloudCodable

/// SHA-256 against FIPS 180-2's examples: the hasher the package uses
/// (the platform's where there is one) and the Swift one, whole and fed
/// in pieces that cross the 64-byte blocks.
@Suite("SHA-256")
struct SHA256Tests {
    static let vectors: [(message: [UInt8], digest: String)] = [
        (Array("abc".utf8), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ([], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (
            Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (
            Array(repeating: UInt8(ascii: "a"), count: 1_000_000),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        ),
    ]

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test("the package's hasher and the Swift one give the standard's digests, however the message is fed")
    func vectors() {
        for (message, digest) in Self.vectors {
            #expect(Self.hex(SHA256.hash(message)) == digest)
            #expect(Self.hex(PortableSHA256.hash(message)) == digest)
            for piece in [1, 63, 65, 1000] where piece > 1 || message.count < 1000 {
                var platform = SHA256()
                var portable = PortableSHA256()
                for start in stride(from: 0, to: message.count, by: piece) {
                    let part = message[start..<min(message.count, start + piece)]
                    platform.update(part)
                    portable.update(part)
                }
                #expect(Self.hex(platform.finalize()) == digest, "pieces of \(piece)")
                #expect(Self.hex(portable.finalize()) == digest, "pieces of \(piece)")
            }
        }
    }
}
