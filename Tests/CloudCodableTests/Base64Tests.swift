import Foundation
import Testing

@testable import CloudCodable

@Suite("Base64")
struct Base64Tests {
    static func decode(_ text: String) -> [UInt8]? {
        wireUTF8(text).withUnsafeBufferPointer { Base64.decode($0) }
    }

    static func decodeData(_ text: String) -> Data? {
        wireUTF8(text).withUnsafeBufferPointer { Base64.decodeData($0) }
    }

    @Test func roundTripsAndMatchesFoundation() throws {
        var random = WireRandom(seed: 21)
        for length in Array(0..<130) + [1023, 1024, 1025, 4096] {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            let text = Base64.encodeToString(data)
            #expect(text == data.base64EncodedString())
            #expect(Base64.encodedCount(length) == text.utf8.count)
            #expect(Self.decode(text) == Array(data))
            #expect(Self.decodeData(text) == data)
            // Unpadded input is accepted too.
            let unpadded = String(text.prefix { $0 != "=" })
            #expect(Self.decode(unpadded) == Array(data))
        }
    }

    @Test func knownVectors() {
        // RFC 4648 §10.
        let vectors = [
            "": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=",
            "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.encodeToString(Data(plain.utf8)) == encoded)
            #expect(Self.decode(encoded) == wireUTF8(plain))
        }
        #expect(Self.decode("+/+/") == [0xFB, 0xFF, 0xBF])
    }

    @Test(arguments: [
        "A", "AAAAA", "Zg=", "Zg===", "Z===", "====", "=", "Zg==Zg==", "Zm9v\n", " Zm9v", "Zm 9v", "Zm9-", "Zm9_",
        "Zm9v!", "Zh==", "Zm9=", "Zm8=A", "é", "Zm\u{0}v",
    ])
    func rejects(text: String) {
        #expect(Self.decode(text) == nil)
        #expect(Self.decodeData(text) == nil)
    }

    @Test func rejectsEveryByteOutsideTheAlphabet() {
        let alphabet = Set(wireUTF8("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"))
        for byte in UInt8.min...UInt8.max where !alphabet.contains(byte) {
            let text: [UInt8] = [UInt8(ascii: "Q"), UInt8(ascii: "U"), byte, UInt8(ascii: "A")]
            #expect(text.withUnsafeBufferPointer { Base64.decode($0) } == nil, "byte \(byte)")
        }
    }
}
