import CloudCodable
import Foundation

/// The entry point of `FuzzCodec`. The first byte, modulo 4, chooses what
/// the rest is:
///
/// - 0: a record in the wire form;
/// - 1: the JSON that a `BYTES` field holds, placed in each field of
///   ``FuzzModel`` that is a nested value;
/// - 2: an entry of a `changes/zone` answer (a record or a deletion);
/// - 3: any JSON document, for ``JSONParser``.
///
/// Any error is a fine outcome; a crash, a trap or a broken invariant (a
/// `fatalError` below) is a finding.
public func fuzzCodec(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start, count > 0 else { return 0 }
    let rest = Array(UnsafeBufferPointer(start: start + 1, count: count - 1))
    switch start.pointee % 4 {
    case 0: checkWireRecord(rest)
    case 1: checkNestedJSON(rest)
    case 2: checkWireEntry(rest)
    default: checkJSONDocument(rest)
    }
    return 0
}

/// Reads `bytes` as a wire record and checks what follows from reading it.
func checkWireRecord(_ bytes: [UInt8]) {
    guard let record = try? WireFormat.decodeRecord(from: bytes) else { return }
    checkRecord(record)
}

/// Reads `bytes` as a `changes/zone` entry: a record is checked as one.
func checkWireEntry(_ bytes: [UInt8]) {
    guard let entry = try? WireFormat.decodeRecordEntry(from: bytes) else { return }
    if case .record(let record) = entry { checkRecord(record) }
}

/// Parses `bytes` as JSON; what parses is written again and parses into
/// the same tree.
func checkJSONDocument(_ bytes: [UInt8]) {
    guard let value = try? JSONParser.parse(bytes) else { return }
    var writer = JSONWriter()
    write(value, to: &writer)
    guard let again = try? JSONParser.parse(writer.bytes) else {
        fatalError("written JSON does not parse: \(String(decoding: writer.bytes, as: UTF8.self))")
    }
    guard again == value else { fatalError("JSON changed on its way through the writer") }
}

func write(_ value: JSONValue, to writer: inout JSONWriter) {
    switch value {
    case .null: writer.appendRaw("null")
    case .bool(let flag): writer.appendRaw(flag ? "true" : "false")
    case .number(let text): writer.appendNumberLiteral(text)
    case .string(let text): writer.appendString(text)
    case .array(let elements):
        writer.append(byte: UInt8(ascii: "["))
        for (i, element) in elements.enumerated() {
            if i > 0 { writer.append(byte: UInt8(ascii: ",")) }
            write(element, to: &writer)
        }
        writer.append(byte: UInt8(ascii: "]"))
    case .object(let members):
        writer.append(byte: UInt8(ascii: "{"))
        for (i, member) in members.enumerated() {
            if i > 0 { writer.append(byte: UInt8(ascii: ",")) }
            writer.appendString(member.key)
            writer.append(byte: UInt8(ascii: ":"))
            write(member.value, to: &writer)
        }
        writer.append(byte: UInt8(ascii: "}"))
    }
}

/// Puts `json` in every nested-value field of a record and decodes models from it.
func checkNestedJSON(_ json: [UInt8]) {
    let bytes = FieldValue.bytes(Data(json))
    let record = Record(
        recordType: FuzzModel.cloudRecordType, recordName: "fuzz",
        fields: ["inner": bytes, "inners": bytes, "set": bytes, "map": bytes, "kinds": bytes, "field": bytes])
    checkRecord(record)
    // The strict model reads its properties in order and stops at the
    // first missing one: every other field is valid, so that it reaches
    // the nested value.
    var strict = Seeds.strictRecord
    strict.fields["point"] = bytes
    checkRecord(strict)
}

/// What must hold for any record, however it was made.
func checkRecord(_ record: Record) {
    // The wire form reads back as the same record, and its fields take the
    // size that the size check computes.
    if let wire = try? WireFormat.encode(record) {
        guard let again = try? WireFormat.decodeRecord(from: wire) else {
            fatalError("written record does not read back: \(String(decoding: wire, as: UTF8.self))")
        }
        guard again == record else { fatalError("record changed on its way through the wire form") }
        checkFieldsSize(of: record)
    }
    for (_, value) in record.fields { _ = value.type }

    // Models decode or fail with an error; what decodes encodes, and after
    // one round trip it is stable.
    var fuzz = record
    fuzz.recordType = FuzzModel.cloudRecordType
    checkModel(FuzzModel.self, from: fuzz)
    var strict = record
    strict.recordType = StrictModel.cloudRecordType
    checkModel(StrictModel.self, from: strict)
}

/// The wire form's `fields` object is exactly as large as `encodedSize(ofFields:)` says.
func checkFieldsSize(of record: Record) {
    let withFields = Record(recordType: "T", recordName: "n", fields: record.fields)
    let without = Record(recordType: "T", recordName: "n")
    guard let full = try? WireFormat.encode(withFields), let empty = try? WireFormat.encode(without) else {
        fatalError("a record that was written once could not be written again")
    }
    let size = WireFormat.encodedSize(ofFields: record.fields)
    guard full.count - empty.count == size - 2 else {
        fatalError("encodedSize(ofFields:) is \(size), the writer wrote \(full.count - empty.count + 2)")
    }
}

func checkModel<Model: CloudCodable & Equatable>(_ type: Model.Type, from record: Record) {
    let decoder = RecordDecoder()
    let encoder = RecordEncoder()
    guard let model = try? decoder.decode(Model.self, from: record),
        let encoded = try? encoder.encode(model)
    else { return }
    // What the encoder accepted, the wire form carries.
    guard let wire = try? WireFormat.encode(encoded), let carried = try? WireFormat.decodeRecord(from: wire),
        carried == encoded
    else {
        fatalError("\(Model.self) encoded into a record the wire form cannot carry: \(encoded)")
    }
    guard let second = try? decoder.decode(Model.self, from: carried) else {
        fatalError("\(Model.self) encoded into a record it cannot decode: \(encoded)")
    }
    guard let reencoded = try? encoder.encode(second), let third = try? decoder.decode(Model.self, from: reencoded)
    else {
        fatalError("\(Model.self) does not survive a second round trip")
    }
    guard third == second else { fatalError("\(Model.self) changed on its second round trip") }
}
