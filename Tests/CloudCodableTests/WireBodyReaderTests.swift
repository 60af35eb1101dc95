import Foundation
import Testing

@testable import CloudCodable

@Suite("WireBodyReader and the writer's pieces for bodies")
struct WireBodyReaderTests {
    /// Reads `{"items":[…]}` with `readRecordEntry`, returning each entry and,
    /// for an error entry, the `serverErrorCode` read member by member.
    private func entries(_ text: String, fieldTypes: ((String, String) -> FieldType?)? = nil) throws -> [String] {
        try WireBodyReader.read(wireUTF8(text), fieldTypes: fieldTypes) { reader in
            var seen: [String] = []
            guard try reader.enterObject("the body") else { return seen }
            repeat {
                _ = try reader.readKey()
                guard try reader.enterArray("items") else { continue }
                repeat {
                    switch try reader.readRecordEntry() {
                    case .record(let record, let hasZoneID):
                        seen.append("record \(record.recordName) \(record.fields.count) \(hasZoneID)")
                    case .deleted(let name, let zone):
                        seen.append("deleted \(name) \(zone?.zoneName ?? "-")")
                    case .failure:
                        var code = ""
                        guard try reader.enterObject("an error") else { break }
                        repeat {
                            if try reader.readKey() == "serverErrorCode" {
                                code = try reader.readString("a code")
                            } else {
                                try reader.skipValue()
                            }
                        } while try reader.nextMember()
                        seen.append("error \(code)")
                    }
                } while try reader.nextElement()
            } while try reader.nextMember()
            try reader.expectEnd()
            #expect(reader.depth == 0)
            return seen
        }
    }

