import CloudCodable

/// A comparison in a query's filter (the wire's `comparator`).
///
/// `QueryEvaluation` (in `CumulusServerCore`) gives each its exact meaning. `NEAR` takes its
/// radius from ``QueryFilter/distance``.
public enum QueryComparator: String, Sendable, Hashable, Codable, CaseIterable {
    /// The field equals the value.
    case equals = "EQUALS"
    /// The field does not equal the value.
    case notEquals = "NOT_EQUALS"
    /// The field is less than the value.
    case lessThan = "LESS_THAN"
    /// The field is at most the value.
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    /// The field is greater than the value.
    case greaterThan = "GREATER_THAN"
    /// The field is at least the value.
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    /// The string field starts with the value.
    case beginsWith = "BEGINS_WITH"
    /// The field equals one of the list value's elements.
    case `in` = "IN"
    /// The list field contains the value.
    case listContains = "LIST_CONTAINS"
    /// The field equals none of the list value's elements.
    case notIn = "NOT_IN"
    /// The string field does not start with the value.
    case notBeginsWith = "NOT_BEGINS_WITH"
    /// The list field does not contain the value.
    case notListContains = "NOT_LIST_CONTAINS"
    /// The string field holds every word of the value.
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    /// The string field holds at least one word of the value.
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"
    /// Some element of the string list field starts with the value.
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    /// No element of the string list field starts with the value.
    case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"
    /// The list field holds at least one of the list value's elements.
    case listContainsAny = "LIST_CONTAINS_ANY"
    /// The list field holds every element of the list value.
    case listContainsAll = "LIST_CONTAINS_ALL"
    /// The location field lies within ``QueryFilter/distance`` metres of the location value.
    case near = "NEAR"
}

/// One condition of a query: `fieldName comparator fieldValue`.
public struct QueryFilter: Sendable, Hashable {
    /// The field compared.
    public var fieldName: String
    /// How it is compared.
    public var comparator: QueryComparator
    /// What it is compared with.
    public var fieldValue: FieldValue
    /// The radius of a `NEAR` filter, in metres (the wire's `distance`);
    /// `nil` for every other comparator.
    public var distance: Double?

    /// Creates a filter.
    public init(_ fieldName: String, _ comparator: QueryComparator, _ fieldValue: FieldValue, distance: Double? = nil) {
        self.fieldName = fieldName
        self.comparator = comparator
        self.fieldValue = fieldValue
        self.distance = distance
    }

    /// A `NEAR` filter: the location field lies within `meters` of `location`.
    ///
    /// ```swift
    /// let nearby = QueryFilter.near("place", Location(latitude: 48.8566, longitude: 2.3522), within: 5_000)
    /// ```
    public static func near(_ fieldName: String, _ location: Location, within meters: Double) -> QueryFilter {
        QueryFilter(fieldName, .near, .location(location), distance: meters)
    }
}

/// One key of a query's order.
public struct QuerySort: Sendable, Hashable {
    /// The field to order by.
    public var fieldName: String
    /// Whether smaller values come first.
    public var ascending: Bool
    /// For a location field, the place whose distance orders the records
    /// (the wire's `relativeLocation`): nearest first when ascending.
    public var relativeLocation: Location?

    /// Creates a sort key.
    public init(_ fieldName: String, ascending: Bool = true) {
        self.fieldName = fieldName
        self.ascending = ascending
    }

    /// Orders records by the distance of their location field from `location`.
    public init(_ fieldName: String, distanceFrom location: Location, ascending: Bool = true) {
        self.fieldName = fieldName
        self.ascending = ascending
        relativeLocation = location
    }
}

/// A `records/query` request: records of one type that pass every filter, in order.
public struct RecordQuery: Sendable, Hashable {
    /// The record type to search.
    public var recordType: String
    /// Conditions that every result meets.
    public var filters: [QueryFilter]
    /// The order of the results; by record name when empty.
    public var sort: [QuerySort]

    /// Creates a query.
    public init(recordType: String, filters: [QueryFilter] = [], sort: [QuerySort] = []) {
        self.recordType = recordType
        self.filters = filters
        self.sort = sort
    }
}

extension QueryComparator {
    /// The type a filter's value has when the field's is `fieldType`: an
    /// element for `LIST_CONTAINS`, `NOT_LIST_CONTAINS` and the list member
    /// comparators, a list for `IN` and `NOT_IN`, the field's own type
    /// otherwise. It types a value sent without `type`.
    public func valueType(forField fieldType: FieldType) -> FieldType {
        let suffix = "_LIST"
        switch self {
        case .listContains, .notListContains, .listMemberBeginsWith, .notListMemberBeginsWith:
            guard fieldType.isList else { return fieldType }
            return FieldType(rawValue: String(fieldType.rawValue.dropLast(suffix.count))) ?? fieldType
        case .in, .notIn:
            return fieldType.isList ? fieldType : FieldType(rawValue: fieldType.rawValue + suffix) ?? fieldType
        default:
            return fieldType
        }
    }
}
