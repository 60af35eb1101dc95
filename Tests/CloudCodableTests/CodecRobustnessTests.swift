import Foundation
import Testing

@testable import CloudCodable

/// The whole path, model → record → wire → record → model, at the edges:
/// extreme integers everywhere a model can hold them, wrong types read from
/// wire text, and damaged wire text decoded all the way to a model.
@Suite("Codec robustness")
struct CodecRobustnessTests {
    struct Integers: CloudCodable, Hashable {
        struct Inner: Codable, Hashable, Sendable {
            var int: Int
            var int8: Int8
            var int16: Int16
            var int32: Int32
            var int64: Int64
            var uint: UInt
            var uint8: UInt8
            var uint16: UInt16
            var uint32: UInt32
            var uint64: UInt64
        }

        var cloudIdentifier: String { "integers" }
        var cloudMetadata: RecordMetadata?
        var int: Int
        var int8: Int8
        var int16: Int16
        var int32: Int32
        var int64: Int64
        var uint: UInt
        var uint8: UInt8
        var uint16: UInt16
        var uint32: UInt32
        var uint64: UInt64
        var ints: [Int]
        var int8s: [Int8]
        var uint32s: [UInt32]
        var uint64s: [UInt64]
        var optional: Int64?
        var inner: Inner
        var inners: [Inner]
    }

    /// Every integer type at its extremes (UInt and UInt64 at Int64.max at
    /// the top level, their largest INT64), and at the type's own extremes
    /// inside nested JSON, which has no such limit.
    static func integers(low: Bool) -> Integers {
        let inner = Integers.Inner(
            int: low ? .min : .max, int8: low ? .min : .max, int16: low ? .min : .max,
            int32: low ? .min : .max, int64: low ? .min : .max, uint: low ? 0 : .max, uint8: low ? 0 : .max,
            uint16: low ? 0 : .max, uint32: low ? 0 : .max, uint64: low ? 0 : .max)
        return Integers(
            int: low ? .min : .max, int8: low ? .min : .max, int16: low ? .min : .max,
            int32: low ? .min : .max, int64: low ? .min : .max, uint: low ? 0 : UInt(Int64.max),
            uint8: low ? 0 : .max, uint16: low ? 0 : .max, uint32: low ? 0 : .max,
            uint64: low ? 0 : UInt64(Int64.max), ints: [.min, -1, 0, 1, .max], int8s: [.min, -1, 0, .max],
            uint32s: [0, .max], uint64s: [0, 1, UInt64(Int64.max)], optional: low ? .min : nil, inner: inner,
            inners: [inner, inner])
    }

    @Test(arguments: [true, false])
    func everyIntegerRoundTripsThroughTheWire(low: Bool) throws {
        let model = Self.integers(low: low)
        let record = try RecordEncoder().encode(model)
        #expect(try RecordDecoder().decode(Integers.self, from: record) == model)
        let wire = try WireFormat.encode(record)
        let read = try WireFormat.decodeRecord(from: wire)
        #expect(read == record)
        #expect(try RecordDecoder().decode(Integers.self, from: read) == model)
        // And through fields that are no longer wire text.
        var changed = read
        changed["extra"] = .int64(1)
        #expect(try RecordDecoder().decode(Integers.self, from: changed) == model)
    }

