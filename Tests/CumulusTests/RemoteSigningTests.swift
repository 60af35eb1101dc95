import CloudCodable
import Foundation
import Testing

@testable import Cumulus

/// A signer whose "signature" is the message itself, so that tests can read
/// back what was signed.
struct EchoSigner: CloudRequestSigner {
    var keyID = "key-1"
    func signature(for message: [UInt8]) throws -> [UInt8] { message }
}

/// A signer that always fails, with the key in its error's text.
struct FailingSigner: CloudRequestSigner {
    struct KeyError: Error, CustomStringConvertible {
        var description: String { "cannot use key SECRET-KEY-MATERIAL" }
    }
    var keyID = "key-2"
    func signature(for message: [UInt8]) throws -> [UInt8] { throw KeyError() }
}

@Suite("SHA-256")
struct RemoteSHA256Tests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined()
    }

    @Test("the FIPS 180-4 examples")
    func fipsVectors() {
        #expect(hex(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let long =
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(
            hex(SHA256.hash(Array(long.utf8))) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test("a million a's, fed in uneven pieces")
    func millionA() {
        var hasher = SHA256()
        var remaining = 1_000_000
        var piece = 1
        while remaining > 0 {
            let count = min(piece, remaining)
            hasher.update(repeatElement(UInt8(ascii: "a"), count: count))
            remaining -= count
            piece = piece % 997 + 13
        }
        #expect(hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test(
        "lengths around the padding boundary",
        arguments: [
            (55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"),
            (56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"),
            (63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"),
            (64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"),
            (65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"),
            (119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"),
            (120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"),
        ])
    func boundaries(length: Int, digest: String) {
        #expect(hex(SHA256.hash(repeatElement(UInt8(ascii: "x"), count: length))) == digest)
    }
}

@Suite("Request signing")
struct RemoteSigningTests {
    @Test("the date header: UTC, whole seconds, no fractions")
    func dates() {
        #expect(
            CloudRequestSigning.dateString(for: Date(timeIntervalSince1970: 1_700_000_000.75)) == "2023-11-14T22:13:20Z"
        )
        #expect(CloudRequestSigning.dateString(for: Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
        #expect(CloudRequestSigning.dateString(for: Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
        #expect(CloudRequestSigning.date(from: "2023-11-14T22:13:20Z") == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(CloudRequestSigning.date(from: "2000-02-29T00:00:00Z") == Date(timeIntervalSince1970: 951_782_400))
        #expect(CloudRequestSigning.date(from: "2001-02-29T00:00:00Z") == nil)
        #expect(CloudRequestSigning.date(from: "2023-11-14T22:13:20.5Z") == nil)
        #expect(CloudRequestSigning.date(from: "2023-11-14 22:13:20Z") == nil)
        #expect(CloudRequestSigning.date(from: "") == nil)
    }

    @Test("the message is date, body hash and subpath")
    func message() {
        let message = CloudRequestSigning.message(date: "2023-11-14T22:13:20Z", body: [], subpath: "/database/1/c/x")
        #expect(
            String(decoding: message, as: UTF8.self)
                == "2023-11-14T22:13:20Z:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:/database/1/c/x")
        #expect(CloudRequestSigning.bodyHash(Array("abc".utf8)) == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
    }

    @Test("a server-key request carries the key, the date and the signature of its message")
    func signedPost() async throws {
        let zone = ZoneID(zoneName: "_defaultZone")
        let transport = RecordingTransport(answering: .records([]))
        let database = RemoteFixture.database(
            transport, scope: .public, credentials: .serverKey(apiToken: nil, signer: EchoSigner()))
        _ = try await database.lookupRecords([], zoneID: zone, desiredKeys: nil)
        let request = try #require(transport.requests.first)
        let body = try #require(request.body)
        let subpath = "/database/1/iCloud.com.example.notes/production/public/records/lookup"
        #expect(request.headers[CloudRequestSigning.keyIDHeader] == "key-1")
        #expect(request.headers[CloudRequestSigning.dateHeader] == "2023-11-14T22:13:20Z")
        let signature = try #require(request.headers[CloudRequestSigning.signatureHeader])
        let signed = try #require(Data(base64Encoded: signature))
        #expect(
            String(decoding: signed, as: UTF8.self)
                == "2023-11-14T22:13:20Z:\(CloudRequestSigning.bodyHash(body)):\(subpath)")
        #expect(request.url.query == nil)
        #expect(request.url.path == "/prefix" + subpath)
    }

    @Test("a signed GET hashes the empty body; an API token goes in the query")
    func signedGet() async throws {
        let transport = RecordingTransport(answering: .user(UserIdentity(userRecordName: "_server")))
        let database = RemoteFixture.database(
            transport, scope: .public, credentials: .serverKey(apiToken: RemoteFixture.apiToken, signer: EchoSigner()))
        _ = try await database.currentUser()
        let request = try #require(transport.requests.first)
        let signed = try #require(
            request.headers[CloudRequestSigning.signatureHeader].flatMap { Data(base64Encoded: $0) })
        #expect(
            String(decoding: signed, as: UTF8.self)
                == "2023-11-14T22:13:20Z:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
                + ":/database/1/iCloud.com.example.notes/production/public/users/current")
        #expect(RemoteFixture.query(of: request.url) == ["ckAPIToken": RemoteFixture.apiToken])
    }

    @Test("a signer that fails fails the request, without its error's text")
    func failingSigner() async throws {
        let transport = RecordingTransport(answering: .zones([]))
        let database = RemoteFixture.database(
            transport, scope: .public, credentials: .serverKey(apiToken: nil, signer: FailingSigner()))
        let error = try await #require(throws: CloudError.self) { _ = try await database.listZones() }
        #expect(error.code == .authenticationFailed)
        #expect(!String(describing: error).contains("SECRET"))
        #expect(transport.requests.isEmpty)
    }
}
