import Cumulus
import Foundation

/// How `records/query` filters and orders records: the rules of
/// `InMemoryCloudServer`, ported so that both servers answer alike.
///
/// - A filter compares a field with a value of the same type; a record
///   without the field, or whose field has another type, does not match
///   (not even `NOT_EQUALS`).
/// - `LESS_THAN` and the other orderings take STRING, INT64, DOUBLE and
///   TIMESTAMP values; `BEGINS_WITH` a STRING; `IN` a list, matching a field
///   equal to one of its elements; `LIST_CONTAINS` a single value, matching a
///   list field that holds it. Any other value is a `BAD_REQUEST`.
/// - Sorting puts records without the sort field (or with a value of another
///   type) after the others, whatever the direction; ties go by record name.
enum QueryEvaluation {
    static func validate(_ query: RecordQuery) throws {
        guard !query.recordType.isEmpty else { throw CloudError(.badRequest, reason: "the query has no record type") }
        for filter in query.filters {
            let value = filter.fieldValue
            let valid: Bool
            switch filter.comparator {
            case .equals, .notEquals: valid = true
            case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals: valid = isOrderable(value)
            case .beginsWith:
                if case .string = value { valid = true } else { valid = false }
            case .in: valid = value.listCount != nil
            case .listContains: valid = value.listCount == nil
            }
            guard valid else {
                throw CloudError(
                    .badRequest,
                    reason: "\(filter.comparator.rawValue) cannot compare field '\(filter.fieldName)' "
                        + "with a \(value.type.rawValue) value")
            }
        }
    }

    static func matches(_ record: Record, _ filters: [QueryFilter]) -> Bool {
        filters.allSatisfy { matches(record, $0) }
    }

    static func matches(_ record: Record, _ filter: QueryFilter) -> Bool {
        guard let field = record[filter.fieldName] else { return false }
        let value = filter.fieldValue
        switch filter.comparator {
        case .equals: return field == value
        case .notEquals: return field.type == value.type && field != value
        case .lessThan: return compare(field, value).map { $0 < 0 } ?? false
        case .lessThanOrEquals: return compare(field, value).map { $0 <= 0 } ?? false
        case .greaterThan: return compare(field, value).map { $0 > 0 } ?? false
        case .greaterThanOrEquals: return compare(field, value).map { $0 >= 0 } ?? false
        case .beginsWith:
            guard case .string(let text) = field, case .string(let prefix) = value else { return false }
            return text.hasPrefix(prefix)
        case .in: return elements(of: value)?.contains(field) ?? false
        case .listContains: return elements(of: field)?.contains(value) ?? false
        }
    }

    static func areInIncreasingOrder(_ lhs: Record, _ rhs: Record, by sort: [QuerySort]) -> Bool {
        for key in sort {
            let left = lhs[key.fieldName]
            let right = rhs[key.fieldName]
            switch (left.flatMap { l in right.flatMap { compare(l, $0) } }) {
            case let order? where order != 0:
                return key.ascending ? order < 0 : order > 0
            case .some:
                continue
            case nil:
                // Comparable values first; then by type, so that the order is total.
                let leftRank = left.map { isOrderable($0) ? 0 : 1 } ?? 2
                let rightRank = right.map { isOrderable($0) ? 0 : 1 } ?? 2
                if leftRank != rightRank { return leftRank < rightRank }
                let leftType = left?.type.rawValue ?? ""
                let rightType = right?.type.rawValue ?? ""
                if leftType != rightType { return leftType < rightType }
            }
        }
        return lhs.recordName < rhs.recordName
    }

    /// The continuation marker of a page that starts at `offset`.
    static func marker(forOffset offset: Int) -> String {
        "q\(offset)"
    }

    static func offset(fromMarker marker: String) -> Int? {
        guard marker.first == "q", let offset = Int(marker.dropFirst()), offset >= 0 else { return nil }
        return offset
    }

    // MARK: Values

    private static func isOrderable(_ value: FieldValue) -> Bool {
        switch value {
        case .string, .int64, .double, .timestamp: true
        default: false
        }
    }

    /// -1, 0 or 1 for two orderable values of the same type; `nil` otherwise.
    private static func compare(_ lhs: FieldValue, _ rhs: FieldValue) -> Int? {
        switch (lhs, rhs) {
        case (.string(let l), .string(let r)): return l == r ? 0 : (l < r ? -1 : 1)
        case (.int64(let l), .int64(let r)): return l == r ? 0 : (l < r ? -1 : 1)
        case (.double(let l), .double(let r)):
            // A total order, NaN included, so that sorting stays consistent.
            if l.isTotallyOrdered(belowOrEqualTo: r) { return r.isTotallyOrdered(belowOrEqualTo: l) ? 0 : -1 }
            return 1
        case (.timestamp(let l), .timestamp(let r)): return l == r ? 0 : (l < r ? -1 : 1)
        default: return nil
        }
    }

    /// The elements of a list value, each as a single value.
    private static func elements(of value: FieldValue) -> [FieldValue]? {
        switch value {
        case .stringList(let list): list.map(FieldValue.string)
        case .int64List(let list): list.map(FieldValue.int64)
        case .doubleList(let list): list.map(FieldValue.double)
        case .timestampList(let list): list.map(FieldValue.timestamp)
        case .bytesList(let list): list.map(FieldValue.bytes)
        case .referenceList(let list): list.map(FieldValue.reference)
        case .assetList(let list): list.map(FieldValue.asset)
        case .locationList(let list): list.map(FieldValue.location)
        default: nil
        }
    }
}
