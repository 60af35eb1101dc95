import Foundation
import Testing

@testable import CloudCodable

/// Timestamps sent as numbers with a fraction or an exponent, as clients
/// whose dates have sub-millisecond precision send them: kept as the
/// nearest whole millisecond, halves away from zero.
@Suite("Fractional timestamps")
struct FractionalTimestampTests {
    /// The value `number` (JSON text) of a TIMESTAMP field, read typed, with
    /// the value before the type, untyped for a schema that says TIMESTAMP,
    /// and as the first element of a TIMESTAMP_LIST; all four must agree.
    static func read(_ number: String) throws -> Date? {
        let schema: (String, String) -> FieldType? = { _, field in
            field == "schema" ? .timestamp : field == "schemaList" ? .timestampList : nil
        }
        let text = #"""
            {"recordName":"r","recordType":"T","fields":{
            "typed":{"type":"TIMESTAMP","value":\#(number)},
            "late":{"value":\#(number),"type":"TIMESTAMP"},
            "schema":{"value":\#(number)},
            "list":{"type":"TIMESTAMP_LIST","value":[\#(number),1]},
            "schemaList":{"value":[1,\#(number)]}}}
            """#
        let record = try WireBodyReader.read(wireUTF8(text), fieldTypes: schema) { reader -> Record? in
            guard case .record(let record, _) = try reader.readRecord() else { return nil }
            return record
        }
        guard case .timestamp(let date)? = record?["typed"] else { return nil }
        #expect(record?["late"] == .timestamp(date))
        #expect(record?["schema"] == .timestamp(date))
        #expect(record?["list"] == .timestampList([date, Milliseconds.date(1)]))
        #expect(record?["schemaList"] == .timestampList([Milliseconds.date(1), date]))
        // The client's reader (no schema) reads the typed field alike.
        let plain = try WireFormat.decodeRecord(
            from: wireUTF8(WireFormatTests.document(field: #"{"type":"TIMESTAMP","value":\#(number)}"#)))
        #expect(plain["f"] == .timestamp(date))
        return date
    }

    @Test(arguments: [
        ("1700000000123.75", 1_700_000_000_124 as Int64),
        ("1700000000123.25", 1_700_000_000_123),
        ("1700000000123.5", 1_700_000_000_124),
        ("1700000000123.0", 1_700_000_000_123),
        ("1700000000123.49999999999999999999", 1_700_000_000_123),
        ("1.7e12", 1_700_000_000_000),
        ("1.70000000012375E12", 1_700_000_000_124),
        ("17000000001237.5e-1", 1_700_000_000_124),
        ("1E+3", 1000),
        ("0.5", 1),
        ("0.4", 0),
        ("-0.4", 0),
        ("-0.0", 0),
        ("-1.5", -2),
        ("-1.4", -1),
        ("-1700000000123.75", -1_700_000_000_124),
        ("0.0e999", 0),
        ("1e-400", 0),
        ("0.000001e6", 1),
        (#""1700000000123.75""#, 1_700_000_000_124),
        (#""1.7e12""#, 1_700_000_000_000),
    ])
    func fractionalMillisecondsRoundToTheNearest(number: String, milliseconds: Int64) throws {
        #expect(try Self.read(number) == Milliseconds.date(milliseconds))
    }

    @Test func fractionalTimestampsAtTheEdgesOfInt64() throws {
        // Rounded exactly in decimal: no Double between the text and the millisecond.
        let accepted: [(String, Int64)] = [
            ("9223372036854775807.4", .max),
            ("9223372036854775806.5", .max),
            ("-9223372036854775808.4", .min),
            ("-9223372036854775807.5", .min),
            ("9223372036854775295.5", 9_223_372_036_854_775_296),
            ("9.223372036854775807e18", .max),
        ]
        for (number, milliseconds) in accepted {
            #expect(try Self.read(number) == Milliseconds.date(milliseconds), "\(number)")
        }
        // Beyond Int64 they stay refused, as integers beyond it are.
        let refused = [
            "9223372036854775807.5", "-9223372036854775808.5", "9.3e18", "-9.3e18", "1e19", "1e400",
            "1e999999999999999999999", "18446744073709551616.0", #""9.3e18""#, #""-1e19""#,
        ]
        for number in refused {
            let error = wireError { try Self.read(number) }
            #expect(error?.code == .invalidValue, "\(number): \(String(describing: error))")
            #expect(error?.message.contains("out of the range of Int64") == true, "\(String(describing: error))")
            #expect(error?.message.hasPrefix("field 'typed': ") == true, "\(String(describing: error))")
        }
        // A string must hold a JSON number and nothing else.
        for text in [#""1.5x""#, #"" 1.5""#, #""""#, #""1.""#, #""+1.5""#, #"".5""#, #""1.5\u0000""#] {
            let error = wireError { try Self.read(text) }
            #expect(error?.code == .invalidValue, "\(text): \(String(describing: error))")
            #expect(error?.message.contains("expected a number of milliseconds in the string") == true)
        }
        #expect(wireError { try Self.read("true") }?.code == .wrongType)
        #expect(wireError { try Self.read("1.") }?.code == .malformedJSON)
        // Integers read as before (a string's digits too), and without a
        // schema a fraction is still a DOUBLE; INT64 takes no fraction.
        #expect(try Self.read("1700000000123") == Milliseconds.date(1_700_000_000_123))
        #expect(try Self.read(#""007""#) == Milliseconds.date(7))
        #expect(try UntypedDictionaryTests.readField(#"{"value":1700000000123.75}"#) == .double(1_700_000_000_123.75))
        #expect(
            wireError { try UntypedDictionaryTests.readField(#"{"type":"INT64","value":1.5}"#) }?.code == .invalidValue)
    }

    @Test func aClientsDateKeepsTheMillisecondCumulusWouldSend() throws {
        // A client sends a date's exact milliseconds (the Double it holds,
        // printed as Swift and Foundation print it); the reader keeps the
        // millisecond Cumulus's own writer rounds that date to.
        var random = WireRandom(seed: 5)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        for round in 0..<2_000 {
            let seconds: Double =
                switch round % 4 {
                case 0: Double.random(in: -1e10...1e10, using: &random)
                case 1: Double(Int64.random(in: -10_000_000_000_000...10_000_000_000_000, using: &random)) / 1000
                case 2: Double(Int64.random(in: 0...4_000_000_000_000, using: &random)) / 1000 + 0.0005
                default: Double.random(in: -1...1, using: &random)
                }
            let date = Date(timeIntervalSince1970: seconds)
            let expected = try #require(Milliseconds.exact(date))
            let swiftText = "\(date.timeIntervalSince1970 * 1000)"
            let foundationText = String(decoding: try encoder.encode([date]), as: UTF8.self).dropFirst().dropLast()
            for text in [swiftText, String(foundationText)] {
                let read = try #require(try Self.read(text), "\(text)")
                #expect(read == Milliseconds.date(expected), "\(text) for \(seconds)")
                // And it is written back as that millisecond.
                var record = Record(recordType: "T", recordName: "r")
                record["t"] = .timestamp(read)
                let written = String(decoding: try WireFormat.encode(record), as: UTF8.self)
                #expect(written.contains(#""value":\#(expected)}"#), "\(written)")
            }
        }
    }

    @Test func aLocationsTimestampRoundsToo() throws {
        let typed = try WireFormat.decodeRecord(
            from: wireUTF8(
                WireFormatTests.document(
                    field: #"{"type":"LOCATION","value":{"latitude":1,"longitude":2,"timestamp":1700000000123.5}}"#)))
        #expect(typed["f"] == .location(Location(latitude: 1, longitude: 2, timestamp: 1_700_000_000_124)))
        let untyped = try UntypedDictionaryTests.readField(
            #"{"value":[{"latitude":1,"longitude":2,"timestamp":"-0.5"}]}"#)
        #expect(untyped == .locationList([Location(latitude: 1, longitude: 2, timestamp: -1)]))
        let error = wireError {
            try UntypedDictionaryTests.readField(#"{"value":{"latitude":1,"longitude":2,"timestamp":1e19}}"#)
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.message.hasPrefix("field 'f': timestamp: ") == true, "\(String(describing: error))")
    }
}
