import CloudCodable

/// The size-check workload: a note with a 900 KB body, close to the 1 MB
/// record limit, and the operations whose costs are compared.
///
/// The target is that ``Operation/checkSize`` costs at most 5% of
/// ``Operation/encode`` (model → record): checking the limit must not become
/// a second encoding. A record shares its strings with the model, so encoding
/// a long note costs little, and the check has to be as cheap.
public final class SizeCheckFixture: Sendable {
    /// An operation on the large note.
    public enum Operation: String, CaseIterable, Sendable {
        /// `RecordEncoder.checkSize(of:)` on the note's record.
        case checkSize = "checkSize(of:)"
        /// `WireFormat.encodedSize(ofFields:)`: the exact wire size of the fields.
        case encodedSize = "encodedSize(ofFields:)"
        /// `RecordEncoder.encode(_:)`: model → record (which checks the size itself).
        case encode = "encode model→record"
        /// `RecordEncoder.encode(_:)` then `WireFormat.encode(_:)`: model → wire bytes.
        case modelToWire = "encode model→wire"
    }

    /// The note, with a body of ``Note/largeBodyByteCount`` bytes.
    public let note: Note
    /// The note's record.
    public let record: Record
    /// The size of the record's fields on the wire, as `encodedSize(ofFields:)` counts it.
    public let encodedSize: Int
    /// The size of the whole record on the wire.
    public let wireByteCount: Int

    private let encoder = RecordEncoder()

    /// Makes the note and its record.
    public init() throws {
        note = Note.largeSample()
        record = try encoder.encode(note)
        encodedSize = WireFormat.encodedSize(ofFields: record.fields)
        wireByteCount = try WireFormat.encode(record).count
    }

    /// Runs `operation` once and returns a checksum of its result.
    @inline(never)
    public func run(_ operation: Operation) throws -> Int {
        switch operation {
        case .checkSize:
            try encoder.checkSize(of: record)
            return 1
        case .encodedSize:
            return WireFormat.encodedSize(ofFields: record.fields)
        case .encode:
            return try encoder.encode(note).fields.count
        case .modelToWire:
            return try WireFormat.encode(encoder.encode(note)).count
        }
    }
}