    @Test("reads records, deleted entries and error entries in place")
    func inPlace() throws {
        let record = try WireFormat.encode(WireSamples.landmark())
        let text =
            #"{"items":["# + String(decoding: record, as: UTF8.self)
            + #",{"recordName":"b","deleted":true},{"serverErrorCode":"CONFLICT","recordName":"c","recordType":"T"},"#
            + #"{"recordType":"T","recordName":"d"}]}"#
        #expect(
            try entries(text) == [
                "record 8A1F0F2C-3D4E-4F60-9A7B-1C2D3E4F5A6B 7 true", "deleted b -", "error CONFLICT",
                "record d 0 false",
            ])
    }

    @Test("names repeated from record to record stay exact: equal bytes share, other bytes never do")
    func repeatedNamesExact() throws {
        // Two spellings of one name that `String ==` calls equal, both longer than a string keeps inline.
        let composed = "owner-caf\u{E9}-of-this-zone"
        let decomposed = "owner-cafe\u{301}-of-this-zone"
        func record(_ name: String, owner: String, user: String) -> String {
            #"{"recordName":"\#(name)","recordType":"T","recordChangeTag":"t","fields":{},"#
                + #""created":{"timestamp":1,"userRecordName":"\#(user)"},"#
                + #""modified":{"timestamp":2,"userRecordName":"\#(user)"},"#
                + #""zoneID":{"zoneName":"Z","ownerRecordName":"\#(owner)"}}"#
        }
        let items = [
            record("a", owner: composed, user: composed), record("b", owner: decomposed, user: decomposed),
            record("c", owner: composed, user: decomposed),
            // The general reader's form: members in another order.
            #"{"recordType":"T","recordName":"d","zoneID":{"ownerRecordName":"\#(decomposed)","zoneName":"Z"},"#
                + #""recordChangeTag":"t","created":{"userRecordName":"\#(composed)","timestamp":1}}"#,
        ]
        let records = try WireBodyReader.read(wireUTF8(#"{"items":["# + items.joined(separator: ",") + "]}")) {
            reader in
            var records: [Record] = []
            guard try reader.enterObject("the body") else { return records }
            _ = try reader.readKey()
            guard try reader.enterArray("items") else { return records }
            repeat {
                if case .record(let record, _) = try reader.readRecordEntry() { records.append(record) }
            } while try reader.nextElement()
            return records
        }
        let owners = records.map { Array($0.zoneID.ownerRecordName?.utf8 ?? "".utf8) }
        let users = records.map { Array($0.metadata?.created?.userRecordName?.utf8 ?? "".utf8) }
        let (c, d) = (Array(composed.utf8), Array(decomposed.utf8))
        #expect(owners == [c, d, c, d])
        #expect(users == [c, d, d, c])
        #expect(records.map { Array($0.metadata?.modified?.userRecordName?.utf8 ?? "".utf8) } == [c, d, d, []])
    }

    @Test("a typeless field asks the lookup with the record's type, even when the type comes later")
    func lookup() throws {
        var asked: [String] = []
        let text = #"{"items":[{"fields":{"when":{"value":5},"n":{"value":5}},"recordName":"a","recordType":"Event"}]}"#
        let lookup: (String, String) -> FieldType? = { type, field in
            asked.append("\(type).\(field)")
            return field == "when" ? .timestamp : nil
        }
        let result = try WireBodyReader.read(wireUTF8(text), fieldTypes: lookup) { reader -> Record? in
            _ = try reader.enterObject("the body")
            _ = try reader.readKey()
            _ = try reader.enterArray("items")
            guard case .record(let record, _) = try reader.readRecordEntry() else { return nil }
            return record
        }
        #expect(asked == ["Event.when", "Event.n"])
        #expect(result?["when"] == .timestamp(Milliseconds.date(5)))
        #expect(result?["n"] == .int64(5))
    }

    @Test("the record reader's own entry points still read a dictionary with serverErrorCode as a record")
    func unchanged() throws {
        let record = try WireFormat.decodeRecord(
            from: wireUTF8(#"{"recordName":"a","recordType":"T","serverErrorCode":"X"}"#))
        #expect(record.recordName == "a")
        #expect(wireError { try WireFormat.decodeRecord(from: wireUTF8(#"{"recordName":"a"}"#)) }?.code == .missingKey)
    }

    @Test("numbers, numeric strings and bad numbers")
    func numbers() throws {
        let values = try WireBodyReader.read(wireUTF8(#"[12, "-7", 2.5, "1e2"]"#)) { reader in
            _ = try reader.enterArray("a list")
            var values: [Double] = [Double(try reader.readInt64("n"))]
            _ = try reader.nextElement()
            values.append(Double(try reader.readInt64("n")))
            _ = try reader.nextElement()
            values.append(try reader.readDouble("n"))
            _ = try reader.nextElement()
            values.append(try reader.readDouble("n"))
            return values
        }
        #expect(values == [12, -7, 2.5, 100])
        for bad in ["1.5", #""12a""#, #""""#, "true", "99999999999999999999"] {
            let error = wireError {
                try WireBodyReader.read(wireUTF8(bad)) { reader in try reader.readInt64("n") }
            }
            #expect(error != nil, "\(bad)")
        }
    }

    @Test("a part of a buffer reads on its own, with offsets from its start; a raw value is checked and spanned")
    func partOfABuffer() throws {
        let buffer = wireUTF8(#"xx{"a": [1, {"b": "\u00e9"}] ,"c":tru}yy"#)
        let spans = try buffer.withUnsafeBytes { bytes in
            try WireBodyReader.read(UnsafeRawBufferPointer(rebasing: bytes[2..<(bytes.count - 2)])) { reader in
                _ = try reader.enterObject("the object")
                _ = try reader.readKey()
                let span = try reader.rawValueRange()
                _ = try reader.nextMember()
                _ = try reader.readKey()
                let error = wireError { try reader.rawValueRange() }
                return (span, error)
            }
        }
        #expect(spans.0 == 6..<26)
        #expect(
            String(decoding: buffer[(2 + spans.0.lowerBound)..<(2 + spans.0.upperBound)], as: UTF8.self)
                == #"[1, {"b": "\u00e9"}]"#)
        #expect(spans.1?.code == .malformedJSON)
        #expect(spans.1?.offset == 35)
    }

    @Test("appendFieldValue and appendZoneID write what the record writer writes")
    func writer() throws {
        var writer = JSONWriter()
        try writer.appendFieldValue(.stringList(["a", "b"]))
        writer.appendRaw(",")
        writer.appendZoneID(ZoneID(zoneName: "Z", ownerRecordName: "o"))
        #expect(
            String(decoding: writer.bytes, as: UTF8.self)
                == #"{"type":"STRING_LIST","value":["a","b"]},{"zoneName":"Z","ownerRecordName":"o"}"#)
        var failing = JSONWriter()
        failing.appendRaw("[")
        #expect(wireError { try failing.appendFieldValue(.double(.infinity)) }?.code == .invalidValue)
        #expect(failing.bytes == wireUTF8("["))
    }
}
