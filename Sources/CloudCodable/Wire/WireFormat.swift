import Foundation

/// The JSON wire form of records: the record dictionaries of CloudKit Web
/// Services, written and read directly as bytes.
///
/// ```swift
/// let bytes = try WireFormat.encode(record)
/// let same = try WireFormat.decodeRecord(from: bytes)   // same == record
/// ```
///
/// The writer (``JSONWriter/writeRecord(_:)``) writes the form described
/// there. The reader accepts what CloudKit and other clients send: keys in
/// any order, unknown keys (skipped), whitespace, `value` before `type`,
/// integers as strings (`numbersAsStrings`), and entries of deleted records
/// (`decodeRecordEntry(from:)`). It is strict about JSON itself
/// and reports every problem as a ``WireFormatError`` with the byte offset
/// and what was being read.
public enum WireFormat {
    // MARK: - Writing

    /// The wire form of `record`, as UTF-8 JSON bytes.
    ///
    /// - Throws: `.invalidValue` for a value JSON cannot hold (see
    ///   ``JSONWriter/writeRecord(_:)``).
    public static func encode(_ record: Record) throws -> [UInt8] {
        // Room for the dictionary around the fields and for the fields: their
        // exact size when they are canonical wire text, else a share of the
        // bound (which counts every string byte as a six-byte escape); the
        // buffer grows if that is not enough.
        let bound = WireFormat.maximumEncodedSize(ofFields: record.fields)
        let isExact = record.fields.wire?.isCanonical == true
        var writer = JSONWriter(capacity: 320 + (isExact ? bound : min(bound, 4096 + bound / 4)))
        try writer.writeRecordTyped(record)
        return writer.bytes
    }

    // MARK: - Reading

    /// Reads a document that holds one record dictionary.
    ///
    /// A record needs `recordName` and `recordType`; a missing `zoneID` means
    /// ``ZoneID/defaultZone``; ``Record/metadata`` is set when (and only when)
    /// `recordChangeTag` is present, with `created` and `modified` and the
    /// record's zone. A field whose value is `null` is left out. A field
    /// without `type` takes the type its value unambiguously has (a string,
    /// an integer, a number with a fraction or exponent, a location,
    /// reference or asset dictionary by its keys, or a non-empty list of one
    /// of those); otherwise it is an `.unknownFieldType` error. A timestamp
    /// with a fraction is rounded to the nearest millisecond.
    ///
    /// - Throws: ``WireFormatError``; an entry of a deleted record is an
    ///   `.invalidValue` error here (use `decodeRecordEntry(from:)`).
    public static func decodeRecord(from bytes: [UInt8]) throws -> Record {
        try bytes.withUnsafeBytes { buffer in try readRecord(buffer) }
    }

    /// Reads a document that holds one record dictionary; see ``decodeRecord(from:)``.
    public static func decodeRecord(from data: Data) throws -> Record {
        try data.withUnsafeBytes { buffer in try readRecord(buffer) }
    }

    /// Reads a document that holds one record dictionary; see ``decodeRecord(from:)``.
    public static func decodeRecord(from bytes: UnsafeRawBufferPointer) throws -> Record {
        try readRecord(bytes)
    }

    // Public entry points throw untyped errors (always `WireFormatError`):
    // Swift 6.3's optimiser crashes compiling some client code that calls
    // typed-throws functions across modules. The readers inside stay typed.
    static func readRecord(_ bytes: UnsafeRawBufferPointer) throws(WireFormatError) -> Record {
        var reader = WireRecordReader(bytes)
        return try reader.readRecordDocument()
    }

    static func readRecordEntry(_ bytes: UnsafeRawBufferPointer) throws(WireFormatError) -> WireRecordEntry {
        var reader = WireRecordReader(bytes)
        return try reader.readEntryDocument()
    }

    /// Reads a document that holds one record dictionary or the entry of a
    /// deleted record (`{"recordName": …, "deleted": true, …}`, as
    /// `changes/zone` answers).
    public static func decodeRecordEntry(from bytes: [UInt8]) throws -> WireRecordEntry {
        try bytes.withUnsafeBytes { buffer in try readRecordEntry(buffer) }
    }

    /// Reads a record dictionary or a deleted record's entry; see
    /// ``decodeRecordEntry(from:)``.
    public static func decodeRecordEntry(from data: Data) throws -> WireRecordEntry {
        try data.withUnsafeBytes { buffer in try readRecordEntry(buffer) }
    }

    /// Reads a record dictionary or a deleted record's entry; see
    /// ``decodeRecordEntry(from:)``.
    public static func decodeRecordEntry(from bytes: UnsafeRawBufferPointer) throws -> WireRecordEntry {
        try readRecordEntry(bytes)
    }

    /// Whether `bytes` are one JSON object and nothing else, checked as
    /// strictly as the reader checks, without building it: a stored record
    /// is written into an answer as it is only after this holds, so a
    /// damaged row can never change the shape of the answer around it.
    package static func isOneObject(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var scanner = JSONScanner(bytes)
        scanner.skipWhitespace()
        guard !scanner.isAtEnd, scanner.bytes[scanner.position] == UInt8(ascii: "{") else { return false }
        do {
            try scanner.skipValue(depth: 0)
        } catch {
            return false
        }
        scanner.skipWhitespace()
        return scanner.isAtEnd
    }
}

/// One entry of a list of records as the server returns it: a record, or
/// the name of a record that was deleted.
public enum WireRecordEntry: Sendable, Hashable {
    /// A record.
    case record(Record)
    /// A deleted record: `{"recordName": …, "deleted": true}`, with the zone
    /// when the entry names one.
    case deleted(recordName: String, zoneID: ZoneID?)
}
