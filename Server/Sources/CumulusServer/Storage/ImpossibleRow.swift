import Cumulus
import Logging

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
