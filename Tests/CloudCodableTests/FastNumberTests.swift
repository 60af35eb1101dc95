import Foundation
import Testing

@testable import CloudCodable

/// The fast paths for numbers must agree bit for bit with the standard
/// library they short-cut: `Double.description` when writing and
/// `Double(String)` when reading.
@Suite("Fast number paths")
struct FastNumberTests {
    /// Doubles that look like what apps store: short decimals, their
    /// neighbours, integers, values near the edges of the fast range, and
    /// random magnitudes across it.
    static func decimalLikeDoubles(count: Int, seed: UInt64) -> [Double] {
        var random = WireRandom(seed: seed)
        var values: [Double] = [
            0, -0.0, 1, -1, 42, 0.1, 0.2, 0.3, 0.30000000000000004, 1e-4, 1e-4.nextUp, 1e-4.nextDown, 0.00011,
            9.999e-5, 0x1p50, 0x1p50.nextDown, 0x1p50.nextUp, 0x1p53, 1e15, 1e15 + 0.5, 37.8199, -122.4783,
            1.0 / 3.0, 2.0 / 3.0, 123_456_789_012_345.6, 4_503_599_627_370_495.5, 0.1 + 0.2, 100, 1e14, 99.99,
        ]
        for _ in 0..<count {
            let digits = Int.random(in: 1...17, using: &random)
            let mantissa = UInt64.random(in: 0..<UInt64(pow(10, Double(digits))), using: &random)
            let exponent = Int.random(in: -24...20, using: &random)
            let decimal = Double("\(mantissa)e\(exponent)")!
            let sign: Double = Bool.random(using: &random) ? -1 : 1
            values.append(sign * decimal)
            values.append(sign * decimal.nextUp)
            values.append(sign * decimal.nextDown)
            // A random magnitude across the fast range, with all its digits.
            let log = Double.random(in: -4.5...15.5, using: &random)
            values.append(sign * pow(10, log))
        }
        return values
    }

    @Test func writerMatchesDescriptionForDecimalLikeDoubles() {
        for value in Self.decimalLikeDoubles(count: 50_000, seed: 21) {
            var writer = JSONWriter()
            writer.appendDouble(value)
            let text = String(decoding: writer.bytes, as: UTF8.self)
            #expect(text == value.description, "\(value.bitPattern)")
            #expect(JSONText.doubleLength(value) == value.description.utf8.count)
        }
    }

    @Test func shortDecimalsAreWrittenDirectly() {
        // These take the fast path; the assertion above checks the text.
        for value in [37.8199, -122.4783, 0.5, 42.0, 0.0001, 123_456.789] {
            let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
                JSONText.writeShortDecimal(value, to: buffer.baseAddress!)
            }
            #expect(written == value.description.utf8.count)
        }
        // These do not: zero, exponents, too many digits for the proof.
        for value in [0.0, -0.0, 1e-5, 1e16, 0x1p50, Double.pi * 1e14] {
            let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
                JSONText.writeShortDecimal(value, to: buffer.baseAddress!)
            }
            #expect(written == 0)
        }
    }

    @Test func readerMatchesTheStandardLibrary() throws {
        var texts: [String] = [
            "0", "-0", "0.0", "-0.0", "1", "1.5", "-1.5e3", "1E+2", "1e-2", "0.000123", "123456789012345678",
            "9007199254740993", "9007199254740992", "1.7976931348623157e308", "1e309", "-1e309", "5e-324",
            "2.2250738585072014e-308", "0.1", "1e22", "1e23", "123456789012345.6789", "37.8199", "-122.4783",
            "1.00000000000000000001", "10000000000000000000000", "0.30000000000000004", "1e-22", "1e-23",
        ]
        for value in Self.decimalLikeDoubles(count: 20_000, seed: 22) {
            texts.append(value.description.replacingOccurrences(of: "e+", with: "e"))
        }
        var random = WireRandom(seed: 23)
        for _ in 0..<20_000 {
            let digits = (0..<Int.random(in: 1...20, using: &random)).map { _ in
                String(Int.random(in: 0...9, using: &random))
            }.joined()
            let whole = digits.drop { $0 == "0" }
            let fraction = (0..<Int.random(in: 0...6, using: &random)).map { _ in "7" }.joined()
            let exponent = Int.random(in: -30...30, using: &random)
            texts.append("\(whole.isEmpty ? "0" : whole)\(fraction.isEmpty ? "" : ".\(fraction)")e\(exponent)")
        }
        for text in texts {
            let expected = try #require(Double(text))
            let bytes = Array(text.utf8)
            let read = bytes.withUnsafeBytes { raw -> Double in
                var scanner = JSONScanner(raw)
                guard let number = try? scanner.scanNumber() else { return .nan }
                return scanner.double(number)
            }
            #expect(read.bitPattern == expected.bitPattern, "\(text)")
        }
    }
}
