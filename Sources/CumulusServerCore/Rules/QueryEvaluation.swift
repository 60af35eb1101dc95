import CloudCodable
import CloudProtocol
import Foundation

/// How `records/query` filters and orders records: the rules every
/// ``CloudDatabase`` implementation answers queries by (the in-memory server
/// and the record server use this type).
///
/// - A filter compares a field with a value of the same type; a record
///   without the field, or whose field has another type, does not match
///   (not even `NOT_EQUALS`, `NOT_IN`, `NOT_BEGINS_WITH` or
///   `NOT_LIST_CONTAINS`).
/// - `LESS_THAN` and the other orderings take STRING, INT64, DOUBLE and
///   TIMESTAMP values; `BEGINS_WITH` and `NOT_BEGINS_WITH` a STRING; `IN`
///   and `NOT_IN` a list, matching a field equal (or equal to none) of its
///   elements; `LIST_CONTAINS` and `NOT_LIST_CONTAINS` a single value,
///   matching a list field of that element type that holds it (or does not).
/// - `CONTAINS_ALL_TOKENS` and `CONTAINS_ANY_TOKENS` take a STRING with at
///   least one word and match a STRING field holding all (or any) of its
///   words. Words are the runs between whitespace and punctuation, compared
///   without regard to case or diacritics: "Crème brûlée!" holds "creme"
///   and "BRULEE".
/// - `LIST_MEMBER_BEGINS_WITH` and `NOT_LIST_MEMBER_BEGINS_WITH` take a
///   STRING and match a STRING_LIST field some element of which starts with
///   it (or none of which does). `LIST_CONTAINS_ANY` and `LIST_CONTAINS_ALL`
///   take a list and match a list field of its type holding at least one
///   (or every) of its elements; every list holds all of an empty list.
/// - `NEAR` takes a LOCATION and a `distance` in metres (finite, not
///   negative) and matches a LOCATION field at most that far from it, on
///   the great circle of a sphere of the Earth's mean radius; a sort key
///   with a `relativeLocation` orders a LOCATION field by its distance from
///   that place, nearest first when ascending.
/// - Any other value is a `BAD_REQUEST`.
/// - The system fields name a record's metadata: `___recordID` (the record
///   name), `___createdBy` and `___modifiedBy` (the user record names) take a
///   REFERENCE (its `recordName` counts) or a STRING; `___createTime` and
///   `___modTime` a TIMESTAMP. A value of another type is a `BAD_REQUEST`.
///   ``value(of:forField:)`` gives the value filters and sorts compare.
/// - Sorting puts records without the sort field (or with a value of another
///   type) after the others, whatever the direction; ties go by record name.
public enum QueryEvaluation {
    /// The system field of the record name.
    public static let recordIDField = "___recordID"
    /// The system field of the creation time.
    public static let createTimeField = "___createTime"
    /// The system field of the last modification time.
    public static let modTimeField = "___modTime"
    /// The system field of the creator's user record name.
    public static let createdByField = "___createdBy"
    /// The system field of the last modifier's user record name.
    public static let modifiedByField = "___modifiedBy"

    /// Throws `BAD_REQUEST` for a query that cannot be answered: no record
    /// type, or a comparator that cannot take its filter's value.
    public static func validate(_ query: RecordQuery) throws {
        guard !query.recordType.isEmpty else { throw CloudError(.badRequest, reason: "the query has no record type") }
        for filter in query.filters {
            let value = comparedValue(filter)
            let valid: Bool
            switch filter.comparator {
            case .equals, .notEquals: valid = true
            case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals: valid = isOrderable(value)
            case .beginsWith, .notBeginsWith:
                if case .string = value { valid = true } else { valid = false }
            case .in, .notIn: valid = value.listCount != nil
            case .listContains, .notListContains: valid = value.listCount == nil
            case .containsAllTokens, .containsAnyTokens:
                if case .string(let text) = value { valid = !tokens(of: text).isEmpty } else { valid = false }
            case .listMemberBeginsWith, .notListMemberBeginsWith:
                if case .string = value { valid = true } else { valid = false }
            case .listContainsAny, .listContainsAll: valid = value.listCount != nil
            case .near:
                guard case .location = value else {
                    valid = false
                    break
                }
                guard let distance = filter.distance, distance.isFinite, distance >= 0 else {
                    throw CloudError(
                        .badRequest,
                        reason:
                            "NEAR on field '\(filter.fieldName)' needs a distance in metres, finite and not negative")
                }
                valid = true
            }
            guard valid else {
                throw CloudError(
                    .badRequest,
                    reason: "\(filter.comparator.rawValue) cannot compare field '\(filter.fieldName)' "
                        + "with a \(value.type.rawValue) value")
            }
            if let systemType = systemFieldType(filter.fieldName) {
                let listComparators: [QueryComparator] = [
                    .listContains, .notListContains, .listMemberBeginsWith, .notListMemberBeginsWith,
                    .listContainsAny, .listContainsAll,
                ]
                guard !listComparators.contains(filter.comparator),
                    (elementType(of: value.type) ?? value.type) == systemType
                else {
                    throw CloudError(
                        .badRequest,
                        reason: "'\(filter.fieldName)' is a \(systemType.rawValue): "
                            + "\(filter.comparator.rawValue) cannot compare it with a \(value.type.rawValue) value")
                }
            }
        }
    }

