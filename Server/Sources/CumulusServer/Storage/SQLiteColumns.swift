import CloudCodable
import CloudProtocol
import Foundation
import SQLiteNIO

/// The columns of one row of an SQLite table, read as the schema declares
/// them: an impossible value throws ``ImpossibleRow`` instead of reading
/// as `0` or `""`.
///
/// Text is selected with ``exact(_:)``, as its bytes, and decoded as UTF-8
/// here: sqlite-nio reads a TEXT value with `String(cString:)`, which ends
/// it at the first U+0000, and names must come back byte for byte.
///
/// ```swift
/// let rows = try await connection.query("SELECT \(SQLiteColumns.exact("name")), serial FROM zones")
/// let name = try SQLiteColumns(rows[0], table: "zones").text("name")
/// ```
struct SQLiteColumns {
    let row: SQLiteStoredRow
    let table: String

    init(_ row: SQLiteStoredRow, table: String) {
        self.row = row
        self.table = table
    }

    /// The select-list entry for a text column: its bytes as a BLOB when it
    /// holds TEXT, otherwise the name of what it holds (`'null'`,
    /// `'integer'`, `'blob'`), which ``text(_:)`` reports.
    static func exact(_ column: String) -> String {
        "CASE typeof(\(column)) WHEN 'text' THEN CAST(\(column) AS BLOB) ELSE typeof(\(column)) END AS \(column)"
    }

    /// ``exact(_:)`` for several columns, comma-separated.
    static func exact(_ columns: [String]) -> String {
        columns.map { exact($0) }.joined(separator: ", ")
    }

    /// An `INTEGER NOT NULL` column.
    func integer(_ column: String) throws -> Int64 {
        switch try value(column) {
        case .integer(let value): return Int64(value)
        case .null: throw impossible(column, "is NULL")
        default: throw impossible(column, "is not an INTEGER")
        }
    }

    /// An `INTEGER` column that may be NULL.
    func optionalInteger(_ column: String) throws -> Int64? {
        switch try value(column) {
        case .integer(let value): return Int64(value)
        case .null: return nil
        default: throw impossible(column, "is not an INTEGER")
        }
    }

    /// An `INTEGER NOT NULL` column holding 0 or 1.
    func bool(_ column: String) throws -> Bool {
        switch try integer(column) {
        case 0: return false
        case 1: return true
        default: throw impossible(column, "is neither 0 nor 1")
        }
    }

    /// A `TEXT NOT NULL` column selected with ``exact(_:)``.
    func text(_ column: String) throws -> String {
        guard let text = try optionalText(column) else { throw impossible(column, "is NULL") }
        return text
    }

    /// A `TEXT` column that may be NULL, selected with ``exact(_:)``.
    func optionalText(_ column: String) throws -> String? {
        switch try value(column) {
        case .blob(let bytes):
            guard let text = String(validating: bytes.readableBytesView, as: UTF8.self) else {
                throw impossible(column, "is not UTF-8")
            }
            return text
        case .text("null"):
            return nil
        case .text:
            // `exact(_:)` turned a value that is not TEXT into its type's name.
            throw impossible(column, "is not TEXT")
        default:
            throw impossible(column, "was not selected as its bytes")
        }
    }

    /// A `BLOB` column that may be NULL.
    func optionalBlob(_ column: String) throws -> ByteBuffer? {
        switch try value(column) {
        case .blob(let bytes): return bytes
        case .null: return nil
        default: throw impossible(column, "is not a BLOB")
        }
    }

    func impossible(_ column: String, _ problem: String) -> ImpossibleRow {
        ImpossibleRow(table: table, column: column, problem: problem)
    }

    private func value(_ column: String) throws -> SQLiteData {
        guard let value = row.column(column) else { throw impossible(column, "is missing from the row") }
        return value
    }
}
