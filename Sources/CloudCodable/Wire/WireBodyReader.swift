/// Reads the JSON bodies of requests and answers around record dictionaries,
/// member by member, with the record reader for the records inside: a page
/// of records is read in place, never through a JSON tree.
///
/// The caller walks the document (``enterObject(_:)``, ``readKey()``,
/// ``nextMember()``…) and reads each value with the method of its type;
/// values it does not know it skips with ``skipValue()``. Every problem is a
/// ``WireFormatError`` with the byte offset. The methods throw untyped errors
/// (always `WireFormatError`) because Swift 6.3's optimiser crashes on some
/// typed-throws calls across modules (see ``WireFormat``).
package struct WireBodyReader {
    private var reader: WireRecordReader
    /// The number of arrays and objects open at the cursor.
    package private(set) var depth = 0

    private init(_ bytes: UnsafeRawBufferPointer, fieldTypes: ((String, String) -> FieldType?)?) {
        reader = WireRecordReader(bytes)
        reader.fieldTypes = fieldTypes
        reader.detectsErrorEntries = true
    }

    /// Calls `body` with a reader at the start of `bytes`. The reader is
    /// valid only during the call.
    ///
    /// - Parameter fieldTypes: The type of a field sent without `type`, by
    ///   record type and field name; when it gives none, the value's JSON
    ///   shape decides.
    package static func read<Result>(
        _ bytes: [UInt8], fieldTypes: ((String, String) -> FieldType?)? = nil,
        _ body: (inout WireBodyReader) throws -> Result
    ) throws -> Result {
        try bytes.withUnsafeBytes { buffer in
            var reader = WireBodyReader(buffer, fieldTypes: fieldTypes)
            return try body(&reader)
        }
    }

    /// Calls `body` with a reader at the start of `bytes`, a part of a larger
    /// buffer (one line of a file, say); offsets count from its start. The
    /// reader is valid only during the call.
    package static func read<Result>(
        _ bytes: UnsafeRawBufferPointer, _ body: (inout WireBodyReader) throws -> Result
    ) throws -> Result {
        var reader = WireBodyReader(bytes, fieldTypes: nil)
        return try body(&reader)
    }

    // MARK: - Position and errors

    /// The offset of the next byte to read.
    package var position: Int { reader.scanner.position }

    /// Whether the input holds nothing but whitespace.
    package var isBlank: Bool {
        var scanner = reader.scanner
        scanner.position = 0
        scanner.skipWhitespace()
        return scanner.isAtEnd
    }

    /// Moves the cursor to `offset`, which an earlier ``position`` gave, at
    /// the same depth (to read a value again, or later, once its context is known).
    package mutating func seek(to offset: Int) {
        reader.scanner.position = offset
    }

    /// An error at `offset` (the cursor when `nil`).
    package func error(_ message: String, at offset: Int? = nil) -> WireFormatError {
        WireFormatError(.invalidValue, offset: offset ?? reader.scanner.position, message: message)
    }

    /// An error for a member that the object at `offset` lacks.
    package func missing(_ key: String, in what: String, at offset: Int) -> WireFormatError {
        WireFormatError(.missingKey, offset: offset, message: "\(what) has no '\(key)'")
    }

    /// Requires the end of the input after whitespace.
    package mutating func expectEnd() throws {
        try reader.scanner.expectEnd()
    }

    // MARK: - Structure

    /// Skips whitespace and returns the next byte without consuming it.
    package mutating func peek() throws -> UInt8 {
        try reader.scanner.peek("a value")
    }

    /// Enters the object at the cursor; `false` (with the object consumed)
    /// when it is empty. `what` names it in errors.
    package mutating func enterObject(_ what: String) throws -> Bool {
        try enterContainer(what, isObject: true)
    }

    /// Enters the array at the cursor; `false` (with the array consumed)
    /// when it is empty.
    package mutating func enterArray(_ what: String) throws -> Bool {
        try enterContainer(what, isObject: false)
    }

    private mutating func enterContainer(_ what: String, isObject: Bool) throws(WireFormatError) -> Bool {
        guard depth < JSONScanner.maximumDepth else {
            throw reader.scanner.error(
                .nestingTooDeep, "arrays and objects nested deeper than \(JSONScanner.maximumDepth)")
        }
        let entered = try isObject ? reader.scanner.enterObject(what) : reader.scanner.enterArray(what)
        if entered { depth += 1 }
        return entered
    }

    /// Reads the next member's key and its colon.
    package mutating func readKey() throws -> String {
        let span = try reader.scanner.memberKey()
        return try reader.scanner.string(span)
    }

    /// After a member's value: `true` when another member follows, `false`
    /// when the object ends (and is left).
    package mutating func nextMember() throws -> Bool {
        let more = try reader.scanner.nextMember()
        if !more { depth -= 1 }
        return more
    }

    /// After an element: `true` when another follows, `false` when the array
    /// ends (and is left).
    package mutating func nextElement() throws -> Bool {
        let more = try reader.scanner.nextElement()
        if !more { depth -= 1 }
        return more
    }

    /// Skips the value at the cursor, checking it as strictly as if it were read.
    package mutating func skipValue() throws {
        try reader.scanner.skipValue(depth: depth)
    }

    /// Skips the value at the cursor, checking it as ``skipValue()`` does,
    /// and returns the offsets of its text, whitespace around it excluded.
    package mutating func rawValueRange() throws -> Range<Int> {
        _ = try reader.scanner.peek("a value")
        let start = reader.scanner.position
        try reader.scanner.skipValue(depth: depth)
        return start..<reader.scanner.position
    }

    /// Consumes `null` when it is next; returns whether it did.
    package mutating func skipNull() throws -> Bool {
        try reader.scanner.skipNull()
    }

    // MARK: - Scalars

    /// Reads a string.
    package mutating func readString(_ what: String) throws -> String {
        try reader.scanner.readString(what)
    }

    /// Reads `true` or `false`.
    package mutating func readBool() throws -> Bool {
        try reader.scanner.readBool()
    }

    /// Reads an integer that fits `Int64`: a number without fraction or
    /// exponent, or a string holding one (`numbersAsStrings`).
    package mutating func readInt64(_ what: String) throws -> Int64 {
        let start = try peekValue(what)
        guard let number = try readNumberText(what) else { throw reader.scanner.unexpected(what) }
        guard let value = JSONScanner.int64(number) else {
            let text = String(decoding: number, as: UTF8.self)
            throw WireFormatError(.invalidValue, offset: start, message: "\(what): expected an integer, found \(text)")
        }
        return value
    }

    /// Reads a finite number, integer or not (or a string holding one).
    package mutating func readDouble(_ what: String) throws -> Double {
        let start = try peekValue(what)
        guard let number = try readNumberText(what) else { throw reader.scanner.unexpected(what) }
        guard let value = JSONScanner.exactDouble(number) ?? Double(String(decoding: number, as: UTF8.self)),
            value.isFinite
        else {
            let text = String(decoding: number, as: UTF8.self)
            throw WireFormatError(.invalidValue, offset: start, message: "\(what): \(text) is not a finite number")
        }
        return value
    }

    private mutating func peekValue(_ what: String) throws(WireFormatError) -> Int {
        _ = try reader.scanner.peek(what)
        return reader.scanner.position
    }

    /// The text of the number (or numeric string) at the cursor, copied; `nil`
    /// for a value that is neither.
    private mutating func readNumberText(_ what: String) throws(WireFormatError) -> UnsafeBufferPointer<UInt8>? {
        let start = reader.scanner.position
        switch reader.scanner.bytes[start] {
        case JSONText.quote:
            let span = try reader.scanner.scanString()
            guard !span.isEscaped else {
                throw WireFormatError(.invalidValue, offset: start, message: "\(what): expected a number in the string")
            }
            let text = UnsafeBufferPointer(rebasing: reader.scanner.bytes[span.start..<span.end])
            // The string must hold a JSON number and nothing else.
            var inner = JSONScanner(UnsafeRawBufferPointer(text))
            guard !text.isEmpty, (try? inner.scanNumber()) != nil, inner.isAtEnd else {
                throw WireFormatError(.invalidValue, offset: start, message: "\(what): expected a number in the string")
            }
            return text
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let number = try reader.scanner.scanNumber()
            return UnsafeBufferPointer(rebasing: reader.scanner.bytes[number.start..<number.end])
        default:
            return nil
        }
    }

    // MARK: - Records

    /// Reads a zone ID dictionary `{"zoneName": …, "ownerRecordName": …}`.
    package mutating func readZoneID(_ what: String = "zoneID") throws -> ZoneID {
        _ = try reader.scanner.peek("a zone ID object")
        let start = reader.scanner.position
        var name: String?
        var owner: String?
        if try reader.scanner.enterObject("a zone ID object") {
            repeat {
                let span = try reader.scanner.memberKey()
                switch reader.scanner.withContents(of: span, WireKey.match) {
                case .zoneName: name = try reader.scanner.readString("zoneName, a string")
                case .ownerRecordName:
                    owner = try reader.scanner.skipNull() ? nil : reader.scanner.readString("ownerRecordName, a string")
                default:
                    try reader.scanner.validate(span)
                    try reader.scanner.skipValue(depth: depth + 1)
                }
            } while try reader.scanner.nextMember()
        }
        guard let name else { throw WireFormatError(.missingKey, offset: start, message: "\(what) has no 'zoneName'") }
        return ZoneID(zoneName: name, ownerRecordName: owner)
    }

    /// Reads one entry of a list of records at the cursor: a record
    /// dictionary, a deleted record's entry, or an error entry (one with
    /// `serverErrorCode`), for which the cursor is left at the entry's start
    /// so that the caller reads it member by member.
    package mutating func readRecordEntry() throws -> WireBodyEntry {
        try readEntry(allowingMissingType: false)
    }

    /// Reads the record dictionary at the cursor; with `allowingMissingType`
    /// a record without `recordType` (as a delete operation sends it) has an
    /// empty type, and with `allowingMissingName` one without `recordName`
    /// (as a create operation may send it) an empty name. An error entry is
    /// an error here.
    package mutating func readRecord(allowingMissingType: Bool = false, allowingMissingName: Bool = false) throws
        -> WireBodyEntry
    {
        let start = try peekValue("a record object")
        reader.allowsMissingRecordName = allowingMissingName
        defer { reader.allowsMissingRecordName = false }
        let entry = try readEntry(allowingMissingType: allowingMissingType)
        if case .failure = entry {
            throw WireFormatError(.invalidValue, offset: start, message: "expected a record, found an error entry")
        }
        return entry
    }

    /// ``readRecord(allowingMissingType:)`` for the record of an `update` or
    /// `forceUpdate` in Cumulus's dialect: a field whose value is `null` is
    /// cleared, not merely absent, and its name goes to `clearedFields`
    /// (once, in the order given). A name also given a value is in both.
    package mutating func readRecord(clearingInto clearedFields: inout [String]) throws -> WireBodyEntry {
        reader.clearedFields = []
        defer { reader.clearedFields = nil }
        let entry = try readRecord()
        clearedFields = reader.clearedFields ?? []
        return entry
    }

    private mutating func readEntry(allowingMissingType: Bool) throws(WireFormatError) -> WireBodyEntry {
        let start = try peekValue("a record object")
        reader.allowsMissingRecordType = allowingMissingType
        reader.sawErrorEntry = false
        defer { reader.allowsMissingRecordType = false }
        var deletion: WireRecordReader.Deletion?
        let record = try reader.readRecord(depth: depth, deletion: &deletion)
        if reader.sawErrorEntry {
            reader.sawErrorEntry = false
            reader.scanner.position = start
            return .failure
        }
        if let deletion { return .deleted(recordName: deletion.recordName, zoneID: deletion.zoneID) }
        return .record(record, hasZoneID: reader.lastRecordHadZoneID)
    }

    /// Reads a field's `{"type": …, "value": …}` object outside a record (a
    /// query's `fieldValue`); without `type`, `fieldTypes` and then the
    /// value's shape decide. `nil` for a `null` value.
    ///
    /// - Parameter adjust: Turns the type `fieldTypes` knows for the field
    ///   into the type an untyped value has here (a filter's comparator may
    ///   take an element of a list field, or a list of a scalar one's).
    package mutating func readFieldValue(
        recordType: String, fieldName: String, adjustingKnownType adjust: ((FieldType) -> FieldType)? = nil
    ) throws -> FieldValue? {
        let known = reader.fieldTypes
        if let adjust, let known { reader.fieldTypes = { known($0, $1).map(adjust) } }
        defer { reader.fieldTypes = known }
        let start = try peekValue("a field value object")
        var context = WireRecordReader.FieldContext(recordStart: start, recordType: recordType)
        do {
            return try reader.readFieldInAnyForm(depth: depth, name: fieldName, context: &context)
        } catch {
            throw WireFormatError(error.code, offset: error.offset, message: "field '\(fieldName)': \(error.message)")
        }
    }
}

/// One entry of a list of records, as ``WireBodyReader`` reads it.
package enum WireBodyEntry {
    /// A record; `hasZoneID` says whether the dictionary named its zone (a
    /// record without one belongs to the zone its request names).
    case record(Record, hasZoneID: Bool)
    /// A deleted record's entry.
    case deleted(recordName: String, zoneID: ZoneID?)
    /// An error entry: the cursor is at its start.
    case failure
}