    /// The value filters and sorts compare for the field named `name`: the
    /// record's field, or for a system field, the record's name, the stamps'
    /// times (TIMESTAMP) or user record names (STRING); `nil` when the record
    /// has no such value.
    public static func value(of record: Record, forField name: String) -> FieldValue? {
        // Field names are identities: matched by their bytes, not by `switch` (String's `==`).
        if name.isExactly(recordIDField) { return .string(record.recordName) }
        if name.isExactly(createTimeField) { return record.metadata?.created.map { .timestamp($0.date) } }
        if name.isExactly(modTimeField) { return record.metadata?.modified.map { .timestamp($0.date) } }
        if name.isExactly(createdByField) { return record.metadata?.created?.userRecordName.map(FieldValue.string) }
        if name.isExactly(modifiedByField) { return record.metadata?.modified?.userRecordName.map(FieldValue.string) }
        return record[name]
    }

    /// Whether `record` passes every filter.
    public static func matches(_ record: Record, _ filters: [QueryFilter]) -> Bool {
        filters.allSatisfy { matches(record, $0) }
    }

    /// Whether `record` passes `filter`.
    public static func matches(_ record: Record, _ filter: QueryFilter) -> Bool {
        guard let field = value(of: record, forField: filter.fieldName) else { return false }
        let value = comparedValue(filter)
        if systemFieldType(filter.fieldName) == .string, case .string(let name) = field,
            let answer = matchesName(name, filter.comparator, value)
        {
            return answer
        }
        switch filter.comparator {
        case .equals: return field == value
        case .notEquals: return field.type == value.type && field != value
        case .lessThan: return compare(field, value).map { $0 < 0 } ?? false
        case .lessThanOrEquals: return compare(field, value).map { $0 <= 0 } ?? false
        case .greaterThan: return compare(field, value).map { $0 > 0 } ?? false
        case .greaterThanOrEquals: return compare(field, value).map { $0 >= 0 } ?? false
        case .beginsWith, .notBeginsWith:
            guard case .string(let text) = field, case .string(let prefix) = value else { return false }
            return text.hasPrefix(prefix) == (filter.comparator == .beginsWith)
        case .in: return elements(of: value)?.contains(field) ?? false
        case .notIn:
            guard let list = elements(of: value), elementType(of: value.type) == field.type else { return false }
            return !list.contains(field)
        case .listContains: return elements(of: field)?.contains(value) ?? false
        case .notListContains:
            guard let list = elements(of: field), elementType(of: field.type) == value.type else { return false }
            return !list.contains(value)
        case .containsAllTokens, .containsAnyTokens:
            guard case .string(let text) = field, case .string(let words) = value else { return false }
            let held = Set(tokens(of: text))
            let wanted = tokens(of: words)
            return filter.comparator == .containsAllTokens
                ? wanted.allSatisfy(held.contains) : wanted.contains(where: held.contains)
        case .listMemberBeginsWith, .notListMemberBeginsWith:
            guard case .stringList(let list) = field, case .string(let prefix) = value else { return false }
            return list.contains { $0.hasPrefix(prefix) } == (filter.comparator == .listMemberBeginsWith)
        case .listContainsAny, .listContainsAll:
            guard field.type == value.type, let held = elements(of: field), let wanted = elements(of: value) else {
                return false
            }
            return filter.comparator == .listContainsAll
                ? wanted.allSatisfy(held.contains) : wanted.contains(where: held.contains)
        case .near:
            guard case .location(let place) = field, case .location(let center) = value, let radius = filter.distance
            else { return false }
            return distance(place, center) <= radius
        }
    }

    /// A comparison of a record or user record name (an identity: compared
    /// by its bytes, so "é" never equals "e\u{301}"); `nil` for a
    /// comparator that does not compare names.
    private static func matchesName(_ name: String, _ comparator: QueryComparator, _ value: FieldValue) -> Bool? {
        func names(_ value: FieldValue) -> [String]? {
            guard case .stringList(let list) = value else { return nil }
            return list
        }
        switch comparator {
        case .equals, .notEquals, .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            guard case .string(let other) = value else { return false }
            let order = compareNames(name, other)
            switch comparator {
            case .equals: return order == 0
            case .notEquals: return order != 0
            case .lessThan: return order < 0
            case .lessThanOrEquals: return order <= 0
            case .greaterThan: return order > 0
            default: return order >= 0
            }
        case .beginsWith, .notBeginsWith:
            guard case .string(let prefix) = value else { return false }
            return name.utf8.starts(with: prefix.utf8) == (comparator == .beginsWith)
        case .in, .notIn:
            guard let list = names(value) else { return false }
            return list.contains { $0.isExactly(name) } == (comparator == .in)
        default:
            return nil
        }
    }

