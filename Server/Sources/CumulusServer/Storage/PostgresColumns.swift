import PostgresNIO

/// The columns of one row of a PostgreSQL table, read by name as the
/// schema declares them: NULL where a value must be, or a value of another
/// type, throws ``ImpossibleRow`` naming the table and column (postgres-nio's
/// own decoding error would carry the value's bytes into logs).
struct PostgresColumns {
    let table: String
    private let row: PostgresRandomAccessRow

    init(_ row: PostgresRow, table: String) {
        self.row = row.makeRandomAccess()
        self.table = table
    }

    /// A `NOT NULL` column.
    func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        guard row.contains(column) else { throw impossible(column, "is missing from the row") }
        do {
            return try row[column].decode(T.self)
        } catch let error as PostgresDecodingError {
            switch error.code {
            case .missingData: throw impossible(column, "is NULL")
            case .typeMismatch: throw impossible(column, "is of type \(error.postgresType), not \(T.self)")
            default: throw impossible(column, "cannot be read as \(T.self)")
            }
        }
    }

    /// A column that may be NULL.
    func optional<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T? {
        guard row.contains(column) else { throw impossible(column, "is missing from the row") }
        guard row[column].bytes != nil else { return nil }
        return try value(column, as: T.self)
    }

    func impossible(_ column: String, _ problem: String) -> ImpossibleRow {
        ImpossibleRow(table: table, column: column, problem: problem)
    }
}