    @Test func unsignedBeyondInt64IsAnEncodingErrorNamingTheField() throws {
        struct Big: CloudCodable {
            var cloudIdentifier: String { "big" }
            var cloudMetadata: RecordMetadata?
            var small: Int = 1
            var value: UInt
        }
        do {
            _ = try RecordEncoder().encode(Big(value: UInt(Int64.max) + 1))
            Issue.record("encoding should fail")
        } catch let EncodingError.invalidValue(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["value"])
        }
    }

    /// Wire text whose `visits` field holds `value` of type `type`.
    static func landmarkWire(visits type: String, _ value: String) throws -> [UInt8] {
        let text = String(decoding: try WireFormat.encode(try RecordEncoder().encode(Landmark.sample())), as: UTF8.self)
        let patched = text.replacingOccurrences(
            of: #""visits":{"type":"INT64","value":42}"#, with: #""visits":{"type":"\#(type)","value":\#(value)}"#)
        #expect(patched != text)
        return Array(patched.utf8)
    }

    @Test(arguments: [
        ("STRING", #""42""#), ("DOUBLE", "4.5"), ("STRING_LIST", #"["a"]"#), ("BYTES", #""AAAA""#),
        ("TIMESTAMP_LIST", "[1]"),
    ])
    func wrongTypeInWireTextIsTypeMismatchNamingTheField(type: String, value: String) throws {
        let record = try WireFormat.decodeRecord(from: try Self.landmarkWire(visits: type, value))
        do {
            _ = try RecordDecoder().decode(Landmark.self, from: record)
            Issue.record("decoding should fail")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["visits"])
        }
    }

    @Test func integerTooLargeForThePropertyIsADecodingError() throws {
        struct Tiny: CloudCodable {
            var cloudIdentifier: String { "t" }
            var cloudMetadata: RecordMetadata?
            var visits: Int8
        }
        let wire = Array(
            #"{"recordName":"t","recordType":"Tiny","fields":{"visits":{"type":"INT64","value":300}}}"#.utf8)
        #expect(throws: DecodingError.self) {
            try RecordDecoder().decode(Tiny.self, from: try WireFormat.decodeRecord(from: wire))
        }
    }

    @Test func damagedWireTextNeverCrashesTheModelDecoder() throws {
        var random = WireRandom(seed: 7)
        let samples: [[UInt8]] = [
            try WireFormat.encode(try RecordEncoder().encode(Landmark.sample())),
            try WireFormat.encode(try RecordEncoder().encode(Everything(key: "k"))),
        ]
        for original in samples {
            // Every prefix is an error.
            for count in 0..<original.count {
                #expect(throws: (any Error).self) { try WireFormat.decodeRecord(from: Array(original[..<count])) }
            }
            for round in 0..<3_000 {
                var bytes = original
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let index = Int.random(in: 0..<bytes.count, using: &random)
                    // Mostly characters that keep the text JSON-like.
                    bytes[index] =
                        round.isMultiple(of: 2)
                        ? Array(#"0123456789-+.eE"{}[]:,\ ntfaluAZ/="#.utf8).randomElement(using: &random)!
                        : UInt8.random(in: 0...255, using: &random)
                }
                guard let record = try? WireFormat.decodeRecord(from: bytes) else { continue }
                _ = try? RecordDecoder().decode(Landmark.self, from: record)
                _ = try? RecordDecoder().decode(Everything.self, from: record)
                for (_, value) in record.fields { _ = value.type }
                _ = WireFormat.encodedSize(ofFields: record.fields)
            }
        }
    }

    @Test func damagedUntypedValuesNeverCrash() throws {
        // Dictionaries and lists that say their type by their keys, and
        // fractional timestamps, damaged: every outcome is a record or a
        // WireFormatError naming what was read, never a trap.
        let original = wireUTF8(
            #"{"recordName":"r","recordType":"T","fields":{"#
                + #""p":{"value":{"latitude":1.5,"longitude":-2,"altitude":3,"timestamp":1700000000123.75}},"#
                + #""r":{"value":{"recordName":"b","zoneID":{"zoneName":"Z"},"action":"VALIDATE"}},"#
                + #""a":{"value":{"fileChecksum":"c","size":10,"receipt":"x","downloadURL":"u"}},"#
                + #""ps":{"value":[{"latitude":1,"longitude":2},{"longitude":3,"latitude":4}]},"#
                + #""rs":{"value":[{"recordName":"a"},{"recordName":"b","action":"NONE"}]},"#
                + #""as":{"value":[{"receipt":"r"},{"fileChecksum":"c"}]},"#
                + #""t":{"type":"TIMESTAMP","value":1.70000000012375e12},"#
                + #""k":{"value":-1700000000123.5}}}"#)
        let schema: (String, String) -> FieldType? = { _, field in field == "k" ? .timestamp : nil }
        func read(_ bytes: [UInt8]) throws -> Record? {
            try WireBodyReader.read(bytes, fieldTypes: schema) { reader -> Record? in
                guard case .record(let record, _) = try reader.readRecord() else { return nil }
                try reader.expectEnd()
                return record
            }
        }
        let whole = try #require(try read(original))
        #expect(whole.fields.count == 8)
        #expect(whole["k"] == .timestamp(Milliseconds.date(-1_700_000_000_124)))
        var random = WireRandom(seed: 17)
        var decoded = 0
        for round in 0..<4_000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] =
                    round.isMultiple(of: 2)
                    ? Array(#"0123456789-+.eE"{}[]:,\ nul"#.utf8).randomElement(using: &random)!
                    : UInt8.random(in: 0...255, using: &random)
            }
            let record: Record?
            do {
                record = try read(bytes)
            } catch let error as WireFormatError {
                #expect(error.offset != nil)
                continue
            }
            guard let record else { continue }
            decoded += 1
            // What was read is written again, or refused with an error naming the field.
            do {
                _ = try WireFormat.encode(record)
            } catch let error as WireFormatError {
                #expect(error.code == .invalidValue)
            }
        }
        #expect(decoded > 0)
    }

    @Test(arguments: [
        #"{"t":{"type":"TIMESTAMP","value":9223372036854775807}}"#,
        #"{"a":{"type":"STRING","value":"\u0041"},"t":{"type":"TIMESTAMP","value":-9223372036854775808}}"#,
        #"{"t":{"type":"TIMESTAMP_LIST","value":[9223372036854775807]}}"#,
        #"{"t":{"type":"TIMESTAMP_LIST","value":[1, -9223372036854775808]}}"#,
        #"{"t":{"value":9223372036854775807,"type":"TIMESTAMP"}}"#,
        #"{"t":{"type":"TIMESTAMP","value":9223372036854775807.25}}"#,
        #"{"t":{"type":"TIMESTAMP_LIST","value":[-9223372036854775807.75, 1.5e3, "-0.5"]}}"#,
        #"{"t":{"value":9.2233720368547758e18,"type":"TIMESTAMP"}}"#,
    ])
    func timestampsAtTheEdgesOfInt64ReadAndNeverCrashTheWriter(fields: String) throws {
        let text = #"{"recordName":"r","recordType":"T","fields":"# + fields + "}"
        let record = try WireFormat.decodeRecord(from: Array(text.utf8))
        // Such a date may not convert back to milliseconds: writing it is
        // then an error naming the field, never a trap.
        do {
            let again = try WireFormat.encode(record)
            #expect(try WireFormat.decodeRecord(from: again) == record)
        } catch let error as WireFormatError {
            #expect(error.code == .invalidValue)
            #expect(error.message.contains("field 't'"))
        }
        _ = WireFormat.encodedSize(ofFields: record.fields)
        _ = record.fields.dictionary
    }

    /// A model that writes `count` keys named alike (`k0`, `k1`, …), some of
    /// them twice, at the top level and in a nested object.
    struct ManyKeys: CloudCodable, Equatable {
        var cloudIdentifier: String { "many" }
        var cloudMetadata: RecordMetadata?
        var count: Int

        struct Nested: Encodable {
            var count: Int
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: AnyKey.self)
                for i in 0..<count { try container.encode(i, forKey: AnyKey("n\(i)")) }
                try container.encode(-1, forKey: AnyKey("n\(count / 2)"))
            }
        }

        init(count: Int) { self.count = count }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            count = try container.decode(Int.self, forKey: AnyKey("count"))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: AnyKey.self)
            try container.encode(count, forKey: AnyKey("count"))
            for i in 0..<count { try container.encode(i, forKey: AnyKey("k\(i)")) }
            // Written again: the last value wins, as in a dictionary.
            for i in stride(from: 0, to: count, by: 7) { try container.encode(-i, forKey: AnyKey("k\(i)")) }
            try container.encode(Nested(count: min(count, 30)), forKey: AnyKey("nested"))
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    @Test(arguments: [1, 8, 40, 100, 300])
    func manySimilarNamesAndDuplicatesAreExact(count: Int) throws {
        let record = try RecordEncoder().encode(ManyKeys(count: count))
        #expect(record.fields.count == count + 2)
        for i in 0..<count {
            #expect(record["k\(i)"] == .int64(Int64(i.isMultiple(of: 7) ? -i : i)), "k\(i)")
        }
        guard case .bytes(let nested) = record["nested"] else {
            Issue.record("nested is not BYTES")
            return
        }
        let object = try JSONSerialization.jsonObject(with: nested) as? [String: Int]
        #expect(object?.count == min(count, 30))
        #expect(object?["n\(min(count, 30) / 2)"] == -1)

        // Through the wire, kept as text, and with a name given twice there.
        let wire = try WireFormat.encode(record)
        #expect(try WireFormat.decodeRecord(from: wire) == record)
        var text = String(decoding: wire, as: UTF8.self)
        let duplicate = #""k0":{"type":"INT64","value":12345},"#
        text = text.replacingOccurrences(of: #""fields":{"#, with: #""fields":{"# + duplicate)
        let read = try WireFormat.decodeRecord(from: Array(text.utf8))
        // The first k0 in the text is the new one; the encoder's comes later and wins.
        #expect(read["k0"] == .int64(0))
        #expect(try RecordDecoder().decode(ManyKeys.self, from: read) == ManyKeys(count: count))
    }

    @Test func concurrentCodingOnManyThreadsKeepsRecordsApart() async throws {
        // Each thread reuses its own coders: records coded at the same time
        // on different threads must not see each other's state.
        let failures = await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var failures = 0
                    for i in 0..<300 {
                        var landmark = Landmark.sample(name: "task \(task) landmark \(i)")
                        landmark.visits = task &* 1_000 &+ i
                        landmark.tags = (0..<(i % 5)).map { "t\(task)-\($0)" }
                        do {
                            let wire = try WireFormat.encode(try RecordEncoder().encode(landmark))
                            let back = try RecordDecoder().decode(
                                Landmark.self, from: try WireFormat.decodeRecord(from: wire))
                            if back != landmark { failures += 1 }
                        } catch {
                            failures += 1
                        }
                    }
                    return failures
                }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 0)
    }

    @Test(arguments: [
        (#"[ "x" , "y" ]"#, #"["x","y"]"#), (#"["x", "y"]"#, #"["x","y"]"#), (#"["x" ,"y"]"#, #"["x","y"]"#),
        (#"["a b","c "]"#, #"["a b","c "]"#), (#"[ ]"#, #"[]"#), (#"[]"#, #"[]"#), (#"["\u0041"]"#, #"["A"]"#),
    ])
    func stringListsAreWrittenBackCompactly(list: String, written: String) throws {
        let text = #"{"recordName":"r","recordType":"T","fields":{"a":{"type":"STRING_LIST","value":"# + list + "}}}"
        let record = try WireFormat.decodeRecord(from: Array(text.utf8))
        let again = String(decoding: try WireFormat.encode(record), as: UTF8.self)
        #expect(again.contains(#""value":"# + written + "}"), "\(again)")
    }
}