    /// The order of two names by their bytes: -1, 0 or 1.
    private static func compareNames(_ lhs: String, _ rhs: String) -> Int {
        if lhs.isExactly(rhs) { return 0 }
        return lhs.utf8.lexicographicallyPrecedes(rhs.utf8) ? -1 : 1
    }

    /// The great-circle distance between two locations, in metres, on a
    /// sphere of the Earth's mean radius (haversine: exact near 0 and π).
    public static func distance(_ lhs: Location, _ rhs: Location) -> Double {
        let radius = 6_371_008.8
        let toRadians = Double.pi / 180
        let dLatitude = (rhs.latitude - lhs.latitude) * toRadians
        let dLongitude = (rhs.longitude - lhs.longitude) * toRadians
        let a =
            sin(dLatitude / 2) * sin(dLatitude / 2)
            + cos(lhs.latitude * toRadians) * cos(rhs.latitude * toRadians) * sin(dLongitude / 2)
            * sin(dLongitude / 2)
        return 2 * radius * asin(min(1, a.squareRoot()))
    }

    /// Whether `lhs` comes before `rhs` in the order of `sort`.
    public static func areInIncreasingOrder(_ lhs: Record, _ rhs: Record, by sort: [QuerySort]) -> Bool {
        for key in sort {
            let left = sortValue(of: lhs, key)
            let right = sortValue(of: rhs, key)
            if systemFieldType(key.fieldName) == .string, case .string(let l)? = left, case .string(let r)? = right {
                let order = compareNames(l, r)
                if order != 0 { return key.ascending ? order < 0 : order > 0 }
                continue
            }
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
        return ExactName(lhs.recordName) < ExactName(rhs.recordName)
    }

    /// What a sort key orders `record` by: its field's value, or, for a key
    /// with a relative location, the field's distance from it in metres
    /// (`nil`, sorting last, for a field that is not a location).
    private static func sortValue(of record: Record, _ key: QuerySort) -> FieldValue? {
        let field = value(of: record, forField: key.fieldName)
        guard let center = key.relativeLocation else { return field }
        guard case .location(let place) = field else { return nil }
        return .double(distance(place, center))
    }

    /// The continuation marker of a page that starts at `offset`.
    public static func marker(forOffset offset: Int) -> String {
        "q\(offset)"
    }

    /// The offset a marker of ``marker(forOffset:)`` stands for, or `nil` for a bad marker.
    public static func offset(fromMarker marker: String) -> Int? {
        guard marker.first == "q", let offset = Int(marker.dropFirst()), offset >= 0 else { return nil }
        return offset
    }

    // MARK: Values

    /// The type of a system field's values (what a filter on it compares),
    /// or `nil` for another field.
    public static func systemFieldType(_ name: String) -> FieldType? {
        if [recordIDField, createdByField, modifiedByField].contains(where: name.isExactly) { return .string }
        if [createTimeField, modTimeField].contains(where: name.isExactly) { return .timestamp }
        return nil
    }

    /// The filter's value as the field's values are: a record name given as
    /// a REFERENCE (or a list of them) becomes its STRING.
    private static func comparedValue(_ filter: QueryFilter) -> FieldValue {
        guard systemFieldType(filter.fieldName) == .string else { return filter.fieldValue }
        switch filter.fieldValue {
        case .reference(let reference): return .string(reference.recordName)
        case .referenceList(let list): return .stringList(list.map(\.recordName))
        default: return filter.fieldValue
        }
    }

    /// The words of a string for the token comparators: the runs between
    /// whitespace and punctuation, folded to ignore case and diacritics.
    private static func tokens(of text: String) -> [String] {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
            .components(separatedBy: tokenSeparators)
            .filter { !$0.isEmpty }
    }

    private static let tokenSeparators = CharacterSet.whitespacesAndNewlines.union(.punctuationCharacters)

    /// The type of a list type's elements, or `nil` for a single-value type.
    private static func elementType(of type: FieldType) -> FieldType? {
        switch type {
        case .stringList: .string
        case .int64List: .int64
        case .doubleList: .double
        case .timestampList: .timestamp
        case .bytesList: .bytes
        case .referenceList: .reference
        case .assetList: .asset
        case .locationList: .location
        default: nil
        }
    }

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
