import CloudCodable
import CloudProtocol
import Logging
import NIOCore

/// A stored row that the schema says cannot exist: NULL in a column that
/// must hold a value, a value of the wrong type, an unknown enumeration
/// value, text that is not UTF-8, or columns that contradict each other.
///
/// Storage never reads such a row as a default (`0`, `""`): it answers
/// `INTERNAL_ERROR` naming the table and column, and logs the same without
/// the row's values, which may be users' data.
struct ImpossibleRow: Error, Sendable {
    /// The table the row was read from.
    var table: String
    /// The column whose value is impossible.
    var column: String
    /// What is wrong with it, in words, without the value.
    var problem: String

    /// The error the request answers, logged once here.
    func cloudError(logging logger: Logger) -> CloudError {
        logger.error(
            "an impossible row was read",
            metadata: ["table": "\(table)", "column": "\(column)", "problem": "\(problem)"])
        return CloudError(.internalError, reason: "the storage holds an impossible row: \(table).\(column) \(problem)")
    }
}

extension ImpossibleRow {
    /// The record a `records` row holds: a live row has a body in the wire
    /// format, a deleted one none; anything else is impossible.
    static func record(deleted: Bool, body: ByteBuffer?) throws(ImpossibleRow) -> Record? {
        guard case .encoded(let bytes) = try contents(deleted: deleted, body: body) else { return nil }
        do {
            return try WireFormat.decodeRecord(from: bytes)
        } catch {
            throw ImpossibleRow(table: "records", column: "body", problem: "is not a record in the wire format")
        }
    }

    /// A `records` row's body, not decoded: a live row has one, a deleted
    /// one none; anything else is impossible. (Whether the bytes are a
    /// record is checked where they are read or written into an answer.)
    static func contents(deleted: Bool, body: ByteBuffer?) throws(ImpossibleRow) -> StoredChange.Contents {
        switch (deleted, body) {
        case (false, let body?): return .encoded(Array(body.readableBytesView))
        case (true, nil): return .deleted
        case (false, nil): throw ImpossibleRow(table: "records", column: "body", problem: "is NULL in a live record")
        case (true, _?): throw ImpossibleRow(table: "records", column: "body", problem: "is set in a deleted record")
        }
    }
}
