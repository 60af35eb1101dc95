import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation

/// The query form's fields as the operator typed them, and the query they make.
struct ConsoleQueryForm {
    /// One field comparison as typed.
    struct Comparison {
        var field: String
        var comparator: String
        var value: String
        /// A type the operator chose, or empty for the field's schema type.
        var valueType: String
    }

    /// The types a value may be typed as instead of the field's schema type.
    static let valueTypes: [FieldType] = [.string, .int64, .double, .timestamp]

    var recordType: String
    var prefix: String
    var comparisons: [Comparison]
    var sort: String
    var descending: Bool
    var marker: String?

    init(_ query: [String: String]) {
        recordType = query["recordType"] ?? ""
        prefix = query["prefix"] ?? ""
        comparisons = (1...ConsoleRoutes.queryFilterCount).map { index in
            Comparison(
                field: query["field\(index)"] ?? "", comparator: query["comparator\(index)"] ?? "",
                value: query["value\(index)"] ?? "", valueType: query["valueType\(index)"] ?? "")
        }
        sort = query["sort"] ?? ""
        descending = query["order"] == "descending"
        marker = query["marker"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The form's fields as link parameters, to carry to the next page.
    var parameters: [(String, String)] {
        var parameters = [("recordType", recordType), ("prefix", prefix)]
        for (offset, comparison) in comparisons.enumerated() {
            let index = offset + 1
            parameters += [
                ("field\(index)", comparison.field), ("comparator\(index)", comparison.comparator),
                ("value\(index)", comparison.value), ("valueType\(index)", comparison.valueType),
            ]
        }
        return parameters + [("sort", sort), ("order", descending ? "descending" : "ascending")]
    }

    /// The template's values that show the form as it was filled in.
    var values: [String: Any] {
        let filters = comparisons.enumerated().map { offset, comparison -> [String: Any] in
            let chosen = comparison.comparator.isEmpty ? QueryComparator.equals.rawValue : comparison.comparator
            let types =
                [["name": "", "label": "schema type", "selected": comparison.valueType.isEmpty]]
                + Self.valueTypes.map { type -> [String: Any] in
                    ["name": type.rawValue, "label": type.rawValue, "selected": type.rawValue == comparison.valueType]
                }
            return [
                "index": offset + 1, "field": comparison.field, "value": comparison.value, "valueTypes": types,
                "comparators": QueryComparator.allCases.map {
                    ["name": $0.rawValue, "selected": $0.rawValue == chosen]
                },
            ]
        }
        return [
            "recordType": recordType, "prefix": prefix, "filters": filters, "sort": sort, "descending": descending,
        ]
    }

    /// The query the form asks: the name prefix as the protocol's
    /// `___recordID BEGINS_WITH` filter, then each comparison with a field,
    /// its value typed as `types` gives the field (or as chosen).
    ///
    /// - Throws: ``ConsoleFailure`` (`400`) naming a comparator or a value that is not one.
    func query(types: FieldTypeLookup) throws -> RecordQuery {
        var filters: [QueryFilter] = []
        if !prefix.isEmpty {
            filters.append(QueryFilter(QueryEvaluation.recordIDField, .beginsWith, .string(prefix)))
        }
        for comparison in comparisons where !comparison.field.isEmpty {
            let name = comparison.comparator.isEmpty ? QueryComparator.equals.rawValue : comparison.comparator
            guard let comparator = QueryComparator(rawValue: name) else {
                throw ConsoleFailure(.badRequest, "\(name) is not a comparator of records/query.")
            }
            let fieldType: FieldType
            if comparison.valueType.isEmpty {
                fieldType =
                    QueryEvaluation.systemFieldType(comparison.field)
                    ?? types(recordType, comparison.field) ?? .string
            } else {
                guard let chosen = FieldType(rawValue: comparison.valueType), Self.valueTypes.contains(chosen) else {
                    throw ConsoleFailure(
                        .badRequest, "\(comparison.valueType) is not a type the console types values as.")
                }
                fieldType = chosen
            }
            let type = comparator.valueType(forField: fieldType)
            guard let value = Self.value(comparison.value, as: type) else {
                throw ConsoleFailure(
                    .badRequest, "'\(comparison.value)' is not a \(type.rawValue) value for field \(comparison.field).")
            }
            filters.append(QueryFilter(comparison.field, comparator, value))
        }
        let sortKeys = sort.isEmpty ? [] : [QuerySort(sort, ascending: !descending)]
        return RecordQuery(recordType: recordType, filters: filters, sort: sortKeys)
    }

    /// `text` as a value of `type`: a list is its elements separated by
    /// commas; a timestamp is ISO 8601 or milliseconds since 1970; `nil`
    /// for text that is not one, or a type the console does not type.
    static func value(_ text: String, as type: FieldType) -> FieldValue? {
        if type.isList {
            let elements = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            switch type {
            case .stringList: return .stringList(elements.map { $0.trimmingCharacters(in: .whitespaces) })
            case .int64List: return all(elements, as: .int64).map { .int64List($0.compactMap(\.int64)) }
            case .doubleList: return all(elements, as: .double).map { .doubleList($0.compactMap(\.double)) }
            case .timestampList: return all(elements, as: .timestamp).map { .timestampList($0.compactMap(\.timestamp)) }
            case .referenceList:
                return .referenceList(elements.map { Reference(recordName: $0.trimmingCharacters(in: .whitespaces)) })
            default: return nil
            }
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        switch type {
        case .string: return .string(text)
        case .int64: return Int64(trimmed).map(FieldValue.int64)
        case .double:
            guard let number = Double(trimmed), number.isFinite else { return nil }
            return .double(number)
        case .timestamp:
            if let milliseconds = Int64(trimmed) {
                return .timestamp(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
            }
            let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
            guard let date = (try? withFraction.parse(trimmed)) ?? (try? Date.ISO8601FormatStyle().parse(trimmed))
            else { return nil }
            return .timestamp(date)
        case .reference: return .reference(Reference(recordName: trimmed))
        default: return nil
        }
    }

    /// Each element as a value of `type`, or `nil` when one is not.
    private static func all(_ elements: [String], as type: FieldType) -> [FieldValue]? {
        var values: [FieldValue] = []
        for element in elements {
            guard let value = value(element, as: type) else { return nil }
            values.append(value)
        }
        return values
    }
}

extension FieldValue {
    fileprivate var int64: Int64? {
        if case .int64(let number) = self { number } else { nil }
    }

    fileprivate var double: Double? {
        if case .double(let number) = self { number } else { nil }
    }

    fileprivate var timestamp: Date? {
        if case .timestamp(let date) = self { date } else { nil }
    }
}
