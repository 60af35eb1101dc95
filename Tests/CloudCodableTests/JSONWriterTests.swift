import CloudCodable
import Foundation
import Testing

@Suite("JSONWriter")
struct JSONWriterTests {
    /// A plain byte-by-byte escaper to compare the writer's fast paths with.
    static func referenceEscape(_ text: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += wireUTF8(#"\""#)
            case UInt8(ascii: "\\"): out += wireUTF8(#"\\"#)
            case 0x08: out += wireUTF8(#"\b"#)
            case 0x09: out += wireUTF8(#"\t"#)
            case 0x0A: out += wireUTF8(#"\n"#)
            case 0x0C: out += wireUTF8(#"\f"#)
            case 0x0D: out += wireUTF8(#"\r"#)
            case 0..<0x20: out += wireUTF8(String(format: "\\u%04x", byte))
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
        return out
    }

    @Test func escapesQuotesBackslashesAndControls() {
        var writer = JSONWriter()
        writer.appendString("a\"b\\c/d\n\r\t\u{8}\u{C}\u{0}\u{1F}\u{7F}é😀")
        #expect(writer.bytes == wireUTF8(#""a\"b\\c/d\n\r\t\b\f\u0000\u001f"# + "\u{7F}é😀\""))
    }

    @Test func everyControlCharacterIsEscaped() {
        for scalar in 0..<0x20 {
            let text = String(Character(Unicode.Scalar(UInt8(scalar))))
            var writer = JSONWriter()
            writer.appendString(text)
            #expect(writer.bytes == Self.referenceEscape(text), "U+\(scalar)")
        }
    }

    @Test(arguments: Array(0..<24))
    func escapeAtEveryPosition(position: Int) {
        // Exercises the eight-bytes-at-a-time scan on both sides of the escape.
        for special in ["\"", "\\", "\n", "\u{1}", "é"] {
            var characters = Array(repeating: "a", count: 24)
            characters[position] = special
            let text = characters.joined()
            var writer = JSONWriter()
            writer.appendString(text)
            #expect(writer.bytes == Self.referenceEscape(text))
        }
    }

    /// The bytes a string field named "" takes besides its quoted string.
    static let fieldOverhead = WireFormat.encodedSize(ofFields: ["": .string("")]) - 2

    @Test(arguments: [1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 33])
    func everyASCIIByteAtEveryPositionIsWrittenAndCountedExactly(count: Int) {
        // Every ASCII byte in every position of the word-at-a-time loops
        // (and the overlapping last word), beside plain text and non-ASCII.
        for filler in ["a", "é"] {
            for position in 0..<count {
                for byte in UInt8(0)..<0x80 {
                    var bytes = Array(String(repeating: filler, count: count).utf8.prefix(count))
                    bytes[position] = byte
                    // (Where that splits an `é`, decoding repairs it; the text
                    // still has the byte near `position`.)
                    let text = String(decoding: bytes, as: UTF8.self)
                    var writer = JSONWriter()
                    writer.appendString(text)
                    #expect(writer.bytes == Self.referenceEscape(text), "byte \(byte) at \(position)")
                    #expect(
                        WireFormat.encodedSize(ofFields: ["": .string(text)]) == writer.bytes.count + Self.fieldOverhead
                    )
                }
            }
        }
    }

    @Test func longTextWithEscapesAcrossChunks() {
        var random = WireRandom(seed: 11)
        let pieces = ["plain text ", "\n", "\"", "\\", "\u{1}", "é", "😀", "\t", "word"]
        var text = ""
        while text.utf8.count < 70_000 { text += pieces.randomElement(using: &random)! }
        var writer = JSONWriter(capacity: 16)
        writer.appendString(text)
        #expect(writer.bytes == Self.referenceEscape(text))
        #expect(WireFormat.encodedSize(ofFields: ["": .string(text)]) == writer.bytes.count + Self.fieldOverhead)
    }

    @Test func randomStringsMatchTheReferenceAndParseBack() throws {
        var random = WireRandom(seed: 7)
        for _ in 0..<500 {
            let text = WireSamples.string(&random)
            var writer = JSONWriter()
            writer.append(byte: UInt8(ascii: "["))
            writer.appendString(text)
            writer.append(byte: UInt8(ascii: "]"))
            #expect(Array(writer.bytes.dropFirst().dropLast()) == Self.referenceEscape(text))
            let parsed = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String]
            #expect(parsed?.count == 1)
            #expect(wireSameString(parsed?.first, text))
            #expect(try JSONDecoder().decode([String].self, from: Data(writer.bytes)) == [text])
        }
    }

    @Test func integers() {
        var values: [Int64] = [0, 1, -1, 9, 10, 99, 100, -100, .min, .max, .min + 1, .max - 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power - 1, power, power + 1, -power]
        }
        for value in values {
            var writer = JSONWriter()
            writer.appendInt(value)
            #expect(writer.bytes == wireUTF8(String(value)))
        }
        for value: UInt64 in [0, 7, 10, 12_345, .max, .max - 1, 1 << 63] {
            var writer = JSONWriter()
            writer.appendUInt(value)
            #expect(writer.bytes == wireUTF8(String(value)))
        }
    }

    @Test func doublesAreTheirShortestRoundTripText() {
        var random = WireRandom(seed: 11)
        var values: [Double] = [
            0, -0.0, 1, 2, 0.1, 1e-5, 1e20, 1e16, 1e15, 123.456, Double.leastNonzeroMagnitude,
            -Double.leastNonzeroMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, Double.leastNormalMagnitude, Double.leastNormalMagnitude.nextDown,
            -Double.leastNormalMagnitude,
        ]
        for _ in 0..<20_000 {
            let value = Double(bitPattern: random.next())
            if value.isFinite { values.append(value) }
        }
        for value in values {
            var writer = JSONWriter()
            writer.appendDouble(value)
            let text = String(decoding: writer.bytes, as: UTF8.self)
            #expect(text == value.description)
            #expect(Double(text)?.bitPattern == value.bitPattern)
        }
    }

    @Test func floatsAreTheirShortestRoundTripText() {
        var random = WireRandom(seed: 12)
        for _ in 0..<5_000 {
            let value = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            guard value.isFinite else { continue }
            var writer = JSONWriter()
            writer.appendFloat(value)
            let text = String(decoding: writer.bytes, as: UTF8.self)
            #expect(text == value.description)
            #expect(Float(text)?.bitPattern == value.bitPattern)
        }
    }

    @Test func nonFiniteNumbersWriteNull() {
        for value in [Double.nan, .infinity, -.infinity, .signalingNaN] {
            var writer = JSONWriter()
            writer.appendDouble(value)
            #expect(writer.bytes == wireUTF8("null"))
        }
        var writer = JSONWriter()
        writer.appendFloat(.infinity)
        #expect(writer.bytes == wireUTF8("null"))
    }

    @Test func doublesParseWithFoundation() throws {
        var random = WireRandom(seed: 13)
        var writer = JSONWriter()
        var values: [Double] = []
        writer.append(byte: UInt8(ascii: "["))
        for index in 0..<1_000 {
            let value = WireSamples.double(&random)
            values.append(value)
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            writer.appendDouble(value)
        }
        writer.append(byte: UInt8(ascii: "]"))
        // JSONDecoder reads every one back exactly, sign of zero included.
        let decoded = try JSONDecoder().decode([Double].self, from: Data(writer.bytes))
        #expect(decoded.map(\.bitPattern) == values.map(\.bitPattern))
        // JSONSerialization on Linux is a unit in the last place off for some.
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [NSNumber])
        #expect(zip(parsed, values).allSatisfy { wireSameDouble($0.doubleValue, $1) })
        #expect(parsed.count == values.count)
    }

    @Test func base64MatchesFoundation() {
        var random = WireRandom(seed: 14)
        for length in 0..<100 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &random) })
            var writer = JSONWriter()
            writer.appendBase64String(data)
            #expect(writer.bytes == wireUTF8("\"" + data.base64EncodedString() + "\""))
            var raw = JSONWriter()
            data.withUnsafeBytes { raw.appendBase64String($0) }
            #expect(raw.bytes == writer.bytes)
        }
    }

    @Test func rawTextNumberLiteralsAndBytes() {
        var writer = JSONWriter(capacity: 0)
        writer.appendRaw(#"{"a":"#)
        writer.appendNumberLiteral("-12.50e3")
        writer.appendRaw(",")
        writer.appendRaw(#""b":"#)
        writer.append(byte: UInt8(ascii: "1"))
        writer.append(byte: UInt8(ascii: "}"))
        #expect(writer.bytes == wireUTF8(#"{"a":-12.50e3,"b":1}"#))
        writer.appendRaw(wireUTF8(#"[true]"#))
        wireUTF8("{}").withUnsafeBytes { writer.appendRaw($0) }
        writer.appendRaw([UInt8]())
        #expect(writer.bytes == wireUTF8(#"{"a":-12.50e3,"b":1}[true]{}"#))
        writer.removeAll()
        writer.appendRaw(#"{"a":-12.50e3,"b":1}"#)
        #expect(writer.count == 20)
        #expect(writer.withUnsafeBytes { Array($0) } == writer.bytes)
    }

    @Test func growsFromASmallCapacity() {
        var writer = JSONWriter(capacity: 1)
        var expected: [UInt8] = []
        for index in 0..<2_000 {
            writer.appendInt(Int64(index))
            writer.appendString("s\(index)\n")
            expected += wireUTF8(String(index)) + Self.referenceEscape("s\(index)\n")
        }
        #expect(writer.bytes == expected)
    }

    @Test func removeAllEmptiesTheWriter() {
        var writer = JSONWriter()
        writer.appendString("hello")
        writer.removeAll()
        #expect(writer.bytes.isEmpty)
        #expect(writer.isEmpty)
        #expect(writer.count == 0)
        writer.appendInt(5)
        #expect(!writer.isEmpty)
        #expect(writer.bytes == wireUTF8("5"))
    }

    @Test func copiesAreIndependent() {
        var first = JSONWriter()
        first.appendString("shared")
        var second = first
        second.appendRaw(",2")
        first.appendRaw(",1")
        #expect(first.bytes == wireUTF8(#""shared",1"#))
        #expect(second.bytes == wireUTF8(#""shared",2"#))
        var third = first
        third.removeAll()
        #expect(third.bytes.isEmpty)
        #expect(first.bytes == wireUTF8(#""shared",1"#))
        var fourth = first
        fourth.appendString("x")
        fourth.appendInt(1)
        fourth.appendUInt(2)
        fourth.appendDouble(3)
        fourth.appendFloat(4)
        fourth.appendNumberLiteral("5")
        fourth.appendBase64String(Data([6]))
        fourth.append(byte: UInt8(ascii: "7"))
        #expect(first.bytes == wireUTF8(#""shared",1"#))
        #expect(fourth.bytes == wireUTF8(#""shared",1"x"123.04.05"Bg=="7"#))
    }
}
