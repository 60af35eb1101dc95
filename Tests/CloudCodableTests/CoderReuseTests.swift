import Foundation
import Testing

@testable import CloudCodable

/// A model that keeps its `Decoder` (and its `Encoder`) after it is done
/// with them, which Codable allows: whatever it reads through them later
/// must never be another record's data.
struct KeepsItsCoder: CloudCodable {
    final class Kept: @unchecked Sendable {
        // Safety: the tests touch it from one thread.
        var decoder: (any Decoder)?
        var encoder: (any Encoder)?
    }

    enum CodingKeys: String, CodingKey { case id, secret }

    nonisolated(unsafe) static var kept = Kept()

    var id: String
    var secret: String
    var cloudMetadata: RecordMetadata?
    var cloudIdentifier: String { id }

    init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        secret = try container.decode(String.self, forKey: .secret)
        Self.kept.decoder = decoder
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(secret, forKey: .secret)
        Self.kept.encoder = encoder
    }
}

@Suite("Coder reuse", .serialized)
struct CoderReuseTests {
    @Test("a decoder kept by a model never reads the next record")
    func keptDecoder() throws {
        let first = try RecordEncoder().encode(KeepsItsCoder(id: "a", secret: "first"))
        let second = try RecordEncoder().encode(KeepsItsCoder(id: "b", secret: "second"))
        _ = try RecordDecoder().decode(KeepsItsCoder.self, from: first)
        let kept = try #require(KeepsItsCoder.kept.decoder)
        let decoded = try RecordDecoder().decode(KeepsItsCoder.self, from: second)
        #expect(decoded.secret == "second")

        // Read again through the decoder the first model kept.
        let container = try kept.container(keyedBy: KeepsItsCoder.CodingKeys.self)
        let secret = try? container.decode(String.self, forKey: .secret)
        #expect(secret != "second")
        // And the decoder in use for later records is not the kept one.
        _ = try RecordDecoder().decode(KeepsItsCoder.self, from: first)
        let reused = (KeepsItsCoder.kept.decoder as AnyObject) === (kept as AnyObject)
        #expect(!reused)
    }

    @Test("an encoder kept by a model is not used for the next record")
    func keptEncoder() throws {
        _ = try RecordEncoder().encode(KeepsItsCoder(id: "a", secret: "first"))
        let kept = try #require(KeepsItsCoder.kept.encoder)
        let record = try RecordEncoder().encode(KeepsItsCoder(id: "b", secret: "second"))
        #expect(record["secret"] == .string("second"))
        let reused = (KeepsItsCoder.kept.encoder as AnyObject) === (kept as AnyObject)
        #expect(!reused)
    }
}
