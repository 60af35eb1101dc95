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

/// A model that keeps its keyed containers (the encoder's and the
/// decoder's) after it is done with them: threads reuse their coders from
/// one record to the next, and a kept container must neither write into
/// nor read from a later record.
struct KeepsItsContainers: CloudCodable {
    final class Kept: @unchecked Sendable {
        // Safety: the tests touch it from one thread.
        var encoding: KeyedEncodingContainer<CodingKeys>?
        var decoding: KeyedDecodingContainer<CodingKeys>?
        var keeps = false
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
        if Self.kept.keeps { Self.kept.decoding = container }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(secret, forKey: .secret)
        if Self.kept.keeps { Self.kept.encoding = container }
    }
}

@Suite("Kept containers", .serialized)
struct KeptContainerTests {
    @Test("records coded one after another on a thread stay apart")
    func reusedRecordsStayApart() throws {
        KeepsItsContainers.kept = .init()
        for i in 0..<50 {
            let model = KeepsItsContainers(id: "m\(i)", secret: "s\(i)")
            let record = try RecordEncoder().encode(model)
            #expect(record.fields.count == 2)
            #expect(record["secret"] == .string("s\(i)"))
            let decoded = try RecordDecoder().decode(KeepsItsContainers.self, from: record)
            #expect(decoded.secret == "s\(i)")
        }
    }

    @Test("an encoding container kept by a model never writes into a later record")
    func keptEncodingContainer() throws {
        KeepsItsContainers.kept = .init()
        KeepsItsContainers.kept.keeps = true
        _ = try RecordEncoder().encode(KeepsItsContainers(id: "a", secret: "first"))
        var kept = try #require(KeepsItsContainers.kept.encoding)
        KeepsItsContainers.kept = .init()

        // Written between records: goes nowhere.
        try kept.encode("leaked", forKey: .secret)
        let second = try RecordEncoder().encode(KeepsItsContainers(id: "b", secret: "second"))
        #expect(second["secret"] == .string("second"))
        #expect(second.fields.count == 2)

        // Written while another record is being encoded on this thread.
        struct WritesThroughKept: CloudCodable {
            nonisolated(unsafe) static var target: KeyedEncodingContainer<KeepsItsContainers.CodingKeys>?
            enum CodingKeys: String, CodingKey { case secret }
            var cloudMetadata: RecordMetadata?
            var cloudIdentifier: String { "w" }
            init() {}
            init(from decoder: any Decoder) throws {}
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: KeepsItsContainers.CodingKeys.self)
                try container.encode("own", forKey: .secret)
                try Self.target?.encode("leaked", forKey: .secret)
            }
        }
        WritesThroughKept.target = kept
        let third = try RecordEncoder().encode(WritesThroughKept())
        WritesThroughKept.target = nil
        #expect(third["secret"] == .string("own"))
    }

    @Test("a decoding container kept by a model never reads a later record")
    func keptDecodingContainer() throws {
        KeepsItsContainers.kept = .init()
        let first = try RecordEncoder().encode(KeepsItsContainers(id: "a", secret: "first"))
        let second = try RecordEncoder().encode(KeepsItsContainers(id: "b", secret: "second"))
        KeepsItsContainers.kept.keeps = true
        _ = try RecordDecoder().decode(KeepsItsContainers.self, from: first)
        let kept = try #require(KeepsItsContainers.kept.decoding)
        KeepsItsContainers.kept = .init()

        let decoded = try RecordDecoder().decode(KeepsItsContainers.self, from: second)
        #expect(decoded.secret == "second")
        // The kept container's record is done: it finds nothing, whatever
        // the thread decodes now.
        #expect(throws: DecodingError.self) { try kept.decode(String.self, forKey: .secret) }
        #expect(!kept.contains(.secret))
        #expect(kept.allKeys.isEmpty)
    }

    @Test("a kept container outlives everything else and stays safe to use")
    func keptContainerOutlivesItsCoder() throws {
        KeepsItsContainers.kept = .init()
        KeepsItsContainers.kept.keeps = true
        // On a thread of its own, so that the thread's cached coders go away.
        let thread = Thread {
            let record = try? RecordEncoder().encode(KeepsItsContainers(id: "a", secret: "first"))
            if let record { _ = try? RecordDecoder().decode(KeepsItsContainers.self, from: record) }
        }
        thread.start()
        while !thread.isFinished { Thread.sleep(forTimeInterval: 0.001) }
        var encoding = try #require(KeepsItsContainers.kept.encoding)
        let decoding = try #require(KeepsItsContainers.kept.decoding)
        KeepsItsContainers.kept = .init()
        try encoding.encode("late", forKey: .secret)
        #expect(encoding.codingPath.isEmpty)
        #expect(throws: DecodingError.self) { try decoding.decode(String.self, forKey: .id) }
    }
}

/// A model whose top level is written through containers of two key types,
/// as a subclass and its superclass would write it.
struct TwoKeyTypes: CloudCodable, Equatable {
    enum BaseKeys: String, CodingKey { case id, created }
    enum OwnKeys: String, CodingKey { case title, count }

    var id: String
    var created: Date
    var title: String
    var count: Int
    var cloudMetadata: RecordMetadata?
    var cloudIdentifier: String { id }

    init(id: String, created: Date, title: String, count: Int) {
        self.id = id
        self.created = created
        self.title = title
        self.count = count
    }

    init(from decoder: any Decoder) throws {
        let base = try decoder.container(keyedBy: BaseKeys.self)
        let own = try decoder.container(keyedBy: OwnKeys.self)
        id = try base.decode(String.self, forKey: .id)
        title = try own.decode(String.self, forKey: .title)
        created = try base.decode(Date.self, forKey: .created)
        count = try own.decode(Int.self, forKey: .count)
    }

    func encode(to encoder: any Encoder) throws {
        var base = encoder.container(keyedBy: BaseKeys.self)
        var own = encoder.container(keyedBy: OwnKeys.self)
        try base.encode(id, forKey: .id)
        try own.encode(title, forKey: .title)
        try base.encode(created, forKey: .created)
        try own.encode(count, forKey: .count)
    }
}

extension KeptContainerTests {
    @Test("containers of several key types for one record, record after record")
    func severalKeyTypes() throws {
        for i in 0..<20 {
            let model = TwoKeyTypes(
                id: "m\(i)", created: Date(timeIntervalSince1970: Double(i)), title: "t\(i)", count: i)
            let record = try RecordEncoder().encode(model)
            #expect(record.fields.count == 4)
            #expect(record["count"] == .int64(Int64(i)))
            #expect(try RecordDecoder().decode(TwoKeyTypes.self, from: record) == model)
        }
    }
}
